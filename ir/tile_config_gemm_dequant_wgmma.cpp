// The dequant_wgmma schedule's tile rules (sm_90a): products of up to 64 rows of
// activations x [M, K] against an i4 / i8 weight w [N, K] on Hopper's warpgroup products,
// the weight dequantised into shared memory as wgmma's B operand: each product is one
// m64nNk16 with the activations (M rounded up to 8: bm, the rest of 64 zeros) as A and
// bn weight rows as B, so that N is wide enough for the Tensor Cores (an earlier design
// with the weight as the register A operand and the activations as N ran products of
// N = M, whose fixed cost set the time; bench/NOTES.md).
//
// A block of warps_n warps (one or two warpgroups, which take alternate k16 products)
// owns bn weight rows. K goes in steps of bk (128 i4 elements, 64 i8: 64 bytes of each
// weight row) through a ring of `stages` steps in shared memory, filled by cp.async:
// every thread copies (and later dequantises) only its own 16-byte pieces of the weight
// with their scales, and the activations' step goes to a second ring that the block
// turns into the A tile. split_k > 1 cuts K into slices, a block each (grid y), summed in
// slice order by the last.
#include <fmt/format.h>

#include <algorithm>

#include "ir/error.h"
#include "ir/kernel.h"
#include "ir/tile_config.h"

