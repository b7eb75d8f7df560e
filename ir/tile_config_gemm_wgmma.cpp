// The wgmma schedule's tile rules (sm_90a). A block is one producer warpgroup, whose
// first thread issues the copy engine's (TMA) loads of A and B tiles into `stages`
// shared-memory stages, and warps_m x warps_n consumer warpgroups: warps_m of them
// split a tile along M, each multiplying a (bm / warps_m) x bn part with wgmma
// m64nNk16 products (k32 for fp8) straight from shared memory; warps_n = 2 sets of
// them take the block's tiles in turns (ping-pong), so that one's epilogue runs while
// the other multiplies. Blocks are persistent: one an SM, each walking output tiles.
//
// Rules: a consumer's part is one or two m64 rows of wgmma products (64 or 128 rows)
// and holds at most 64 x 256 fp32 accumulators (128 registers a thread, what the
// register file leaves after the producer gives its registers back); bn is a multiple
// of 64 (tiles stored N-contiguous load as 64-column boxes) up to 256 (the widest
// wgmma); bk is 128 bytes of K (one 128-byte swizzle row). split_k > 1 cuts K into
// slices, a unit of work each, for products whose tiles leave SMs idle; the last unit
// of a tile sums the slices' fp32 partials in slice order. cluster = 2 pairs blocks on
// two tiles one above the other: each loads half of the B tile they share and
// multicasts it to both, so B crosses from L2 once a pair (a third less traffic at
// 128 x 256); the pairs need an even count of tile rows, one consumer set a block and
// no K split. Measured on the H200 level with single blocks (the product is not bound by
// L2; bench/NOTES.md), so the heuristic leaves them to the tuner. handoff = 1 gives
// the epilogue to the producer warpgroup's three idle warps, through a 16-bit copy of
// the tile in shared memory; that copy takes a stage's room (128 x 256 tiles keep three
// stages), and on the H200 the lost stage cost the 4096^3 product more than the
// overlapped epilogue saved (bench/NOTES.md): a tuning candidate, not the default.
#include <fmt/format.h>

#include <optional>

#include "ir/error.h"
#include "ir/kernel.h"
#include "ir/tile_config.h"

