// Hand-written FlashAttention-2 forward on mma.sync: o = softmax(scale q k^T) v for q
// [B, H, Sq, D] and k, v [B, Hkv, Skv, D] (query head h reads key head h / (H / Hkv)),
// causal (top-left aligned) or not, head dim 64 or 128, f16 or bf16, fp32 softmax and
// sums. Written as FlashAttention-2 lays it out, not as Kiln's generated kernel:
//
//   block     128 query rows of one head: 4 warps of 32 rows each (two m16 tiles), so
//             that every K and V fragment a warp loads from shared memory feeds two
//             products; two blocks an SM (__launch_bounds__(128, 2)).
//   keys      tiles of 64 keys: K and V double-buffered through shared memory by cp.async
//             (16 bytes, zero-filled past the end), one group a tile.
//   Q         stays in shared memory and is re-read through ldmatrix for each product
//             (registers hold the two m16 tiles' output instead: 128 at head dim 128).
//   softmax   online, per row: running max and sum, exp2 with the scale folded into
//             log2 e, the output rescaled when the max grows; P goes from the score
//             registers into the second product's A fragments.
//   causal    tiles past the block's last row skipped; heavy blocks launched first.
//   swizzle   16-byte chunk c of row r at c ^ (r % 8): ldmatrix's 8 rows hit 8 banks.
//   epilogue  o / sum through the warp's rows of the Q tile, stored as 16-byte vectors.
// Decoding (fewer than 64 queries) is not covered: it needs the keys split over blocks.
#include <fmt/format.h>

#include <cmath>
#include <string>
#include <vector>

#include "baselines/cuda_common.h"
#include "baselines/families.h"
#include "ir/error.h"