namespace kiln::ir {

namespace {

constexpr int64_t kMaxPartials = int64_t{1} << 24;  // split-K's fp32 partials: 64 MiB
constexpr int64_t kMaxSharedBytes = 232448 - 1024;  // 227 KB on sm_90, less the static 1 KB the alignment takes
// Of a thread's 255 registers: the accumulators (bn / 2) and the step's pieces; addresses and
// the dequantising take the rest.
constexpr int64_t kMaxHeldRegisters = 168;

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

bool rows_of_k(const Kernel& k, bool operand_a) {
  const GemmLayout l = gemm_layout(k, operand_a);
  for (int64_t s : l.batch_strides)
    if (s != 0) return false;
  return l.k_contiguous && l.ld == k.gemm.k;
}

DType weight_dtype(const Kernel& k) { return k.args.at(static_cast<size_t>(k.gemm.b.arg)).type.dtype; }

}  // namespace

int dequant_wgmma_step(const Kernel& k) { return weight_dtype(k) == DType::i4 ? 128 : 64; }

int dequant_wgmma_span(const Kernel& k) { return weight_dtype(k) == DType::i4 ? 32 : 16; }

int dequant_wgmma_tokens(const Kernel& k) { return static_cast<int>(std::max<int64_t>(8, ceil_div(k.gemm.m, 8) * 8)); }

bool gemm_dequant_wgmma_applies(const Kernel& k) {
  const GemmCore& g = k.gemm;
  if (target_sm() < 90 || !target_arch_specific()) return false;
  if (!g.b.dequant.active() || g.m > 64 || gemm_batch_count(g) != 1) return false;
  if (g.operand_dtype != DType::f16 && g.operand_dtype != DType::bf16) return false;
  const KernelArg& a = k.args.at(static_cast<size_t>(g.a.arg));
  if (!g.a.prologue.empty() || a.type.dtype != g.operand_dtype || !rows_of_k(k, true)) return false;
  if (!g.b.prologue.empty() || !rows_of_k(k, false)) return false;
  // Whole steps (so that every 16-byte piece is inside its row), and groups that hold
  // a thread's piece of a step whole: one scale a piece.
  if (g.k % dequant_wgmma_step(k) != 0) return false;
  const GemmDequant& d = g.b.dequant;
  if (d.group % dequant_wgmma_span(k) != 0 && d.group != g.k) return false;
  return is_float(k.args.at(static_cast<size_t>(d.scale)).type.dtype);
}

int64_t dequant_wgmma_shared_bytes(const Kernel& k, const TileConfig& c) {
  const int64_t x_step = int64_t{c.bm} * c.bk * dtype_bytes(k.gemm.operand_dtype);
  // The words of each piece's scale (and zero point): 4 bytes a piece, 4 pieces a row.
  const int64_t words = int64_t{c.bn} * 16 * (k.gemm.b.dequant.zero >= 0 ? 2 : 1);
  const int64_t ring = int64_t{c.stages} * (int64_t{c.bn} * 64 + words + x_step);
  // After the loop a second warpgroup's sums (bn / 2 floats a thread) pass through the rings.
  const int64_t sums = c.warps_n > 4 ? int64_t{c.bn} * 256 : 0;
  // 1 KB of alignment slack, two A tiles (64 rows), two B tiles (bn rows), the rings.
  return 1024 + 2 * int64_t{64} * c.bk * 2 + 2 * int64_t{c.bn} * c.bk * 2 + std::max(ring, sums);
}

int64_t dequant_wgmma_held_registers(const Kernel& k, const TileConfig& c) {
  // The accumulators, and per piece its four words, scale, zero point and address.
  (void)k;
  const int64_t pieces = c.warps_n > 0 ? 4 * int64_t{c.bn} / (32 * c.warps_n) : 0;
  return c.bn / 2 + pieces * 8;
}

void validate_gemm_dequant_wgmma(const Kernel& k, const TileConfig& c) {
  auto fail = [&](const std::string& rule) {
    throw Error(fmt::format("kernel @{}: tile config {}: {}", k.name, c.str(), rule));
  };
  const GemmCore& g = k.gemm;
  if (!gemm_dequant_wgmma_applies(k))
    fail("schedule dequant_wgmma takes, on sm_90a, M <= 64 rows of f16 / bf16 activations, row-major, against an i8 "
         "/ i4 weight stored [N, K] with K contiguous, dequantised in groups of whole pieces (32 i4 or 16 i8 elements) "
         "or one a row, K a multiple of 64 bytes of a weight row");
  if (c.bm != dequant_wgmma_tokens(k))
    fail(fmt::format("bm must be M rounded up to 8 ({}): the activation rows are the products' N", dequant_wgmma_tokens(k)));
  if (c.bk != dequant_wgmma_step(k))
    fail(fmt::format("bk must be {} (64 bytes of each weight row a step)", dequant_wgmma_step(k)));
  if (c.warps_n != 4 && c.warps_n != 8) fail("warps_n must be 4 or 8 (one or two warpgroups)");
  if (c.bn != 64 && c.bn != 128 && c.bn != 256) fail("bn must be 64, 128 or 256 weight rows (the products' N)");
  if (4 * c.bn < 32 * c.warps_n) fail("bn must give every thread a piece of a weight row (4 bn >= threads)");
  if (c.warps_m != 0 || c.group != 0) fail("schedule dequant_wgmma has no warps_m or group");
  if (c.stages < 3 || c.stages > 8) fail("stages must be 3 to 8 (two steps ahead at least)");
  if (dequant_wgmma_held_registers(k, c) > kMaxHeldRegisters)
    fail(fmt::format("each thread would hold {} registers of accumulators, fragments, weights and scales; more than "
                     "{} spill",
                     dequant_wgmma_held_registers(k, c), kMaxHeldRegisters));
  if (dequant_wgmma_shared_bytes(k, c) > kMaxSharedBytes)
    fail(fmt::format("it needs {} bytes of shared memory; a block has at most {}", dequant_wgmma_shared_bytes(k, c),
                     kMaxSharedBytes));
  if (c.split_k < 1 || c.split_k > 64) fail("split_k must be 1 to 64");
  if (c.split_k > 1) {
    if ((c.split_k - 1) * gemm_k_slice(k, c) >= g.k)
      fail(fmt::format("split_k = {} leaves an empty slice of K = {}", c.split_k, g.k));
    if (gemm_workspace_floats(k, c) > kMaxPartials) fail("the split's partials need more than 64 MiB");
  }
}

std::vector<TileConfig> gemm_dequant_wgmma_sweep(const Kernel& k) {
  std::vector<TileConfig> out;
  if (!gemm_dequant_wgmma_applies(k)) return out;
  for (int bn : {64, 128, 256})
    for (int warps : {4, 8})
      for (int stages : {3, 4, 6, 8})
        for (int split : {1, 2, 4, 8}) {
          const int64_t blocks = ceil_div(k.gemm.n, bn) * split;
          if (split > 1 && blocks > 2 * kTargetSMs) continue;
          TileConfig c{.schedule = kDequantWgmma, .bm = dequant_wgmma_tokens(k), .bn = bn, .bk = dequant_wgmma_step(k),
                       .warps_n = warps, .stages = stages, .split_k = split};
          try {
            validate_gemm_dequant_wgmma(k, c);
            out.push_back(c);
          } catch (const Error&) {
          }
        }
  return out;
}

// Two warpgroups on 128 weight rows (the products m64n128k16); K split until the blocks
// cover the SMs; the deepest ring that fits, up to 4 steps.
TileConfig gemm_dequant_wgmma_heuristic(const Kernel& k) {
  TileConfig c{.schedule = kDequantWgmma, .bm = dequant_wgmma_tokens(k), .bn = 128, .bk = dequant_wgmma_step(k),
               .warps_n = 8, .stages = 4, .split_k = 1};
  const int64_t tiles = ceil_div(k.gemm.n, c.bn);
  while (tiles * c.split_k < kTargetSMs && k.gemm.k / (2 * c.split_k) >= 8 * c.bk && c.split_k < 16) c.split_k *= 2;
  for (;;) {
    try {
      validate_gemm_dequant_wgmma(k, c);
      return c;
    } catch (const Error&) {
    }
    if (c.stages > 3) --c.stages;
    else if (c.bn > 64) { c.bn /= 2; c.stages = 4; }
    else throw Error(fmt::format("kernel @{}: no legal dequant_wgmma config", k.name));
  }
}

}  // namespace kiln::ir
