// Hand-written GEMM on Tensor Cores through mma.sync (the Ampere path, which Hopper runs
// too): C = A @ B for row-major A [M, K] and B [K, N] (B's rows are k, n contiguous),
// batched over a leading dim, and y = gelu_tanh(A @ B + bias[N]) with the epilogue
// fused. f16 or bf16 operands, fp32 accumulation, one rounding of the result.
//
//   block     128 x 256 x 32 (BM x BN x BK); 256 threads = 8 warps in a 2 x 4 grid, one
//             block per SM (__launch_bounds__(256, 1): up to 255 registers a thread).
//   warp      64 x 64 = 4 x 8 tiles of m16n8k16 mma.sync: 128 fp32 accumulators a thread.
//   fragments from shared memory through ldmatrix.x4 (A) and ldmatrix.x4.trans (B, whose
//             rows are k); two k16 steps per BK, double-buffered in registers so that
//             the next step's ldmatrix overlaps this step's mma.
//   pipeline  4 stages of cp.async.cg (16 bytes, cached in L2 only) with commit and
//             wait_group: while the warps multiply tile kt, tiles kt+1..kt+3 are in
//             flight; one __syncthreads per BK.
//   swizzle   A stage 128 x 32 (rows of 64 B): 16-byte chunk c of row r at c ^ ((r >> 1) % 4);
//             B stage 32 x 256 (rows of 512 B): chunk c at c ^ (r % 8). The 8 rows that
//             one ldmatrix phase reads then fall in 8 different bank groups, and each
//             warp's cp.async stores cover whole 128-byte lines: no bank conflicts.
//   order     block ids walk the tiles in groups of 8 tile rows (column by column within
//             a group), so that the blocks of one wave share A rows and B columns in L2.
//   epilogue  accumulators (+ bias, GELU in fp32) rounded once, staged through shared
//             memory (rows padded by 16 bytes: conflict-free) and written as 16-byte
//             vectors, one 512-byte row per warp per store.
// No edge handling: M and N multiples of the block tile, K of BK (why_unsupported). The
// source is built for one problem: K and the batch are compile-time constants; M and N
// are the entry's rows and cols; the batch is the grid's y.
#include <fmt/format.h>

#include <string>
#include <vector>

#include "baselines/cuda_common.h"
#include "baselines/families.h"
#include "ir/error.h"

