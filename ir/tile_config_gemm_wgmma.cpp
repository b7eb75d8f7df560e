// The wgmma schedule's tile rules (sm_90a). A block is one producer warpgroup, whose
// first thread issues the copy engine's (TMA) loads of A and B tiles into `stages`
// shared-memory stages, and warps_m consumer warpgroups, each multiplying a
// (bm / warps_m) x bn part of the output tile with wgmma m64nNk16 products straight
// from shared memory. Blocks are persistent: one an SM, each walking output tiles.
//
// Rules: a consumer's part is one or two m64 rows of wgmma products (64 or 128 rows)
// and holds at most 64 x 256 fp32 accumulators (128 registers a thread, what the
// register file leaves after the producer gives its registers back); bn is a multiple
// of 64 (tiles stored N-contiguous load as 64-column boxes) up to 256 (the widest
// wgmma); bk is 128 bytes of K (one 128-byte swizzle row).
#include <fmt/format.h>

#include <optional>

#include "ir/error.h"
#include "ir/kernel.h"
#include "ir/tile_config.h"

namespace kiln::ir {

namespace {

constexpr int kWarpgroup = 128;
constexpr int kMaxAccumulators = 64 * 256;  // of one consumer warpgroup

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace

bool gemm_wgmma_applies(const Kernel& k) {
  return target_sm() >= 90 && gemm_operand_tma(k, true) && gemm_operand_tma(k, false);
}

int wgmma_threads(const TileConfig& c) { return kWarpgroup * (c.warps_m + 1); }

int64_t wgmma_stage_bytes(const Kernel& k, const TileConfig& c) {
  return (int64_t{c.bm} + c.bn) * c.bk * dtype_bytes(k.gemm.operand_dtype);
}

int64_t wgmma_shared_bytes(const Kernel& k, const TileConfig& c) {
  // The stages, two mbarriers a stage, and room to align the stages to 1024 bytes
  // (the 128-byte swizzle repeats every 8 rows of 128 bytes).
  return c.stages * wgmma_stage_bytes(k, c) + 16 * c.stages + 1024;
}

void validate_gemm_wgmma(const Kernel& k, const TileConfig& c) {
  auto fail = [&](const std::string& rule) {
    throw Error(fmt::format("kernel @{}: tile config {}: {}", k.name, c.str(), rule));
  };
  if (target_sm() < 90) fail(fmt::format("schedule wgmma needs sm_90a; the target is sm_{}", target_sm()));
  for (bool a : {true, false})
    if (!gemm_operand_tma(k, a))
      fail(fmt::format("operand {} cannot load through TMA (f16 or bf16 without a prologue, row and batch strides "
                       "multiples of 16 bytes, at most 3 batch dims it does not broadcast over)",
                       a ? "A" : "B"));
  if (c.warps_m != 1 && c.warps_m != 2) fail("schedule wgmma takes warps_m = 1 or 2 consumer warpgroups");
  if (c.warps_n != 1) fail("schedule wgmma takes warps_n = 1 (consumers split the tile along M)");
  const int rows = c.bm / c.warps_m;
  if (c.bm % c.warps_m != 0 || (rows != 64 && rows != 128))
    fail(fmt::format("a consumer's part of bm ({} rows) must be 64 or 128", c.bm / c.warps_m));
  if (c.bn % 64 != 0 || c.bn < 64 || c.bn > 256) fail("bn must be 64, 128, 192 or 256");
  if (rows * c.bn > kMaxAccumulators)
    fail(fmt::format("a consumer's part {} x {} holds more than 64 x 256 accumulators", rows, c.bn));
  if (c.bk * dtype_bytes(k.gemm.operand_dtype) != 128) fail("bk must be 128 bytes of K (64 f16 or bf16)");
  if (c.stages < 2 || c.stages > 8) fail("stages must be 2 to 8");
  if (c.split_k != 1) fail("schedule wgmma does not split K yet: split_k = 1");
}

std::vector<TileConfig> gemm_wgmma_sweep(const Kernel& k) {
  std::vector<TileConfig> out;
  if (!gemm_wgmma_applies(k)) return out;
  struct Shape {
    int bm, bn, consumers;
  };
  // Two consumers of 64 x 256 is the shape the fastest Hopper kernels use; the others
  // trade accumulator registers for more blocks' worth of tiles on small products.
  constexpr Shape kShapes[] = {{128, 256, 2}, {128, 192, 2}, {128, 128, 2}, {256, 128, 2},
                               {64, 256, 1},  {128, 128, 1}, {128, 64, 2}};
  const int bk = 128 / dtype_bytes(k.gemm.operand_dtype);
  for (const Shape& s : kShapes) {
    if (s.bm >= 2 * k.gemm.m + 64 || s.bn >= 2 * k.gemm.n + 64) continue;  // tiles mostly past the product
    for (int stages : {3, 4, 5, 6}) {
      TileConfig c{.schedule = kWgmma, .bm = s.bm, .bn = s.bn, .bk = bk, .warps_m = s.consumers, .warps_n = 1,
                   .stages = stages, .group = 8, .split_k = 1};
      try {
        validate_gemm(k, c);
        out.push_back(c);
      } catch (const Error&) {
      }
    }
  }
  return out;
}

std::optional<TileConfig> gemm_wgmma_heuristic(const Kernel& k) {
  if (!gemm_wgmma_applies(k)) return std::nullopt;
  const int bk = 128 / dtype_bytes(k.gemm.operand_dtype);
  const int64_t batches = gemm_batch_count(k.gemm);
  // 128 x 256 tiles in four stages where they fill every SM at least once; 128 x 128
  // where only those do; else the mma_sync schedule, which splits K.
  for (int bn : {256, 128}) {
    const int64_t tiles = ceil_div(k.gemm.m, 128) * ceil_div(k.gemm.n, bn) * batches;
    if (tiles < kTargetSMs || k.gemm.m <= 64) continue;
    TileConfig c{.schedule = kWgmma, .bm = 128, .bn = bn, .bk = bk, .warps_m = 2, .warps_n = 1,
                 .stages = bn == 256 ? 4 : 6, .group = 8, .split_k = 1};
    try {
      validate_gemm(k, c);
      return c;
    } catch (const Error&) {
    }
  }
  return std::nullopt;
}

}  // namespace kiln::ir
