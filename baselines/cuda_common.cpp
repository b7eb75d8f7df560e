// The device helpers shared by every baseline, and the row schedule.
#include "baselines/cuda_common.h"

#include <fmt/format.h>

#include <algorithm>

#include "ir/error.h"

namespace kiln::baselines {

const char* const kTensorCoreCuda = R"CUDA(
__forceinline__ unsigned shared_address(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }
__forceinline__ void cp_async_16(unsigned dst, const void* src, unsigned bytes = 16u) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(bytes));
}
__forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
// Waits until at most N of this thread's committed groups are still in flight.
template <int N> __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }
__forceinline__ void ldmatrix_x4(unsigned (&r)[4], unsigned addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr) : "memory");
}
__forceinline__ void ldmatrix_x4_trans(unsigned (&r)[4], unsigned addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr) : "memory");
}
)CUDA";

const char* const kCommonCuda = R"CUDA(
#include <cuda_fp16.h>
#include <cuda_bf16.h>

typedef long long i64;
#ifndef INFINITY
#define INFINITY __int_as_float(0x7f800000)  // NVRTC has no <math.h>
#endif

__forceinline__ float to_float(float v) { return v; }
__forceinline__ float to_float(__half v) { return __half2float(v); }
__forceinline__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
template <typename T> __forceinline__ T from_float(float v);
template <> __forceinline__ float from_float<float>(float v) { return v; }
template <> __forceinline__ __half from_float<__half>(float v) { return __float2half_rn(v); }
template <> __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }
// A value rounded to T's precision and back, as a stored intermediate would be.
template <typename T> __forceinline__ float round_to(float v) { return to_float(from_float<T>(v)); }

// The two-element type of a 16-bit float and its conversions to and from fp32 pairs.
template <typename E> struct Pair16;
template <> struct Pair16<__half> {
  typedef __half2 T;
  static __forceinline__ float2 to_float2(T h) { return __half22float2(h); }
  static __forceinline__ T from_floats(float a, float b) { return __floats2half2_rn(a, b); }
};
template <> struct Pair16<__nv_bfloat16> {
  typedef __nv_bfloat162 T;
  static __forceinline__ float2 to_float2(T h) { return __bfloat1622float2(h); }
  static __forceinline__ T from_floats(float a, float b) { return __floats2bfloat162_rn(a, b); }
};
template <typename E> union Pack16 {
  uint4 bits;
  typename Pair16<E>::T h[4];
};

// W consecutive elements at p as fp32; one 16-byte access when W * sizeof(T) == 16
// (p is then 16-byte aligned), scalar accesses otherwise.
template <int W> __forceinline__ void load_vec(const float* p, float* v) {
  if constexpr (W == 4) {
    const float4 q = *reinterpret_cast<const float4*>(p);
    v[0] = q.x; v[1] = q.y; v[2] = q.z; v[3] = q.w;
  } else {
#pragma unroll
    for (int k = 0; k < W; ++k) v[k] = p[k];
  }
}
template <typename E, int W> __forceinline__ void load_vec16(const E* p, float* v) {
  if constexpr (W == 8) {
    Pack16<E> q;
    q.bits = *reinterpret_cast<const uint4*>(p);
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const float2 f = Pair16<E>::to_float2(q.h[k]);
      v[2 * k] = f.x;
      v[2 * k + 1] = f.y;
    }
  } else {
#pragma unroll
    for (int k = 0; k < W; ++k) v[k] = to_float(p[k]);
  }
}
template <int W> __forceinline__ void load_vec(const __half* p, float* v) { load_vec16<__half, W>(p, v); }
template <int W> __forceinline__ void load_vec(const __nv_bfloat16* p, float* v) { load_vec16<__nv_bfloat16, W>(p, v); }
template <int W> __forceinline__ void store_vec(float* p, const float* v) {
  if constexpr (W == 4) {
    *reinterpret_cast<float4*>(p) = make_float4(v[0], v[1], v[2], v[3]);
  } else {
#pragma unroll
    for (int k = 0; k < W; ++k) p[k] = v[k];
  }
}
template <typename E, int W> __forceinline__ void store_vec16(E* p, const float* v) {
  if constexpr (W == 8) {
    Pack16<E> q;
#pragma unroll
    for (int k = 0; k < 4; ++k) q.h[k] = Pair16<E>::from_floats(v[2 * k], v[2 * k + 1]);
    *reinterpret_cast<uint4*>(p) = q.bits;
  } else {
#pragma unroll
    for (int k = 0; k < W; ++k) p[k] = from_float<E>(v[k]);
  }
}
template <int W> __forceinline__ void store_vec(__half* p, const float* v) { store_vec16<__half, W>(p, v); }
template <int W> __forceinline__ void store_vec(__nv_bfloat16* p, const float* v) { store_vec16<__nv_bfloat16, W>(p, v); }

