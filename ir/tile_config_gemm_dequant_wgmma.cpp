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
#include <fmt/format.h>

#include <algorithm>

#include "ir/error.h"
#include "ir/kernel.h"
#include "ir/tile_config.h"

namespace kiln::ir {

namespace {

constexpr int64_t kMaxPartials = int64_t{1} << 24;  // split-K's fp32 partials: 64 MiB
constexpr int64_t kMaxSharedBytes = 232448 - 1024;  // 227 KB on sm_90, less the static 1 KB the alignment takes
// Of a thread's 255 registers: accumulators, two sets of A fragments, the step's weight
// words and the scales in flight; addresses and the dequantising take the rest.
constexpr int64_t kMaxHeldRegisters = 168;

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

DType weight_dtype(const Kernel& k) { return k.args.at(static_cast<size_t>(k.gemm.b.arg)).type.dtype; }

int frags_of(const TileConfig& c) { return c.warps_n > 0 ? c.bn / (16 * c.warps_n) : 0; }

}  // namespace

int dequant_wgmma_step(const Kernel& k) { return weight_dtype(k) == DType::i4 ? 128 : 64; }

int dequant_wgmma_span(const Kernel& k) { return weight_dtype(k) == DType::i4 ? 32 : 16; }

int dequant_wgmma_tokens(const Kernel& k) { return static_cast<int>(std::max<int64_t>(8, ceil_div(k.gemm.m, 8) * 8)); }

bool gemm_dequant_wgmma_applies(const Kernel& k) {
  const GemmCore& g = k.gemm;
  if (target_sm() < 90 || !target_arch_specific()) return false;
  if (!g.b.dequant.active() || g.b.dequant.interleave != 0 || g.m > 128 || gemm_batch_count(g) != 1) return false;
  if (g.operand_dtype != DType::f16 && g.operand_dtype != DType::bf16) return false;
  const KernelArg& a = k.args.at(static_cast<size_t>(g.a.arg));
  if (!g.a.prologue.empty() || a.type.dtype != g.operand_dtype || !gemm_rows_of_k(k, true)) return false;
  if (!g.b.prologue.empty() || !gemm_rows_of_k(k, false)) return false;
  // Whole steps (so that every 16-byte piece is inside its row), and groups that hold
  // a thread's piece of a step whole: one scale a piece.
  if (g.k % dequant_wgmma_step(k) != 0) return false;
  const GemmDequant& d = g.b.dequant;
  if (d.group % dequant_wgmma_span(k) != 0 && d.group != g.k) return false;
  return is_float(k.args.at(static_cast<size_t>(d.scale)).type.dtype);
}

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

void validate_gemm_dequant_wgmma(const Kernel& k, const TileConfig& c) {
  auto fail = [&](const std::string& rule) {
    throw Error(fmt::format("kernel @{}: tile config {}: {}", k.name, c.str(), rule));
  };
  const GemmCore& g = k.gemm;
  if (!gemm_dequant_wgmma_applies(k))
    fail("schedule dequant_wgmma takes, on sm_90a, M <= 128 rows of f16 / bf16 activations, row-major, against an i8 "
         "/ i4 weight stored [N, K] with K contiguous, dequantised in groups of whole pieces (32 i4 or 16 i8 elements) "
         "or one a row, K a multiple of 64 bytes of a weight row");
  if (c.bm != dequant_wgmma_tokens(k))
    fail(fmt::format("bm must be M rounded up to 8 ({}): the activation rows are the products' N", dequant_wgmma_tokens(k)));
  if (c.bk != dequant_wgmma_step(k))
    fail(fmt::format("bk must be {} (64 bytes of each weight row a step)", dequant_wgmma_step(k)));
  if (c.warps_n != 4 && c.warps_n != 8 && c.warps_n != 16) fail("warps_n must be 4, 8 or 16 (whole warpgroups)");
  if (c.bn % (16 * c.warps_n) != 0 || (frags_of(c) != 1 && frags_of(c) != 2))
    fail("bn must give each warpgroup one or two m64 fragments of weight rows (bn = 16 x warps_n x 1 or 2)");
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
  for (int warps : {4, 8, 16})
    for (int frags : {1, 2})
      for (int stages : {4, 6, 8})
        for (int split : {1, 2, 4, 8, 16}) {
          const int bn = 16 * warps * frags;
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

// Two warpgroups of two fragments (256 weight rows a block) where the accumulators
// allow, one fragment each past 64 activation rows; K split until the blocks cover the
// SMs; the deepest ring that fits.
TileConfig gemm_dequant_wgmma_heuristic(const Kernel& k) {
  const int tokens = dequant_wgmma_tokens(k);
  TileConfig c{.schedule = kDequantWgmma, .bm = tokens, .bn = tokens <= 64 ? 256 : 128, .bk = dequant_wgmma_step(k),
               .warps_n = 8, .stages = 8, .split_k = 1};
  const int64_t tiles = ceil_div(k.gemm.n, c.bn);
  while (tiles * c.split_k < kTargetSMs && k.gemm.k / (2 * c.split_k) >= 8 * c.bk && c.split_k < 16) c.split_k *= 2;
  for (;;) {
    try {
      validate_gemm_dequant_wgmma(k, c);
      return c;
    } catch (const Error&) {
    }
    if (c.stages > 3) --c.stages;
    else if (c.split_k > 1) { c.split_k /= 2; c.stages = 8; }
    else if (c.bn > 16 * c.warps_n) { c.bn /= 2; c.stages = 8; }
    else throw Error(fmt::format("kernel @{}: no legal dequant_wgmma config", k.name));
  }
}

}  // namespace kiln::ir