namespace kiln::baselines {

namespace {

const char* const kAttentionCuda = R"CUDA(
namespace fa2 {

constexpr int BR = 128, THREADS = 128;  // 4 warps x 32 query rows; BC keys a tile
constexpr int CHUNKS = D / 8;                    // 16-byte chunks a row
constexpr int ROW_BYTES = D * 2;
constexpr int Q_BYTES = BR * ROW_BYTES, KV_BYTES = BC * ROW_BYTES;
constexpr int SHARED_BYTES = Q_BYTES + 4 * KV_BYTES;  // Q, then K and V of two stages

// Byte offset of chunk c of row r in a swizzled tile.
__forceinline__ unsigned at(int r, int c) { return (unsigned)(r * ROW_BYTES + ((c ^ (r & 7)) << 4)); }

// d += a b on one m16n8k16 tile, fp32 sums.
__forceinline__ void mma(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
  if constexpr (BF16)
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  else
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__forceinline__ unsigned pack(float lo, float hi) {
  typename Pair16<E>::T h = Pair16<E>::from_floats(lo, hi);
  return *reinterpret_cast<unsigned*>(&h);
}

__forceinline__ float exp2_approx(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// Rows [row0, row0 + ROWS) of a [rows, D] matrix into a swizzled tile; zeros past `rows`.
template <int ROWS> __forceinline__ void load_tile(unsigned tile, const E* src, int row0, int rows) {
#pragma unroll
  for (int i = 0; i < ROWS * CHUNKS / THREADS; ++i) {
    const int c = (int)threadIdx.x + i * THREADS, r = c / CHUNKS, chunk = c % CHUNKS;
    const bool inside = row0 + r < rows;
    cp_async_16(tile + at(r, chunk), src + (inside ? (i64)(row0 + r) * D + chunk * 8 : 0), inside ? 16u : 0u);
  }
}

__device__ __forceinline__ void forward(const E* __restrict__ q, const E* __restrict__ k, const E* __restrict__ v,
                                        E* __restrict__ o) {
  extern __shared__ __align__(128) unsigned char shared[];
  const unsigned base = shared_address(shared);
  const int warp = (int)threadIdx.x / 32, lane = (int)threadIdx.x % 32;
  const int g = lane / 4, t = lane % 4;  // mma fragment coordinates: row g (and g + 8), columns 2t, 2t + 1
  const int q0 = (CAUSAL ? (int)(gridDim.x - 1 - blockIdx.x) : (int)blockIdx.x) * BR;
  const i64 head = blockIdx.y;
  const E* qh = q + head * SQ * D;
  const E* kh = k + head / GROUP * SKV * D;
  const E* vh = v + head / GROUP * SKV * D;
  const int kv_end = CAUSAL ? min(SKV, q0 + BR) : SKV;
  const int tiles = (kv_end + BC - 1) / BC;

  load_tile<BR>(base, qh, q0, SQ);
  load_tile<BC>(base + Q_BYTES, kh, 0, SKV);
  load_tile<BC>(base + Q_BYTES + KV_BYTES, vh, 0, SKV);
  cp_async_commit();

  float acc[2][D / 8][4];  // the warp's 32 output rows: two m16 tiles of D / 8 n8 tiles
#pragma unroll
  for (int mi = 0; mi < 2; ++mi)
#pragma unroll
    for (int n = 0; n < D / 8; ++n) acc[mi][n][0] = acc[mi][n][1] = acc[mi][n][2] = acc[mi][n][3] = 0.0f;
  float row_max[2][2], row_sum[2][2];  // [m16 tile][row g or g + 8]
#pragma unroll
  for (int mi = 0; mi < 2; ++mi)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      row_max[mi][h] = -INFINITY;
      row_sum[mi][h] = 0.0f;
    }
  const int warp_row0 = q0 + warp * 32;
  // This lane's ldmatrix offsets within a tile, for the four pairs of chunks of a
  // 128-byte row segment (chunk 2j or 2j + 1): the row's swizzle is a function of the
  // lane alone, so every other term of an address is an immediate. Q: rows lane % 16 of
  // an m16 tile, chunk 2j + lane / 16. K: keys lane % 8 + 8 (lane / 16), chunk 2j +
  // (lane / 8) % 2. V (transposed): keys lane % 8 + 8 ((lane / 8) % 2), chunk 2j + lane / 16.
  unsigned q_frag[4], k_frag[4], v_frag[4];
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    q_frag[j] = at(lane % 16, 2 * j + lane / 16);
    k_frag[j] = at(lane % 8 + (lane / 16) * 8, 2 * j + (lane / 8) % 2);
    v_frag[j] = at(lane % 8 + ((lane / 8) % 2) * 8, 2 * j + lane / 16);
  }

  for (int kt = 0; kt < tiles; ++kt) {
    // The next tile into the other stage (free since the barrier ending the last tile).
    if (kt + 1 < tiles) {
      const unsigned next = base + Q_BYTES + ((kt + 1) & 1) * 2 * KV_BYTES;
      load_tile<BC>(next, kh, (kt + 1) * BC, SKV);
      load_tile<BC>(next + KV_BYTES, vh, (kt + 1) * BC, SKV);
    }
    cp_async_commit();
    cp_async_wait<1>();
    __syncthreads();
    const unsigned ks = base + Q_BYTES + (kt & 1) * 2 * KV_BYTES, vs = ks + KV_BYTES;
    const int kv0 = kt * BC;

    float s[2][BC / 8][4];
#pragma unroll
    for (int mi = 0; mi < 2; ++mi)
#pragma unroll
      for (int n = 0; n < BC / 8; ++n) s[mi][n][0] = s[mi][n][1] = s[mi][n][2] = s[mi][n][3] = 0.0f;
    // The fragments of step kk + 1 load while step kk's products run. The products are
    // volatile asm, so that the compiler keeps this order rather than issuing every
    // load of the tile first (which held 128 registers of fragments and spilled).
    unsigned a[2][2][4], b[2][BC / 16][4];  // [buffer][m16 tile or 16 keys][fragment]
    auto load_s_fragments = [&](int kk, int buf) {
#pragma unroll
      for (int mi = 0; mi < 2; ++mi) ldmatrix_x4(a[buf][mi], base + q_frag[kk % 4] + (warp * 32 + mi * 16) * ROW_BYTES + (kk / 4) * 128);
#pragma unroll
      for (int nj = 0; nj < BC / 16; ++nj)  // keys nj * 16 + 0..7 (b[0], b[1]) and 8..15 (b[2], b[3])
        ldmatrix_x4(b[buf][nj], ks + k_frag[kk % 4] + nj * 16 * ROW_BYTES + (kk / 4) * 128);
    };
    load_s_fragments(0, 0);
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
      if (kk + 1 < D / 16) load_s_fragments(kk + 1, (kk + 1) % 2);
#pragma unroll
      for (int nj = 0; nj < BC / 16; ++nj)
#pragma unroll
        for (int mi = 0; mi < 2; ++mi) {
          mma(s[mi][2 * nj], a[kk % 2][mi], b[kk % 2][nj][0], b[kk % 2][nj][1]);
          mma(s[mi][2 * nj + 1], a[kk % 2][mi], b[kk % 2][nj][2], b[kk % 2][nj][3]);
        }
    }

    // Keys past the end (and, under the causal mask, after the query) count as -inf.
    if (kv0 + BC > SKV || (CAUSAL && kv0 + BC - 1 > warp_row0)) {
#pragma unroll
      for (int mi = 0; mi < 2; ++mi)
#pragma unroll
        for (int n = 0; n < BC / 8; ++n)
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const int row = warp_row0 + mi * 16 + g + (e / 2) * 8, key = kv0 + n * 8 + 2 * t + e % 2;
            if (key >= SKV || (CAUSAL && key > row)) s[mi][n][e] = -INFINITY;
          }
    }

#pragma unroll
    for (int mi = 0; mi < 2; ++mi)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        float mx = row_max[mi][h];
#pragma unroll
        for (int n = 0; n < BC / 8; ++n) mx = fmaxf(mx, fmaxf(s[mi][n][2 * h], s[mi][n][2 * h + 1]));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
        const float shift = mx == -INFINITY ? 0.0f : mx * SCALE_LOG2;  // a row with no key yet: exp2(-inf) = 0
        const float rescale = exp2_approx(row_max[mi][h] * SCALE_LOG2 - shift);
        row_max[mi][h] = mx;
        float sum = 0.0f;
#pragma unroll
        for (int n = 0; n < BC / 8; ++n) {
          s[mi][n][2 * h] = exp2_approx(s[mi][n][2 * h] * SCALE_LOG2 - shift);
          s[mi][n][2 * h + 1] = exp2_approx(s[mi][n][2 * h + 1] * SCALE_LOG2 - shift);
          sum += s[mi][n][2 * h] + s[mi][n][2 * h + 1];
        }
        row_sum[mi][h] = row_sum[mi][h] * rescale + sum;
#pragma unroll
        for (int n = 0; n < D / 8; ++n) {
          acc[mi][n][2 * h] *= rescale;
          acc[mi][n][2 * h + 1] *= rescale;
        }
      }

#pragma unroll
    for (int kk = 0; kk < BC / 16; ++kk) {
      unsigned p[2][4];
#pragma unroll
      for (int mi = 0; mi < 2; ++mi) {
        p[mi][0] = pack(s[mi][2 * kk][0], s[mi][2 * kk][1]);
        p[mi][1] = pack(s[mi][2 * kk][2], s[mi][2 * kk][3]);
        p[mi][2] = pack(s[mi][2 * kk + 1][0], s[mi][2 * kk + 1][1]);
        p[mi][3] = pack(s[mi][2 * kk + 1][2], s[mi][2 * kk + 1][3]);
      }
      // V's fragments for D columns dj * 16 + 0..7 (v[.][0], v[.][1]) and 8..15 at these 16
      // keys, one step ahead of their products.
      unsigned vf[2][4];
      ldmatrix_x4_trans(vf[0], vs + v_frag[0] + kk * 16 * ROW_BYTES);
#pragma unroll
      for (int dj = 0; dj < D / 16; ++dj) {
        if (dj + 1 < D / 16) ldmatrix_x4_trans(vf[(dj + 1) % 2], vs + v_frag[(dj + 1) % 4] + kk * 16 * ROW_BYTES + ((dj + 1) / 4) * 128);
#pragma unroll
        for (int mi = 0; mi < 2; ++mi) {
          mma(acc[mi][2 * dj], p[mi], vf[dj % 2][0], vf[dj % 2][1]);
          mma(acc[mi][2 * dj + 1], p[mi], vf[dj % 2][2], vf[dj % 2][3]);
        }
      }
    }
    __syncthreads();  // every warp is done with this stage before the next tile's copies land in it
  }
  cp_async_wait<0>();