struct SumOp {
  __forceinline__ float operator()(float a, float b) const { return a + b; }
};
struct MaxOp {
  __forceinline__ float operator()(float a, float b) const { return fmaxf(a, b); }
};

// Combines `v` over the T threads of a row (T a power of two; rows are T consecutive
// threads of the block) and gives every one of them the result. Up to a warp:
// shuffles within the row's lanes. Beyond: shuffles, then each warp's partial through
// `scratch` (32 floats of shared memory), combined in warp order so that results are
// the same bits on every run. Every thread of the block must call it.
template <int T, typename Op> __forceinline__ float row_all_reduce(float v, Op op, float* scratch) {
  constexpr int lanes = T < 32 ? T : 32;
#pragma unroll
  for (int offset = lanes / 2; offset > 0; offset /= 2) v = op(v, __shfl_xor_sync(0xffffffffu, v, offset));
  if constexpr (T > 32) {
    constexpr int warps = T / 32;
    const int warp = threadIdx.x / 32;
    if (threadIdx.x % 32 == 0) scratch[warp] = v;
    __syncthreads();
    const int first = warp / warps * warps;
    v = scratch[first];
#pragma unroll
    for (int i = 1; i < warps; ++i) v = op(v, scratch[first + i]);
    __syncthreads();  // scratch is free again for the next reduction
  }
  return v;
}
)CUDA";

std::string cuda_type(DType t) {
  switch (t) {
    case DType::f16: return "__half";
    case DType::bf16: return "__nv_bfloat16";
    case DType::f32: return "float";
    default: break;
  }
  throw Error(fmt::format("hand-written baselines support f16, bf16 and f32, not {}", dtype_name(t)));
}

int vector_width(DType t) { return 16 / dtype_bytes(t); }

std::string float_literal(double v) { return fmt::format("{:.9e}f", v); }

void require_supported(const std::string& name, const std::string& why) {
  if (!why.empty()) throw Error(fmt::format("baseline {}: not supported: {}", name, why));
}

std::string RowSchedule::str() const {
  return fmt::format("threads/row = {}, rows/block = {}, vec = {}, accesses/thread = {}", threads_per_row,
                     rows_per_block, vec, accesses_per_thread);
}

namespace {

int64_t next_pow2(int64_t v) {
  int64_t p = 1;
  while (p < v) p *= 2;
  return p;
}

}  // namespace

RowSchedule row_schedule(DType t, int64_t rows, int64_t cols, int target_accesses) {
  if (rows < 1 || cols < 1) throw Error(fmt::format("a row schedule needs rows and cols >= 1, got {}x{}", rows, cols));
  RowSchedule s;
  s.vec = cols % vector_width(t) == 0 ? vector_width(t) : 1;
  const int64_t accesses = (cols + s.vec - 1) / s.vec;
  // Scalar accesses move less each, so a thread makes more of them.
  const int64_t target = s.vec == 1 ? int64_t{target_accesses} * 4 : target_accesses;
  s.threads_per_row = static_cast<int>(std::clamp<int64_t>(next_pow2((accesses + target - 1) / target), 1, 1024));
  s.accesses_per_thread = static_cast<int>((accesses + s.threads_per_row - 1) / s.threads_per_row);
  s.rows_per_block = s.threads_per_row >= 256 ? 1 : 256 / s.threads_per_row;
  const int64_t groups = (rows + s.rows_per_block - 1) / s.rows_per_block;
  s.grid = static_cast<unsigned>(std::min<int64_t>(groups, int64_t{1} << 30));
  return s;
}

bool row_fits_in_registers(DType t, int64_t rows, int64_t cols) {
  RowSchedule s = row_schedule(t, rows, cols);
  return s.accesses_per_thread * s.vec <= kMaxRegisterValues;
}

}  // namespace kiln::baselines