namespace kiln::ir {

namespace {

constexpr int kWarpgroup = 128;
constexpr int kMaxAccumulators = 64 * 256;  // of one consumer warpgroup
constexpr int64_t kMaxPartials = int64_t{1} << 24;  // split-K's fp32 partials: 64 MiB

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

int64_t tiles_of(const Kernel& k, int bm, int bn) {
  return ceil_div(k.gemm.m, bm) * ceil_div(k.gemm.n, bn) * gemm_batch_count(k.gemm);
}

// K slices worth trying where the tiles leave SMs idle: powers of two up to about a
// unit an SM, each slice keeping 16 or more K steps.
std::vector<int> wgmma_splits(const Kernel& k, int bm, int bn) {
  std::vector<int> splits{1};
  const int64_t tiles = tiles_of(k, bm, bn), steps = ceil_div(k.gemm.k, 128 / gemm_tile_element_bytes(k));
  for (int s = 2; s <= 16 && tiles * s <= kTargetSMs && steps / s >= 16; s *= 2) splits.push_back(s);
  return splits;
}

}  // namespace

bool gemm_wgmma_applies(const Kernel& k) {
  auto loads = [&](bool a) { return gemm_operand_tma(k, a) || gemm_operand_stageable(k, a); };
  return target_sm() >= 90 && target_arch_specific() && loads(true) && loads(false);
}

int wgmma_threads(const TileConfig& c) { return kWarpgroup * (c.warps_m * c.warps_n + 1); }

int64_t wgmma_stage_bytes(const Kernel& k, const TileConfig& c) {
  return (int64_t{c.bm} + c.bn) * c.bk * gemm_tile_element_bytes(k);
}

int64_t wgmma_strip_bytes(const TileConfig& c) {
  if (c.split_k > 1 || c.handoff) return 0;
  return int64_t{c.warps_m} * c.warps_n * 4 * 16 * kWgmmaStripStride * 4;  // 4 warps a consumer, 16 rows each
}

std::optional<DType> wgmma_handoff_dtype(const Kernel& k) {
  std::optional<DType> t;
  for (const ScalarOp& op : k.body) {
    if (op.kind != ScalarKind::Acc) continue;
    if ((op.dtype != DType::f16 && op.dtype != DType::bf16) || (t && *t != op.dtype)) return std::nullopt;
    t = op.dtype;
  }
  return t;
}

int64_t wgmma_handoff_row_bytes(const TileConfig& c) { return int64_t{c.bn} * 2 + kWgmmaHandoffPad; }

int64_t wgmma_shared_bytes(const Kernel& k, const TileConfig& c) {
  // The stages, two mbarriers a stage, the epilogue's strips, and room to align the
  // stages to 1024 bytes (the 128-byte swizzle repeats every 8 rows of 128 bytes); with
  // the hand-off, its two mbarriers and the 16-bit tile instead of the strips.
  const int64_t handoff = c.handoff ? 16 + c.bm * wgmma_handoff_row_bytes(c) : 0;
  return c.stages * wgmma_stage_bytes(k, c) + 16 * c.stages + wgmma_strip_bytes(c) + handoff + 1024;
}

void validate_gemm_wgmma(const Kernel& k, const TileConfig& c) {
  auto fail = [&](const std::string& rule) {
    throw Error(fmt::format("kernel @{}: tile config {}: {}", k.name, c.str(), rule));
  };
  if (target_sm() < 90 || !target_arch_specific())
    fail(fmt::format("schedule wgmma needs sm_90a; the target is sm_{}{}", target_sm(),
                     target_arch_specific() ? "a" : ""));
  for (bool a : {true, false})
    if (!gemm_operand_tma(k, a) && !gemm_operand_stageable(k, a))
      fail(fmt::format("operand {} cannot load through TMA (f16 or bf16 without a prologue, or both operands "
                       "widened fp8 stored K-contiguous; row and batch strides multiples of 16 bytes and at most 3 "
                       "batch dims it does not broadcast over; or a single matrix that a padded copy can stage)",
                       a ? "A" : "B"));
  if (c.warps_m < 1 || c.warps_n < 1 || c.warps_m * c.warps_n > 2)
    fail("schedule wgmma takes one or two consumer warpgroups: warps_m (splitting a tile along M) x warps_n (taking "
         "tiles in turns) of 1 x 1, 2 x 1 or 1 x 2");
  const int rows = c.bm / c.warps_m;
  if (c.bm % c.warps_m != 0 || (rows != 64 && rows != 128))
    fail(fmt::format("a consumer's part of bm ({} rows) must be 64 or 128", c.bm / c.warps_m));
  if (c.bn % 64 != 0 || c.bn < 64 || c.bn > 256) fail("bn must be 64, 128, 192 or 256");
  if (rows * c.bn > kMaxAccumulators)
    fail(fmt::format("a consumer's part {} x {} holds more than 64 x 256 accumulators", rows, c.bn));
  if (c.bk * gemm_tile_element_bytes(k) != 128) fail("bk must be 128 bytes of K (64 f16 or bf16, 128 fp8)");
  if (c.stages < 2 || c.stages > 8) fail("stages must be 2 to 8");
  if (c.split_k < 1) fail("split_k must be 1 or more");
  const int cluster = std::max(1, c.cluster);
  if (c.cluster < 0 || cluster > 2)
    fail("cluster must be 1 or 2 blocks (two tiles one above the other, sharing the loads of their B tile)");
  if (cluster == 2) {
    if (c.warps_n != 1) fail("consumers taking tiles in turns (warps_n = 2) do not run in clusters");
    if (c.split_k > 1) fail("the blocks of a cluster do not split K");
    if (ceil_div(k.gemm.m, c.bm) % 2 != 0)
      fail(fmt::format("a cluster of 2 takes tile rows in pairs, and M = {} makes {} tile rows of {}", k.gemm.m,
                       ceil_div(k.gemm.m, c.bm), c.bm));
    if (!gemm_layout(k, false).k_contiguous && c.bn / 2 % 64 != 0)
      fail(fmt::format("B is stored N-contiguous, in boxes of 64 columns, so each block's half of bn = {} must be a "
                       "multiple of 64",
                       c.bn));
  }
  if (c.handoff < 0 || c.handoff > 1) fail("handoff must be 0 or 1");
  if (c.handoff) {
    if (c.warps_n != 1 || c.split_k > 1 || cluster > 1)
      fail("the hand-off takes one tile at a time from the consumers (warps_n = 1), without a K split or a cluster");
    if (!wgmma_handoff_dtype(k))
      fail("the hand-off passes the products rounded to f16 or bf16, and this product's result is not");
  }
  if (c.split_k > 1) {
    if (c.warps_n != 1) fail("consumers taking tiles in turns (warps_n = 2) do not split K");
    const int64_t steps = ceil_div(k.gemm.k, c.bk), slice = ceil_div(steps, c.split_k);
    if ((c.split_k - 1) * slice >= steps)
      fail(fmt::format("split_k = {} leaves an empty slice of {} K steps (slices of {})", c.split_k, steps, slice));
    const int64_t floats = int64_t{c.split_k} * gemm_batch_count(k.gemm) * k.gemm.m * ((k.gemm.n + 7) / 8 * 8);
    if (floats > kMaxPartials)
      fail(fmt::format("split_k = {} needs {} MiB of partials, more than {} MiB", c.split_k, floats * 4 >> 20,
                       kMaxPartials * 4 >> 20));
  }
}

std::vector<TileConfig> gemm_wgmma_sweep(const Kernel& k) {
  std::vector<TileConfig> out;
  if (!gemm_wgmma_applies(k)) return out;
  struct Shape {
    int bm, bn, warps_m, warps_n;
  };
  // Two consumers of 64 x 256 on one tile is the shape the fastest Hopper kernels use;
  // two taking 64 x 256 tiles in turns hide the epilogue behind products; the others
  // trade accumulator registers for more tiles on small products. (A consumer of two
  // m64 rows under the 168 registers of 384 threads, 128 x 128 in turns, spills.)
  constexpr Shape kShapes[] = {{128, 256, 2, 1}, {128, 192, 2, 1}, {128, 128, 2, 1}, {256, 128, 2, 1},
                               {64, 256, 1, 2},  {64, 256, 1, 1},  {128, 64, 2, 1}};
  const int bk = 128 / gemm_tile_element_bytes(k);
  auto add = [&](const TileConfig& c) {
    try {
      validate_gemm(k, c);
      out.push_back(c);
    } catch (const Error&) {
    }
  };
  for (const Shape& s : kShapes) {
    if (s.bm >= 2 * k.gemm.m + 64 || s.bn >= 2 * k.gemm.n + 64) continue;  // tiles mostly past the product
    for (int stages : {3, 4, 5, 6})
      for (int split : wgmma_splits(k, s.bm, s.bn))
        add(TileConfig{.schedule = kWgmma, .bm = s.bm, .bn = s.bn, .bk = bk, .warps_m = s.warps_m,
                       .warps_n = s.warps_n, .stages = stages, .group = 8, .split_k = split});
    for (int stages : {3, 4}) {  // the epilogue on the producer's warps (where the 16-bit tile fits)
      TileConfig c{.schedule = kWgmma, .bm = s.bm, .bn = s.bn, .bk = bk, .warps_m = s.warps_m, .warps_n = s.warps_n,
                   .stages = stages, .group = 8, .split_k = 1};
      c.handoff = 1;
      add(c);
    }
    for (int stages : {4, 5}) {  // pairs of blocks sharing B (where the tile rows pair up)
      TileConfig c{.schedule = kWgmma, .bm = s.bm, .bn = s.bn, .bk = bk, .warps_m = s.warps_m, .warps_n = s.warps_n,
                   .stages = stages, .group = 8, .split_k = 1};
      c.cluster = 2;
      add(c);
    }
  }
  return out;
}

std::optional<TileConfig> gemm_wgmma_heuristic(const Kernel& k) {
  if (!gemm_wgmma_applies(k)) return std::nullopt;
  const int bk = 128 / gemm_tile_element_bytes(k);
  // Measured on the H200 (bench/NOTES.md): two consumers sharing 128 x 256 tiles, four
  // stages, where the tiles fill every SM at least once (consumers taking 64 x 256 tiles
  // in turns measured 2-13% slower in kiln bench, though the tuner's timing favoured
  // them); 128 x 128 tiles where only those fill the SMs; else 128 x 256 tiles with K
  // split into slices where K is long enough for a unit about every SM; else the
  // mma_sync schedule.
  auto legal = [&](const TileConfig& c) {
    try {
      validate_gemm(k, c);
      return true;
    } catch (const Error&) {
      return false;
    }
  };
  if (k.gemm.m <= 64) return std::nullopt;
  if (tiles_of(k, 128, 256) >= kTargetSMs) {
    TileConfig c{.schedule = kWgmma, .bm = 128, .bn = 256, .bk = bk, .warps_m = 2, .warps_n = 1, .stages = 4,
                 .group = 8, .split_k = 1};
    // Every SM pays for whole waves of tiles. 256 x 128 tiles (two consumers of 128 x
    // 128, each tile ~10% slower than 128 x 256 at 4096^3) where they pay fewer: 4093 x
    // 4099 x 4097 makes 544 tiles of 128 x 256 (5 waves) but 528 of 256 x 128 (4).
    const int64_t wide_waves = ceil_div(tiles_of(k, 128, 256), kTargetSMs);
    const int64_t tall_waves = ceil_div(tiles_of(k, 256, 128), kTargetSMs);
    if (11 * tall_waves < 10 * wide_waves) {
      TileConfig tall = c;
      tall.bm = 256;
      tall.bn = 128;
      if (legal(tall)) return tall;
    }
    if (legal(c)) return c;
  }
  if (tiles_of(k, 128, 128) >= kTargetSMs) {
    TileConfig c{.schedule = kWgmma, .bm = 128, .bn = 128, .bk = bk, .warps_m = 2, .warps_n = 1, .stages = 6,
                 .group = 8, .split_k = 1};
    if (legal(c)) return c;
  }
  const std::vector<int> splits = wgmma_splits(k, 128, 256);
  if (splits.back() > 1 && tiles_of(k, 128, 256) * splits.back() * 2 > kTargetSMs) {
    TileConfig c{.schedule = kWgmma, .bm = 128, .bn = 256, .bk = bk, .warps_m = 2, .warps_n = 1, .stages = 4,
                 .group = 8, .split_k = splits.back()};
    if (legal(c)) return c;
  }
  return std::nullopt;
}

}  // namespace kiln::ir