  // o / sum into this warp's 32 rows of the Q tile (only it reads them), then out.
#pragma unroll
  for (int mi = 0; mi < 2; ++mi)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      float l = row_sum[mi][h];
      l += __shfl_xor_sync(0xffffffffu, l, 1);
      l += __shfl_xor_sync(0xffffffffu, l, 2);
      const float inverse = l > 0.0f ? 1.0f / l : 0.0f;
      const int r = warp * 32 + mi * 16 + g + h * 8;
#pragma unroll
      for (int n = 0; n < D / 8; ++n)
        *reinterpret_cast<unsigned*>(shared + at(r, n) + t * 4) =
            pack(acc[mi][n][2 * h] * inverse, acc[mi][n][2 * h + 1] * inverse);
    }
  __syncwarp();
  E* oh = o + head * SQ * D;
#pragma unroll
  for (int i = 0; i < 32 * CHUNKS / 32; ++i) {
    const int c = lane + i * 32, r = warp * 32 + c / CHUNKS, chunk = c % CHUNKS;
    if (q0 + r < SQ)
      *reinterpret_cast<uint4*>(oh + (i64)(q0 + r) * D + chunk * 8) =
          *reinterpret_cast<const uint4*>(shared + at(r, chunk));
  }
}

}  // namespace fa2
)CUDA";

