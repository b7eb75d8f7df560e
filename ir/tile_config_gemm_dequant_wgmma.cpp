// The dequant_wgmma schedule's tile rules (sm_90a): products of up to 128 rows of
// activations x [M, K] against an i4 / i8 weight w [N, K] dequantised in registers, on
// Hopper's warpgroup products with the weight as the register operand A. The product is
// computed transposed, y^T = dequant(w) x^T: the weight's rows are wgmma's M (64 a
// product), the activation rows its N (M rounded up to 8: bm), so that a decoding batch
// of 16 or 64 rows fills whole products instead of a sliver of a 64-row tile.
//
// A block of warps_n warps (whole warpgroups) owns bn weight rows: each warpgroup
// bn / (warps_n / 4) of them as one or two m64 fragments. K goes in steps of bk (128 i4
// elements, 64 i8: 64 bytes of each weight row) through a ring of `stages` steps in
// shared memory, filled by cp.async: every thread copies (and later reads) only its own
// 16-byte pieces of the weight, and the activations' step goes to a second ring that
// the block turns into the B tile wgmma reads. split_k > 1 cuts K into slices, a block
// each (grid y), summed in slice order by the last.
//
// dequant_mma is the same schedule on mma.sync m16n8k16 (sm_80 and up): the same ring,
// steps, split and permuted B tile, but each warp owns its own bn / warps_n weight rows
// (one to four m16 fragments, the A operand in registers) and multiplies them against
// every activation row, bm / 8 tiles of n8 that ldmatrix reads from the B tile. No
// warpgroups, so any 4, 8 or 16 warps; the accumulators are frags x bm / 2 a thread.
#include <fmt/format.h>

#include <algorithm>

#include "ir/error.h"
#include "ir/kernel.h"
#include "ir/tile_config.h"