namespace kiln::baselines {

namespace {

const char* const kGemmCuda = R"CUDA(
#include <cuda_bf16.h>

namespace gemm {

constexpr int BM = 128, BN = 256, BK = 32;
constexpr int STAGES = 4;
constexpr int GROUP_M = 8;                     // tile rows per group of the block order
constexpr int THREADS = 256;                   // 8 warps: 2 along M x 4 along N
constexpr int A_BYTES = BM * BK * 2;           // one stage of A: 8 KB
constexpr int STAGE_BYTES = A_BYTES + BK * BN * 2;  // + one stage of B: 24 KB
constexpr int C_ROW = BN + 8;                  // a staged output row, in elements (16 B pad)
constexpr int SHARED_BYTES = STAGES * STAGE_BYTES > BM * C_ROW * 2 ? STAGES * STAGE_BYTES : BM * C_ROW * 2;

// d += a @ b on one m16n8k16 tile.
template <typename E> __forceinline__ void mma(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2]);
template <> __forceinline__ void mma<__half>(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
template <> __forceinline__ void mma<__nv_bfloat16>(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// Two fp32 values rounded to E, packed in 32 bits (lo first in memory), and back.
template <typename E> __forceinline__ unsigned pack2(float lo, float hi);
template <> __forceinline__ unsigned pack2<__half>(float lo, float hi) {
  __half2 h = __floats2half2_rn(lo, hi);
  return *reinterpret_cast<unsigned*>(&h);
}
template <> __forceinline__ unsigned pack2<__nv_bfloat16>(float lo, float hi) {
  __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<unsigned*>(&h);
}
__forceinline__ float2 load2(const __half* p) { return __half22float2(*reinterpret_cast<const __half2*>(p)); }
__forceinline__ float2 load2(const __nv_bfloat16* p) {
  return __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(p));
}

// gelu_tanh(u) = 0.5 u (1 + tanh(z)) = u / (1 + exp(-2z)), z = sqrt(2/pi) (u + 0.044715 u^3).
__forceinline__ float gelu_tanh(float u) {
  const float z = 0.7978845608f * (u + 0.044715f * u * u * u);
  return __fdividef(u, 1.0f + __expf(-2.0f * z));
}

// The fragments of one k16 step of a warp's 64 x 64 tile: A for its 4 m16 tiles, B for
// its 8 n8 tiles (mma.m16n8k16 register layouts).
struct Fragments {
  unsigned a[4][4];
  unsigned b[8][2];
};

// Where this thread's cp.async copies and ldmatrix reads go, as byte offsets within a
// stage (the swizzles of the header), and where its copies come from.
template <typename E, int K> struct Addresses {
  const E* a_src;  // A rows r and r + 64 of the block, chunk tid % 4
  const E* b_src;  // B rows r, r + 8, r + 16, r + 24 of the k tile, chunk tid % 32
  unsigned a_dst, b_dst;
  unsigned a_frag[2];  // ldmatrix.x4 of m tile 0, per k16 step; m tile i adds i * 16 rows
  unsigned b_frag[4];  // ldmatrix.x4.trans of n tiles 2j, 2j + 1 at k16 step 0

  __forceinline__ Addresses(const E* a, const E* b, i64 n, int warp_m, int warp_n) {
    const int tid = threadIdx.x, lane = tid % 32;
    // Rows r and r + 64 (or r + 8i) have the same swizzle, so one offset serves them all.
    const int a_row = tid / 4, a_chunk = tid % 4;
    a_src = a + a_row * i64(K) + a_chunk * 8;
    a_dst = a_row * (BK * 2) + ((a_chunk ^ ((a_row >> 1) % 4)) * 16);
    const int b_row = tid / 32, b_chunk = tid % 32;
    b_src = b + b_row * n + b_chunk * 8;
    b_dst = A_BYTES + b_row * (BN * 2) + ((b_chunk ^ (b_row % 8)) * 16);
    // A fragments (row-major [m][k]): lane l gives row l % 16, k chunk l / 16 of the m16 tile.
    const int a_lrow = warp_m * 64 + lane % 16;
#pragma unroll
    for (int ks = 0; ks < 2; ++ks)
      a_frag[ks] = a_lrow * (BK * 2) + (((2 * ks + lane / 16) ^ ((a_lrow >> 1) % 4)) * 16);
    // B fragments ([k][n], transposed by ldmatrix): lane l gives k row ((l / 8) & 1) * 8 + l % 8
    // and n chunk l / 16 of the two n8 tiles; its registers are {b0, b1} of each.
    const int b_lrow = ((lane / 8) & 1) * 8 + lane % 8;
#pragma unroll
    for (int j = 0; j < 4; ++j)
      b_frag[j] = A_BYTES + b_lrow * (BN * 2) + (warp_n * 8 + ((2 * j + lane / 16) ^ (b_lrow % 8))) * 16;
  }

  // Starts the copies of k tile kt into the stage at `stage` (a shared address).
  __forceinline__ void load_tile(unsigned stage, int kt, i64 n) const {
    const E* a = a_src + kt * BK;
    cp_async_16(stage + a_dst, a);
    cp_async_16(stage + a_dst + 64 * (BK * 2), a + 64 * i64(K));
    const E* b = b_src + i64(kt) * BK * n;
#pragma unroll
    for (int i = 0; i < 4; ++i) cp_async_16(stage + b_dst + i * 8 * (BN * 2), b + i * 8 * n);
  }

  __forceinline__ void load_fragments(Fragments& f, unsigned stage, int ks) const {
#pragma unroll
    for (int i = 0; i < 4; ++i) ldmatrix_x4(f.a[i], stage + a_frag[ks] + i * 16 * (BK * 2));
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      unsigned r[4];
      ldmatrix_x4_trans(r, stage + b_frag[j] + ks * 16 * (BN * 2));
      f.b[2 * j][0] = r[0];
      f.b[2 * j][1] = r[1];
      f.b[2 * j + 1][0] = r[2];
      f.b[2 * j + 1][1] = r[3];
    }
  }
};

template <typename E> __forceinline__ void multiply(float (&acc)[4][8][4], const Fragments& f) {
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 8; ++j) mma<E>(acc[i][j], f.a[i], f.b[j]);
}

template <typename E, int K, int BATCH, bool BIAS_GELU>
__forceinline__ void gemm_mma(const E* __restrict__ a, const E* __restrict__ b, const E* __restrict__ bias,
                              E* __restrict__ c, i64 m, i64 n) {
  static_assert(K % BK == 0 && BATCH >= 1 && BATCH <= 65535, "see why_unsupported");
  extern __shared__ __align__(128) unsigned char smem[];
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int warp_m = warp / 4, warp_n = warp % 4;

  // Grouped block order: groups of GROUP_M tile rows, walked column by column.
  const int tiles_m = int(m / BM), tiles_n = int(n / BN);
  const int group = GROUP_M * tiles_n;
  const int first_m = int(blockIdx.x) / group * GROUP_M;
  const int group_rows = min(tiles_m - first_m, GROUP_M);
  const int tile_m = first_m + int(blockIdx.x) % group % group_rows;
  const int tile_n = int(blockIdx.x) % group / group_rows;

  const i64 batch = blockIdx.y;
  a += batch * m * K + i64(tile_m) * BM * K;
  b += batch * K * n + i64(tile_n) * BN;
  c += batch * m * n + i64(tile_m) * BM * n + i64(tile_n) * BN;

  const Addresses<E, K> at(a, b, n, warp_m, warp_n);
  const unsigned base = shared_address(smem);
  constexpr int KT = K / BK;

  // Prologue: the first STAGES - 1 k tiles in flight. Every thread commits one group per
  // k tile, empty or not, so that wait_group counts tiles.
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < KT) at.load_tile(base + s * STAGE_BYTES, s, n);
    cp_async_commit();
  }
  cp_async_wait<STAGES - 2>();
  __syncthreads();

  float acc[4][8][4] = {};
  Fragments f[2];
  int read = 0;             // the stage holding k tile kt
  int write = STAGES - 1;   // the stage that k tile kt + STAGES - 1 goes to
  at.load_fragments(f[0], base, 0);