constexpr int kBlockRows = 128, kThreads = 128, kMaxHeads = 65535;

// Keys a tile: 64, or 32 at head dim 128, where the scores of 64 keys next to the 128
// output registers leave too few for the addresses and ptxas spills.
int key_tile(const Problem& p) { return p.cols == 128 ? 32 : 64; }

std::string element_type(DType t) {
  if (t == DType::f16) return "__half";
  if (t == DType::bf16) return "__nv_bfloat16";
  throw Error(fmt::format("the hand-written attention supports f16 and bf16, not {}", dtype_name(t)));
}

// rows = Sq, cols = D, batch x heads query heads, kv_heads key heads of kv_len keys.
std::string why_attention_unsupported(const Problem& p) {
  if (p.cols != 64 && p.cols != 128) return fmt::format("head dim {} (the kernel takes 64 or 128)", p.cols);
  if (p.rows < 64) return fmt::format("{} queries: decoding needs the keys split over blocks, which this kernel does not do", p.rows);
  if (p.heads < 1 || p.kv_heads < 1 || p.heads % p.kv_heads != 0)
    return fmt::format("{} query heads over {} key heads", p.heads, p.kv_heads);
  if (p.batch * p.heads > kMaxHeads) return fmt::format("{} heads: the grid's y covers at most {}", p.batch * p.heads, kMaxHeads);
  return "";
}

Baseline attention_baseline(const std::string& name, const std::string& op) {
  auto build = [name, op](const Problem& p) {
    require_supported(name, why_attention_unsupported(p));
    const bool causal = p.causal || op == "attention_causal";
    const std::string e = element_type(p.dtype);
    const std::string entry = name + "_entry";
    const int shared = (kBlockRows + 4 * key_tile(p)) * static_cast<int>(p.cols) * 2;
    BaselineKernel k;
    k.name = name;
    k.config = fmt::format("{{FlashAttention-2: 128 query rows of 4 warps x 32, {} keys a tile, 2 cp.async stages, "
                           "mma.sync m16n8k16{}}}",
                           key_tile(p), causal ? ", causal" : "");
    k.source = std::string(kCommonCuda) + kTensorCoreCuda +
               fmt::format("\n// {name} {e}: {bh} heads of {sq} queries x {skv} keys, head dim {d}{causal_note}.\n"
                           "typedef {e} E;\nconstexpr bool BF16 = {bf16};\n"
                           "constexpr int D = {d}, BC = {bc}, SQ = {sq}, SKV = {skv}, GROUP = {group};\n"
                           "constexpr bool CAUSAL = {causal};\nconstexpr float SCALE_LOG2 = {scale};\n",
                           fmt::arg("name", name), fmt::arg("e", e), fmt::arg("bh", p.batch * p.heads),
                           fmt::arg("sq", p.rows), fmt::arg("skv", p.kv_len), fmt::arg("d", p.cols),
                           fmt::arg("group", p.heads / p.kv_heads), fmt::arg("causal", causal),
                           fmt::arg("bf16", p.dtype == DType::bf16), fmt::arg("bc", key_tile(p)),
                           fmt::arg("causal_note", causal ? ", causal" : ""),
                           fmt::arg("scale", float_literal(1.4426950408889634 / std::sqrt(static_cast<double>(p.cols))))) +
               kAttentionCuda +
               fmt::format("static_assert(fa2::SHARED_BYTES == {shared} && fa2::THREADS == {threads}, \"the launch\");\n"
                           "extern \"C\" __global__ void __launch_bounds__({threads}, 2) {entry}(\n"
                           "    const E* __restrict__ q, const E* __restrict__ k, const E* __restrict__ v, "
                           "E* __restrict__ o, float*, i64, i64) {{\n"
                           "  fa2::forward(q, k, v, o);\n}}\n",
                           fmt::arg("shared", shared), fmt::arg("threads", kThreads), fmt::arg("entry", entry));
    k.launches.push_back({entry,
                          {static_cast<unsigned>((p.rows + kBlockRows - 1) / kBlockRows),
                           static_cast<unsigned>(p.batch * p.heads)},
                          {static_cast<unsigned>(kThreads)},
                          static_cast<unsigned>(shared)});
    return k;
  };
  return {name, op, {DType::f16, DType::bf16}, why_attention_unsupported, build};
}

}  // namespace

std::vector<Baseline> attention_baselines() {
  return {
      attention_baseline("attention_fa2", "attention"),
      attention_baseline("attention_causal_fa2", "attention_causal"),
  };
}

}  // namespace kiln::baselines