namespace kiln::ir {

namespace {

constexpr int64_t kMaxPartials = int64_t{1} << 24;  // split-K's fp32 partials: 64 MiB
// The target's block limit less the static 1 KB the alignment takes.
int64_t max_shared_bytes() { return max_block_shared_bytes() - 1024; }

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

DType weight_dtype(const Kernel& k) { return k.args.at(static_cast<size_t>(k.gemm.b.arg)).type.dtype; }

int frags_of(const TileConfig& c) { return c.warps_n > 0 ? c.bn / (16 * c.warps_n) : 0; }

// The schedule's name in the rules' messages.
std::string name_of(int schedule) { return std::string(gemm_schedule_name(schedule)); }

// The rules both schedules share: the operands' layouts, whole steps of K (so that
// every 16-byte piece is inside its row), and groups that hold a thread's piece of a
// step whole (one scale a piece).
bool dequant_registers_apply(const Kernel& k) {
  const GemmCore& g = k.gemm;
  if (!g.b.dequant.active() || g.b.dequant.interleave != 0 || g.m > 128 || gemm_batch_count(g) != 1) return false;
  if (g.operand_dtype != DType::f16 && g.operand_dtype != DType::bf16) return false;
  const KernelArg& a = k.args.at(static_cast<size_t>(g.a.arg));
  if (!g.a.prologue.empty() || a.type.dtype != g.operand_dtype || !gemm_rows_of_k(k, true)) return false;
  if (!g.b.prologue.empty() || !gemm_rows_of_k(k, false)) return false;
  if (g.k % dequant_wgmma_step(k) != 0) return false;
  const GemmDequant& d = g.b.dequant;
  if (d.group % dequant_wgmma_span(k) != 0 && d.group != g.k) return false;
  return is_float(k.args.at(static_cast<size_t>(d.scale)).type.dtype);
}

bool applies(const Kernel& k, int schedule) {
  return schedule == kDequantMma ? gemm_dequant_mma_applies(k) : gemm_dequant_wgmma_applies(k);
}

int64_t held_registers(const Kernel& k, const TileConfig& c) {
  return c.schedule == kDequantMma ? dequant_mma_held_registers(k, c) : dequant_wgmma_held_registers(k, c);
}

// A thread's registers for the held values: 168 of 255 (addresses and the dequantising
// take the rest); 512 threads have 128 each, so 96.
int64_t max_held_registers(const TileConfig& c) { return c.warps_n > 8 && c.schedule == kDequantMma ? 96 : 168; }

void check(const Kernel& k, const TileConfig& c) {
  auto fail = [&](const std::string& rule) {
    throw Error(fmt::format("kernel @{}: tile config {}: {}", k.name, c.str(), rule));
  };
  const GemmCore& g = k.gemm;
  const bool mma = c.schedule == kDequantMma;
  const std::string name = name_of(c.schedule);
  if (!applies(k, c.schedule))
    fail(fmt::format("schedule {} takes, on {}, M <= 128 rows of f16 / bf16 activations, row-major, against an i8 / i4 "
                     "weight stored [N, K] with K contiguous, dequantised in groups of whole pieces (32 i4 or 16 i8 "
                     "elements) or one a row, K a multiple of 64 bytes of a weight row",
                     name, mma ? "sm_80 and up" : "sm_90a"));
  if (c.bm != dequant_wgmma_tokens(k))
    fail(fmt::format("bm must be M rounded up to 8 ({}): the activation rows are the products' N", dequant_wgmma_tokens(k)));
  if (c.bk != dequant_wgmma_step(k))
    fail(fmt::format("bk must be {} (64 bytes of each weight row a step)", dequant_wgmma_step(k)));
  if (c.warps_n != 4 && c.warps_n != 8 && c.warps_n != 16)
    fail(mma ? "warps_n must be 4, 8 or 16" : "warps_n must be 4, 8 or 16 (whole warpgroups)");
  const int frags = frags_of(c);
  if (mma && (c.bn % (16 * c.warps_n) != 0 || (frags != 1 && frags != 2 && frags != 4)))
    fail("bn must give each warp one, two or four m16 fragments of weight rows (bn = 16 x warps_n x 1, 2 or 4)");
  if (!mma && (c.bn % (16 * c.warps_n) != 0 || (frags != 1 && frags != 2)))
    fail("bn must give each warpgroup one or two m64 fragments of weight rows (bn = 16 x warps_n x 1 or 2)");
  if (c.warps_m != 0 || c.group != 0) fail(fmt::format("schedule {} has no warps_m or group", name));
  if (c.stages < 3 || c.stages > 8) fail("stages must be 3 to 8 (two steps ahead at least)");
  if (held_registers(k, c) > max_held_registers(c))
    fail(fmt::format("each thread would hold {} registers of accumulators, fragments, weights and scales; more than "
                     "{} spill",
                     held_registers(k, c), max_held_registers(c)));
  if (dequant_wgmma_shared_bytes(k, c) > max_shared_bytes())
    fail(fmt::format("it needs {} bytes of shared memory; a block has at most {}", dequant_wgmma_shared_bytes(k, c),
                     max_shared_bytes()));
  if (c.split_k < 1 || c.split_k > 64) fail("split_k must be 1 to 64");
  if (c.split_k > 1) {
    if ((c.split_k - 1) * gemm_k_slice(k, c) >= g.k)
      fail(fmt::format("split_k = {} leaves an empty slice of K = {}", c.split_k, g.k));
    if (gemm_workspace_floats(k, c) > kMaxPartials) fail("the split's partials need more than 64 MiB");
  }
}

std::vector<TileConfig> sweep_of(const Kernel& k, int schedule) {
  std::vector<TileConfig> out;
  if (!applies(k, schedule)) return out;
  const bool mma = schedule == kDequantMma;
  const std::vector<int> frag_counts = mma ? std::vector<int>{1, 2, 4} : std::vector<int>{1, 2};
  const std::vector<int> depths = mma ? std::vector<int>{3, 4, 6} : std::vector<int>{3, 4, 6, 8};
  for (int warps : {4, 8, 16})
    for (int frags : frag_counts)
      for (int stages : depths)
        for (int split : {1, 2, 4, 8, 16}) {
          const int bn = 16 * warps * frags;
          const int64_t blocks = ceil_div(k.gemm.n, bn) * split;
          if (split > 1 && blocks > 2 * kTargetSMs) continue;
          TileConfig c{.schedule = schedule, .bm = dequant_wgmma_tokens(k), .bn = bn, .bk = dequant_wgmma_step(k),
                       .warps_n = warps, .stages = stages, .split_k = split};
          try {
            check(k, c);
            // dequant_wgmma's shallowest ring only where it lets blocks share an SM.
            if (!mma && stages == 3 && dequant_blocks_per_sm(k, c) == 1) continue;
            out.push_back(c);
          } catch (const Error&) {
          }
        }
  return out;
}

// From the preferred config, K split while the blocks stay within one wave (8 steps a
// slice at least), then shallower rings, fewer slices and narrower blocks until one is
// legal.
TileConfig first_legal_from(const Kernel& k, TileConfig c) {
  const int stages = c.stages;
  const int64_t tiles = ceil_div(k.gemm.n, c.bn);
  while (tiles * c.split_k * 2 <= kTargetSMs + kTargetSMs / 8 && k.gemm.k / (2 * c.split_k) >= 8 * c.bk &&
         c.split_k < 16)
    c.split_k *= 2;
  for (;;) {
    try {
      check(k, c);
      return c;
    } catch (const Error&) {
    }
    if (c.stages > 3) --c.stages;
    else if (c.split_k > 1) { c.split_k /= 2; c.stages = stages; }
    else if (c.bn > 16 * c.warps_n) { c.bn /= 2; c.stages = stages; }
    else throw Error(fmt::format("kernel @{}: no legal {} config", k.name, name_of(c.schedule)));
  }
}

}  // namespace

int dequant_wgmma_step(const Kernel& k) { return weight_dtype(k) == DType::i4 ? 128 : 64; }

int dequant_wgmma_span(const Kernel& k) { return weight_dtype(k) == DType::i4 ? 32 : 16; }

int dequant_wgmma_tokens(const Kernel& k) { return static_cast<int>(std::max<int64_t>(8, ceil_div(k.gemm.m, 8) * 8)); }

bool gemm_dequant_wgmma_applies(const Kernel& k) {
  return target_sm() >= 90 && target_arch_specific() && dequant_registers_apply(k);
}

bool gemm_dequant_mma_applies(const Kernel& k) { return target_sm() >= 80 && dequant_registers_apply(k); }

int64_t dequant_wgmma_shared_bytes(const Kernel& k, const TileConfig& c) {
  const int64_t x_step = int64_t{c.bm} * c.bk * dtype_bytes(k.gemm.operand_dtype);
  // The words of each thread's scales (and zero points): 4 bytes a piece, 4 pieces a row.
  const int64_t words = int64_t{c.bn} * 16 * (k.gemm.b.dequant.zero >= 0 ? 2 : 1);
  // 1 KB of alignment slack, the rings (weights: 64 bytes a row a step), two B tiles.
  return 1024 + int64_t{c.stages} * (int64_t{c.bn} * 64 + words + x_step) + 2 * x_step;
}

int64_t dequant_wgmma_held_registers(const Kernel& k, const TileConfig& c) {
  // Per fragment: accumulators, four sets of A registers, the step's weight words, and
  // the step's scales and zero points.
  (void)k;
  return frags_of(c) * (int64_t{c.bm} / 2 + 16 + 8 + 4);
}

int64_t dequant_mma_held_registers(const Kernel& k, const TileConfig& c) {
  // Per m16 fragment: accumulators, one set of A registers, the step's weight words, its
  // scales and zero points and their copies' addresses; once: a product's B fragments (two
  // a tile of n8). Four fragments against 40 rows (154 by a count without the addresses)
  // spilled.
  (void)k;
  return frags_of(c) * (int64_t{c.bm} / 2 + 24) + c.bm / 4;
}

int dequant_blocks_per_sm(const Kernel& k, const TileConfig& c) {
  // A block's shared memory with the 1 KB the system keeps for each and the static bytes
  // of the split's flag; an SM has the block limit and one such 1 KB.
  const int64_t per_block = dequant_wgmma_shared_bytes(k, c) + 1024 + 128;
  const int64_t threads = 32 * int64_t{c.warps_n}, sm_threads = target_sm() == 80 || target_sm() >= 90 ? 2048 : 1536;
  // Registers a thread needs: the held values and about 68 for addresses and the
  // dequantising (ptxas: 64 rows of activations, one fragment, 60 held, fit 128 without
  // spills; 128 rows, 92 held, spilled 148 bytes).
  const int64_t needed = std::min<int64_t>(255, held_registers(k, c) + 68);
  int blocks = 1;
  for (int b = 2; b <= 4; ++b) {
    const int64_t cap = std::min<int64_t>(255, 65536 / (b * threads) / 8 * 8);
    if (b * per_block > max_block_shared_bytes() + 1024 || b * threads > sm_threads || cap < needed) break;
    blocks = b;
  }
  return blocks;
}

void validate_gemm_dequant_wgmma(const Kernel& k, const TileConfig& c) { check(k, c); }
void validate_gemm_dequant_mma(const Kernel& k, const TileConfig& c) { check(k, c); }

std::vector<TileConfig> gemm_dequant_wgmma_sweep(const Kernel& k) { return sweep_of(k, kDequantWgmma); }
std::vector<TileConfig> gemm_dequant_mma_sweep(const Kernel& k) { return sweep_of(k, kDequantMma); }

// Two warpgroups of one fragment (128 weight rows a block), a ring of 6 steps: the
// tuner's pick at 64 x 8192 x 8192 on an H100 (45.0 us, with K in two slices; 8 steps and
// 256 rows a block were 2-20% slower, bench/NOTES.md).
TileConfig gemm_dequant_wgmma_heuristic(const Kernel& k) {
  const int tokens = dequant_wgmma_tokens(k);
  return first_legal_from(k, TileConfig{.schedule = kDequantWgmma, .bm = tokens, .bn = 128,
                                        .bk = dequant_wgmma_step(k), .warps_n = 8, .stages = 6, .split_k = 1});
}

// Eight warps of two m16 fragments (256 weight rows a block: each activation tile in
// shared memory serves as many weight rows as the accumulators allow), one fragment
// past 64 activation rows; four steps in the ring, three in flight.
TileConfig gemm_dequant_mma_heuristic(const Kernel& k) {
  const int tokens = dequant_wgmma_tokens(k);
  return first_legal_from(k, TileConfig{.schedule = kDequantMma, .bm = tokens, .bn = tokens <= 64 ? 256 : 128,
                                 .bk = dequant_wgmma_step(k), .warps_n = 8, .stages = 4, .split_k = 1});
}

}  // namespace kiln::ir