#pragma unroll 1
  for (int kt = 0; kt < KT; ++kt) {
    const unsigned stage = base + read * STAGE_BYTES;
    // k16 step 0: read step 1's fragments, refill the stage every warp finished reading
    // before the last barrier, multiply step 0.
    at.load_fragments(f[1], stage, 1);
    if (kt + STAGES - 1 < KT) at.load_tile(base + write * STAGE_BYTES, kt + STAGES - 1, n);
    cp_async_commit();
    multiply<E>(acc, f[0]);
    // k16 step 1: k tile kt + 1 must have landed (this thread's copies: wait_group; everyone's:
    // the barrier) before its step-0 fragments are read, while step 1 is multiplied.
    cp_async_wait<STAGES - 2>();
    __syncthreads();
    read = read + 1 == STAGES ? 0 : read + 1;
    write = write + 1 == STAGES ? 0 : write + 1;
    if (kt + 1 < KT) at.load_fragments(f[0], base + read * STAGE_BYTES, 0);
    multiply<E>(acc, f[1]);
  }

  // Epilogue: through shared memory, free once every warp is past its last ldmatrix.
  cp_async_wait<0>();
  __syncthreads();
  E* staged = reinterpret_cast<E*>(smem);
  const int g = lane / 4, t = lane % 4;
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const int row = warp_m * 64 + i * 16 + g, col = warp_n * 64 + j * 8 + 2 * t;
      float* v = acc[i][j];  // (row, col), (row, col + 1), (row + 8, col), (row + 8, col + 1)
      if constexpr (BIAS_GELU) {
        const float2 bb = load2(bias + i64(tile_n) * BN + col);
        v[0] = gelu_tanh(v[0] + bb.x);
        v[1] = gelu_tanh(v[1] + bb.y);
        v[2] = gelu_tanh(v[2] + bb.x);
        v[3] = gelu_tanh(v[3] + bb.y);
      }
      *reinterpret_cast<unsigned*>(staged + row * C_ROW + col) = pack2<E>(v[0], v[1]);
      *reinterpret_cast<unsigned*>(staged + (row + 8) * C_ROW + col) = pack2<E>(v[2], v[3]);
    }
  __syncthreads();
#pragma unroll
  for (int p = 0; p < BM / 8; ++p) {
    const int row = p * 8 + warp, chunk = lane;
    *reinterpret_cast<uint4*>(c + row * n + chunk * 8) =
        *reinterpret_cast<const uint4*>(staged + row * C_ROW + chunk * 8);
  }
}

}  // namespace gemm
)CUDA";

constexpr int kBlockM = 128, kBlockN = 256, kBlockK = 32;
constexpr int kThreads = 256;
constexpr int kStages = 4, kGroupM = 8;
// The pipeline's stages; the staged output tile (128 rows of 256 + 8 elements) fits in them.
constexpr unsigned kSharedBytes = kStages * (kBlockM * kBlockK + kBlockK * kBlockN) * 2;
constexpr int64_t kMaxBatch = 65535;  // the grid's y dimension

