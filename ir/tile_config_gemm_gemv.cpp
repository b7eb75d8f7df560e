// The gemv schedule's tile rules (see tile_config.h): decoding's products, a few rows of
// activations against a weight that is read once, so that the weight's bytes set the
// time. A block owns bn output columns (bn / 8 groups of 8 weight rows; one m16n8 product
// fragment takes two groups as its A rows when M <= 8, else one as its B columns) and its
// warps_n warps split K; the grid's y dim splits K further
// (split_k) when the column tiles alone cannot fill the GPU. Each step, a lane loads bk /
// (4 * lane elems) 16-byte pieces of each of its weight rows before multiplying any, so
// that enough loads are in flight to stream the weight at full bandwidth, and loads the
// next step's pieces before it multiplies this step's. With `stages` S > 0 the pieces go
// through a ring of S steps in shared memory instead (cp.async, each lane's own slots):
// S - 1 steps in flight while one is multiplied, without the registers to hold them.
#include <fmt/format.h>

#include <algorithm>

#include "ir/error.h"
#include "ir/kernel.h"
#include "ir/tile_config.h"

namespace kiln::ir {

namespace {

constexpr int64_t kMaxWorkspaceFloats = int64_t{1} << 24;  // as the other gemm schedules
// Of the 128 registers a thread may use (the emitter asks for 512 threads an SM), what
// the weight pieces, activations and accumulators may hold; addresses and the
// dequantised pairs take the rest.
constexpr int64_t kMaxHeldRegisters = 96;
// The most dynamic shared memory a block may ask for on every sm_80-and-up target (sm_80:
// 163 KB; the H200's 227 KB is not assumed).
constexpr int64_t kMaxGemvSharedBytes = 163 * 1024;

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Unroll: the 16-byte pieces of each weight row a lane loads per step.
int unroll_of(const Kernel& k, const TileConfig& c) { return c.bk / (4 * gemv_lane_elems(k)); }

}  // namespace

int gemv_lane_elems(const Kernel& k) {
  return gemm_piece_elems(k.args.at(static_cast<size_t>(k.gemm.b.arg)).type.dtype);
}

int64_t gemv_sums_bytes(const TileConfig& c) { return int64_t{c.warps_n} * 16 * c.bn * 4; }

int64_t gemv_shared_bytes(const Kernel& k, const TileConfig& c) {
  const int64_t ring = int64_t{c.stages} * unroll_of(k, c) * (c.bn / 8) * 32 * c.warps_n * 16;
  return gemv_sums_bytes(c) + ring;
}

bool gemv_weights_as_a(const Kernel& k, const TileConfig& c) { return k.gemm.m <= 8 && c.bn % 16 == 0; }

bool gemm_gemv_applies(const Kernel& k) {
  const GemmCore& g = k.gemm;
  if (g.m > 16 || gemm_batch_count(g) != 1) return false;
  if (g.operand_dtype != DType::f16 && g.operand_dtype != DType::bf16) return false;
  const KernelArg& a = k.args.at(static_cast<size_t>(g.a.arg));
  const KernelArg& b = k.args.at(static_cast<size_t>(g.b.arg));
  if (!g.a.prologue.empty() || a.type.dtype != g.operand_dtype || !gemm_rows_of_k(k, true)) return false;
  if (!g.b.prologue.empty() || !gemm_rows_of_k(k, false)) return false;
  if (!g.b.dequant.active() && b.type.dtype != g.operand_dtype) return false;
  const int lane = gemv_lane_elems(k);
  if (g.k % lane != 0) return false;  // a lane's 16 bytes lie wholly inside a row
  return !g.b.dequant.active() || g.b.dequant.group % lane == 0 || g.b.dequant.group == g.k;
}

void validate_gemm_gemv(const Kernel& k, const TileConfig& c) {
  auto fail = [&](const std::string& rule) {
    throw Error(fmt::format("kernel @{}: tile config {}: {}", k.name, c.str(), rule));
  };
  const GemmCore& g = k.gemm;
  if (!gemm_gemv_applies(k))
    fail("schedule gemv takes M <= 16 rows of f16 / bf16 activations, row-major, against a weight stored [N, K] with "
         "K contiguous (f16 / bf16, or i8 / i4 dequantised in groups of whole 16-byte pieces), K a multiple of one "
         "lane's 16 bytes");
  if (c.bm != 16) fail("bm must be 16 (one m16 fragment holds every row)");
  if (c.bn != 8 && c.bn != 16 && c.bn != 32 && c.bn != 64) fail("bn must be 8, 16, 32 or 64 columns");
  if (c.warps_n != 1 && c.warps_n != 2 && c.warps_n != 4 && c.warps_n != 8) fail("warps_n must be 1, 2, 4 or 8");
  if (c.warps_m != 0 || c.group != 0) fail("schedule gemv has no warps_m or group");
  if (c.stages != 0 && (c.stages < 2 || c.stages > 8))
    fail("stages must be 0 (the next step's weights in registers) or 2 to 8 (a ring in shared memory)");
  const int lane = gemv_lane_elems(k), unroll = unroll_of(k, c);
  if (c.bk % (4 * lane) != 0 || (unroll != 1 && unroll != 2 && unroll != 4))
    fail(fmt::format("bk must be 1, 2 or 4 times {} (four lanes' 16 bytes of K)", 4 * lane));
  // Registers: the weight pieces (and scales) of two steps, the one multiplied and the next
  // one in flight (with a ring, only the scales of the next), this step's activations, and
  // the accumulators.
  const int64_t tiles = c.bn / 8, rows = g.m > 8 ? 2 : 1;
  const int64_t scales = g.b.dequant.active() ? 2 : 0;
  const int64_t weights = int64_t{unroll} * tiles * (c.stages > 0 ? 4 + 2 * scales : 2 * (4 + scales));
  const int64_t held = weights + int64_t{unroll} * (lane / 8) * 4 * rows + tiles * 4;
  if (held > kMaxHeldRegisters)
    fail(fmt::format("each lane would hold {} registers of weights, activations and accumulators; more than {} spill",
                     held, kMaxHeldRegisters));
  if (gemv_shared_bytes(k, c) > kMaxGemvSharedBytes)
    fail(fmt::format("the ring of {} steps needs {} bytes of shared memory with the warps' sums; a block may have {}",
                     c.stages, gemv_shared_bytes(k, c), kMaxGemvSharedBytes));
  if (c.split_k < 1 || c.split_k > 64) fail("split_k must be 1 to 64");
  if (c.split_k > 1) {
    if ((c.split_k - 1) * gemm_k_slice(k, c) >= g.k)
      fail(fmt::format("split_k = {} leaves an empty slice of K = {}", c.split_k, g.k));
    if (gemm_workspace_floats(k, c) > kMaxWorkspaceFloats) fail("the split's partials need more than 64 MiB");
  }
}

std::vector<TileConfig> gemm_gemv_sweep(const Kernel& k) {
  std::vector<TileConfig> out;
  if (!gemm_gemv_applies(k)) return out;
  const int lane = gemv_lane_elems(k);
  for (int bn : {8, 16, 32, 64})
    for (int warps : {2, 4, 8})
      for (int unroll : {1, 2, 4})
        for (int split : {1, 2, 4, 8})
          for (int stages : {0, 3, 5}) {
            if (split > 1 && ceil_div(k.gemm.n, bn) * split > 8 * kTargetSMs) continue;
            TileConfig c{.schedule = kGemv, .bm = 16, .bn = bn, .bk = 4 * lane * unroll, .warps_n = warps,
                         .stages = stages, .split_k = split};
            try {
              validate_gemm_gemv(k, c);
              out.push_back(c);
            } catch (const Error&) {
            }
          }
  return out;
}

// Measured on the H200 (8192 x 8192 weights, bf16 activations, `kiln tune`; bench/NOTES.md):
// four fragments of columns a warp (32 weight rows), eight warps splitting K, one piece of
// each row a step (the next step's already in flight), and no split of K while the column
// tiles give every SM a block: 18.4 us for i4 at M = 1 against 21.2 us for the earlier
// prediction (16 columns, four warps, two pieces, two slices), 24.9 against 29.1 for i8.
// Narrower weights split K until every SM has a block. Still the tuner's best after the
// scale moved onto the products' sums (2026-12-05, H100, 193 candidates: 16.0 us in the
// tuner's timing, the next 16.6).
TileConfig gemm_gemv_heuristic(const Kernel& k) {
  const int lane = gemv_lane_elems(k);
  TileConfig c{.schedule = kGemv, .bm = 16, .bn = 32, .bk = 4 * lane, .warps_n = 8, .split_k = 1};
  const int64_t blocks = ceil_div(k.gemm.n, c.bn);
  while (blocks * c.split_k < kTargetSMs && c.split_k < 16) c.split_k *= 2;
  for (;; c.split_k /= 2) {
    try {
      validate_gemm_gemv(k, c);
      return c;
    } catch (const Error&) {
      if (c.split_k > 1) continue;
      if (c.bn > 8) {  // fewer columns a warp: fewer registers
        c.bn /= 2;
        c.split_k = 2;
        continue;
      }
      throw;
    }
  }
}

}  // namespace kiln::ir