std::string element_type(DType t) {
  switch (t) {
    case DType::f16: return "__half";
    case DType::bf16: return "__nv_bfloat16";
    default: break;
  }
  throw Error(fmt::format("the hand-written GEMM supports f16 and bf16, not {}", dtype_name(t)));
}

std::string why_gemm_unsupported(const Problem& p) {
  std::vector<std::string> off;
  if (p.rows % kBlockM != 0) off.push_back(fmt::format("M = {} is no multiple of {}", p.rows, kBlockM));
  if (p.cols % kBlockN != 0) off.push_back(fmt::format("N = {} is no multiple of {}", p.cols, kBlockN));
  if (p.depth % kBlockK != 0) off.push_back(fmt::format("K = {} is no multiple of {}", p.depth, kBlockK));
  if (!off.empty())
    return fmt::format("{}x{}x{}: {} (the kernel has no edge handling: M and N must be multiples of its {}x{} block "
                       "tile, K of its k tile {})",
                       p.rows, p.cols, p.depth, fmt::join(off, ", "), kBlockM, kBlockN, kBlockK);
  if (p.batch < 1 || p.batch > kMaxBatch)
    return fmt::format("a batch of {}: the batch is the grid's y dimension, 1 to {}", p.batch, kMaxBatch);
  return "";
}

// One baseline per case; they differ in the entry's parameters and the epilogue.
Baseline gemm_baseline(const std::string& name, const std::string& op, bool bias_gelu) {
  auto build = [name, bias_gelu](const Problem& p) {
    require_supported(name, why_gemm_unsupported(p));
    const std::string e = element_type(p.dtype);
    const std::string entry = name + "_entry";
    BaselineKernel k;
    k.name = name;
    k.config = fmt::format("{{block {}x{}x{}, 8 warps of 64x64, mma.sync m16n8k16, {} cp.async stages, group {}{}}}",
                           kBlockM, kBlockN, kBlockK, kStages, kGroupM, bias_gelu ? ", bias + gelu_tanh epilogue" : "");
    k.source = std::string(kCommonCuda) + kTensorCoreCuda + kGemmCuda +
               fmt::format("\n// {name} {e}: M x N x K = {m}x{n}x{k}, batch {batch}.\n"
                           "static_assert(gemm::BM == {bm} && gemm::BN == {bn} && gemm::BK == {bk} && "
                           "gemm::THREADS == {threads} && gemm::SHARED_BYTES == {shared}, \"the launch's geometry\");\n"
                           "extern \"C\" __global__ void __launch_bounds__({threads}, 1) {entry}(\n"
                           "    const {e}* __restrict__ a, const {e}* __restrict__ b, {bias_param}{e}* __restrict__ c, "
                           "float*,\n    i64 rows, i64 cols) {{\n"
                           "  gemm::gemm_mma<{e}, {k}, {batch}, {bias_gelu}>(a, b, {bias}, c, rows, cols);\n}}\n",
                           fmt::arg("name", name), fmt::arg("e", e), fmt::arg("m", p.rows), fmt::arg("n", p.cols),
                           fmt::arg("k", p.depth), fmt::arg("batch", p.batch), fmt::arg("bm", kBlockM),
                           fmt::arg("bn", kBlockN), fmt::arg("bk", kBlockK), fmt::arg("threads", kThreads),
                           fmt::arg("shared", kSharedBytes), fmt::arg("entry", entry),
                           fmt::arg("bias_param", bias_gelu ? fmt::format("const {}* __restrict__ bias, ", e) : ""),
                           fmt::arg("bias_gelu", bias_gelu), fmt::arg("bias", bias_gelu ? "bias" : "nullptr"));
    const int64_t tiles = (p.rows / kBlockM) * (p.cols / kBlockN);
    k.launches.push_back({entry,
                          {static_cast<unsigned>(tiles), static_cast<unsigned>(p.batch)},
                          {static_cast<unsigned>(kThreads)},
                          kSharedBytes});
    return k;
  };
  return {name, op, {DType::f16, DType::bf16}, why_gemm_unsupported, build};
}

}  // namespace

std::vector<Baseline> gemm_baselines() {
  return {
      gemm_baseline("gemm_mma", "gemm", false),
      gemm_baseline("gemm_batched_mma", "gemm_batched", false),
      gemm_baseline("gemm_bias_gelu_mma", "gemm_bias_gelu", true),
  };
}

}  // namespace kiln::baselines
