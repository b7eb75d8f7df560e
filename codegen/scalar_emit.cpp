// The op -> CUDA expression table and the conversions around it. The formulas are
// the reference interpreter's (ir/interpreter_elementwise.cpp), evaluated in fp32:
// i32 arithmetic saturates as the interpreter's rounding to i32 does, and max / min
// propagate NaN.
#include "codegen/scalar_emit.h"

#include <fmt/format.h>

#include <cmath>

#include "codegen/integer_reduce.h"
#include "ir/error.h"

namespace kiln::codegen {

using ir::OpKind;

namespace {

// One row per op (per variant: gelu's `approximate`): the expression for float
// registers and for i32 registers ({0}, {1}, {2} are the operands); null where the
// op table rejects that type. An i1 operand (eq, ne, select's branches) uses the i32
// column, which is written to suit bool too.
struct Rule {
  OpKind op;
  const char* variant;
  const char* on_float;
  const char* on_int;
};

constexpr Rule kRules[] = {
    {OpKind::Neg, nullptr, "(-{0})", "kiln_sat_i32(-(long long){0})"},
    {OpKind::Abs, nullptr, "fabsf({0})", "kiln_abs_i32({0})"},
    {OpKind::Exp, nullptr, "expf({0})", nullptr},
    {OpKind::Exp2, nullptr, "exp2f({0})", nullptr},
    {OpKind::Log, nullptr, "logf({0})", nullptr},
    {OpKind::Sqrt, nullptr, "sqrtf({0})", nullptr},
    {OpKind::Rsqrt, nullptr, "rsqrtf({0})", nullptr},
    {OpKind::Tanh, nullptr, "tanhf({0})", nullptr},
    {OpKind::Sigmoid, nullptr, "(1.0f / (1.0f + expf(-{0})))", nullptr},
    {OpKind::Relu, nullptr, "({0} < 0.0f ? 0.0f : {0})", nullptr},  // keeps NaN
    // 0.5 x (1 + erf(x / sqrt 2)) as 0.5 x erfc(-x / sqrt 2): for x below about -4, 1 + erf
    // cancels to 0 in fp32 while erfc keeps the tiny result (gelu(-6) = -5.9e-9, not -0).
    {OpKind::Gelu, "none", "(0.5f * {0} * erfcf({0} * -0.70710678118654752f))", nullptr},
    // 0.5 x (1 + tanh(u)) is x sigmoid(2 u) = x / (1 + exp(-2 u)): see kiln_gelu_tanh.
    {OpKind::Gelu, "tanh", "kiln_gelu_tanh({0})", nullptr},
    {OpKind::Silu, nullptr, "({0} * (1.0f / (1.0f + expf(-{0}))))", nullptr},
    {OpKind::Add, nullptr, "({0} + {1})", "kiln_sat_i32((long long){0} + {1})"},
    {OpKind::Sub, nullptr, "({0} - {1})", "kiln_sat_i32((long long){0} - {1})"},
    {OpKind::Mul, nullptr, "({0} * {1})", "kiln_sat_i32((long long){0} * {1})"},
    {OpKind::Div, nullptr, "({0} / {1})", "kiln_div_i32({0}, {1})"},
    {OpKind::Max, nullptr, "kiln_max({0}, {1})", "({0} > {1} ? {0} : {1})"},
    {OpKind::Min, nullptr, "kiln_min({0}, {1})", "({0} < {1} ? {0} : {1})"},
    {OpKind::Pow, nullptr, "powf({0}, {1})", nullptr},
    // An ordered float compare also tests its operands for NaN (kiln_is_number says why).
    {OpKind::Lt, nullptr, "({0} < {1} && kiln_is_number({0}) && kiln_is_number({1}))", "({0} < {1})"},
    {OpKind::Le, nullptr, "({0} <= {1} && kiln_is_number({0}) && kiln_is_number({1}))", "({0} <= {1})"},
    {OpKind::Gt, nullptr, "({0} > {1} && kiln_is_number({0}) && kiln_is_number({1}))", "({0} > {1})"},
    {OpKind::Ge, nullptr, "({0} >= {1} && kiln_is_number({0}) && kiln_is_number({1}))", "({0} >= {1})"},
    {OpKind::Eq, nullptr, "({0} == {1} && kiln_is_number({0}) && kiln_is_number({1}))", "({0} == {1})"},
    {OpKind::Ne, nullptr, "({0} != {1})", "({0} != {1})"},
    {OpKind::Select, nullptr, "({0} ? {1} : {2})", "({0} ? {1} : {2})"},
};

// Listed callees first; helper_definitions keeps this order.
constexpr DeviceHelper kHelpers[] = {
    // A split's ticket, taken by one thread after a barrier over the writers of its
    // partials: the count before this arrival. As release, the add publishes every write
    // the barrier ordered before it; as acquire, the last arrival's reads after its next
    // barrier see every other split's partials. It replaces a __threadfence on each side,
    // which is fence.sc: a MEMBAR.SC.GPU that waits on every outstanding access of the SM,
    // twice on the path of the last arrival.
    {"kiln_take_ticket",
     "static __device__ __forceinline__ unsigned kiln_take_ticket(void* ticket) {\n"
     "  unsigned before;\n"
     "  asm volatile(\"atom.acq_rel.gpu.global.add.u32 %0, [%1], 1;\" : \"=r\"(before) : \"l\"(ticket) : \"memory\");\n"
     "  return before;\n}\n"},
    // ptxas (CUDA 13.0) compiles an ordered compare of a value it knows is not negative
    // (an abs, a square) against zero or less to the constant true, NaN or not: `fabsf(x)
    // >= 0` and `x * x >= 0` become 1 (seen in the SASS). An integer test of the bits,
    // which it keeps, gives NaN the false that IEEE and the reference give it; on a
    // constant operand NVRTC folds the test away.
    {"kiln_is_number",
     "static __device__ __forceinline__ bool kiln_is_number(float x) {\n"
     "  return (__float_as_uint(x) & 0x7fffffffu) <= 0x7f800000u;\n}\n"},
    // gelu (tanh) as x sigmoid(2 u), u = sqrt(2 / pi) (x + 0.044715 x^3): exp(-2 u) is
    // exp2(x (c1 + c2 x^2)) with the constants folded (c1 = -2 sqrt(2 / pi) log2(e), c2 =
    // 0.044715 c1), then one reciprocal: two multifunction-unit ops and five others an
    // element, no branch. A GEMM epilogue runs it on every element while the Tensor Cores
    // wait: tanhf took 11 more instructions an element, an IEEE reciprocal a call to its
    // slow path, and __expf / __fdividef seven multiplies and a compare for their ranges.
    // Past exp2's range the divisor is inf and the product -0, gelu's limit; below it the
    // exponential flushes to 0 and the result is x.
    {"kiln_gelu_tanh",
     "static __device__ __forceinline__ float kiln_gelu_tanh(float x) {\n"
     "  const float a = x * fmaf(x * x, -0.10294324f, -2.3022082f);\n"
     "  float e, r;\n"
     "  asm(\"ex2.approx.ftz.f32 %0, %1;\" : \"=f\"(e) : \"f\"(a));\n"
     "  asm(\"rcp.approx.ftz.f32 %0, %1;\" : \"=f\"(r) : \"f\"(1.0f + e));\n"
     "  return x * r;\n}\n"},
    // gelu (erf) for a result of 16 bits or fewer: x Phi(x), Phi(-|x|) = t 2^(a) with t = 1 /
    // (1 + 0.265 |x|) and a = -x^2 log2(e) / 2 + P(t), P of degree 8 fitted by
    // scripts/fit-gelu-erf.py (erfc's relative error 7.5e-8 before fp32 rounding). Two
    // multifunction-unit ops and 16 others an element, no branch, where erfcf takes 3 and
    // about 43. Within 1.5e-6 relative for x above -5 and 3.3e-6 down to -9 (the exponent's
    // fp32 rounding): a few hundredths of an f16 or bf16 spacing. Below fp32's least normal
    // (bf16 results past x = -13.1) it flushes to zero. An f32 result keeps erfcf.
    {"kiln_gelu_erf_short",
     "static __device__ __forceinline__ float kiln_gelu_erf_short(float x) {\n"
     "  const float ax = fabsf(x);\n"
     "  float t, e;\n"
     "  asm(\"rcp.approx.ftz.f32 %0, %1;\" : \"=f\"(t) : \"f\"(fmaf(ax, 0.265165031f, 1.0f)));\n"
     "  float p = fmaf(-0.348154575f, t, 1.73596454f);\n"
     "  p = fmaf(p, t, -3.26651549f);\n"
     "  p = fmaf(p, t, 2.85276556f);\n"
     "  p = fmaf(p, t, -1.51643717f);\n"
     "  p = fmaf(p, t, 0.82105428f);\n"
     "  p = fmaf(p, t, 0.506983757f);\n"
     "  p = fmaf(p, t, 1.4557693f);\n"
     "  p = fmaf(p, t, -3.24143028f);\n"
     "  asm(\"ex2.approx.ftz.f32 %0, %1;\" : \"=f\"(e) : \"f\"(fmaf(ax, ax * -0.721347511f, p)));\n"
     "  const float h = t * e;  // Phi(-|x|)\n"
     "  return x * (x > 0.0f ? 1.0f - h : h);\n}\n"},
    {"kiln_sat_i32",
     "static __device__ __forceinline__ int kiln_sat_i32(long long v) {\n"
     "  return v > 2147483647LL ? 2147483647 : v < -2147483648LL ? (-2147483647 - 1) : (int)v;\n}\n"},
    {"kiln_div_i32",  // i32 division truncates; dividing by zero gives 0, as Kiln defines it
     "static __device__ __forceinline__ int kiln_div_i32(int a, int b) {\n"
     "  return b == 0 ? 0 : kiln_sat_i32((long long)a / b);\n}\n"},
    // fp8: round to nearest even, saturating to the largest finite value (as the reference).
    {"kiln_float_to_f8e4m3",
     "static __device__ __forceinline__ unsigned char kiln_float_to_f8e4m3(float x) {\n"
     "  return (unsigned char)__nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3);\n}\n"},
    {"kiln_float_to_f8e5m2",
     "static __device__ __forceinline__ unsigned char kiln_float_to_f8e5m2(float x) {\n"
     "  return (unsigned char)__nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E5M2);\n}\n"},
    {"kiln_f8e4m3_to_float",
     "static __device__ __forceinline__ float kiln_f8e4m3_to_float(unsigned char b) {\n"
     "  return __half2float(__half(__nv_cvt_fp8_to_halfraw((__nv_fp8_storage_t)b, __NV_E4M3)));\n}\n"},
    {"kiln_f8e5m2_to_float",
     "static __device__ __forceinline__ float kiln_f8e5m2_to_float(unsigned char b) {\n"
     "  return __half2float(__half(__nv_cvt_fp8_to_halfraw((__nv_fp8_storage_t)b, __NV_E5M2)));\n}\n"},
    {"kiln_round_f8e4m3",
     "static __device__ __forceinline__ float kiln_round_f8e4m3(float x) { return "
     "kiln_f8e4m3_to_float(kiln_float_to_f8e4m3(x)); }\n"},
    {"kiln_round_f8e5m2",
     "static __device__ __forceinline__ float kiln_round_f8e5m2(float x) { return "
     "kiln_f8e5m2_to_float(kiln_float_to_f8e5m2(x)); }\n"},
    {"kiln_sat_i8",
     "static __device__ __forceinline__ int kiln_sat_i8(int v) { return v > 127 ? 127 : v < -128 ? -128 : v; }\n"},
    {"kiln_i4_value",  // the low nibble of x as a signed 4-bit integer: 8..15 are -8..-1
     "static __device__ __forceinline__ int kiln_i4_value(unsigned x) {\n"
     "  const int v = (int)(x & 15u);\n  return v - ((v & 8) << 1);\n}\n"},
    {"kiln_load_i4",  // element i of a packed i4 tensor: byte i / 2, the low nibble for even i
     "static __device__ __forceinline__ int kiln_load_i4(const unsigned char* p, unsigned long long i) {\n"
     "  return kiln_i4_value((unsigned)p[i >> 1] >> ((int)(i & 1) * 4));\n}\n"},
    {"kiln_abs_i32",
     "static __device__ __forceinline__ int kiln_abs_i32(int a) { return a < 0 ? kiln_sat_i32(-(long long)a) : a; }\n"},
    {"kiln_max",  // NaN-propagating, as torch.maximum
     "static __device__ __forceinline__ float kiln_max(float a, float b) {\n"
     "#if __CUDA_ARCH__ >= 800\n"
     "  float r;  // one instruction that propagates NaN\n"
     "  asm(\"max.NaN.f32 %0, %1, %2;\" : \"=f\"(r) : \"f\"(a), \"f\"(b));\n"
     "  return r;\n"
     "#else\n"
     "  return (a != a || a > b) ? a : b;\n"
     "#endif\n"
     "}\n"},
    {"kiln_min",
     "static __device__ __forceinline__ float kiln_min(float a, float b) { return (a != a || a < b) ? a : b; }\n"},
    // Row reductions: butterfly shuffles over W lanes (every lane ends with the same
    // bits), then, for W > 32 threads, one slot per warp in shared memory read back in a
    // fixed order: deterministic, no atomics. Every lane of a warp must call them.
    {"kiln_warp_sum",
     "template <int W> static __device__ __forceinline__ float kiln_warp_sum(float v) {\n"
     "#pragma unroll\n  for (int o = W / 2; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);\n"
     "  return v;\n}\n"},
    {"kiln_warp_max",
     "template <int W> static __device__ __forceinline__ float kiln_warp_max(float v) {\n"
     "#pragma unroll\n  for (int o = W / 2; o > 0; o /= 2) v = kiln_max(v, __shfl_xor_sync(0xffffffffu, v, o));\n"
     "  return v;\n}\n"},
    {"kiln_warp_min",
     "template <int W> static __device__ __forceinline__ float kiln_warp_min(float v) {\n"
     "#pragma unroll\n  for (int o = W / 2; o > 0; o /= 2) v = kiln_min(v, __shfl_xor_sync(0xffffffffu, v, o));\n"
     "  return v;\n}\n"},
    {"kiln_block_sum",
     "template <int W> static __device__ __forceinline__ float kiln_block_sum(float v, float* slots) {\n"
     "  v = kiln_warp_sum<32>(v);\n  if (threadIdx.x % 32 == 0) slots[threadIdx.x / 32] = v;\n  __syncthreads();\n"
     "  float r = slots[0];\n#pragma unroll\n  for (int i = 1; i < W / 32; ++i) r += slots[i];\n  return r;\n}\n"},
    {"kiln_block_max",
     "template <int W> static __device__ __forceinline__ float kiln_block_max(float v, float* slots) {\n"
     "  v = kiln_warp_max<32>(v);\n  if (threadIdx.x % 32 == 0) slots[threadIdx.x / 32] = v;\n  __syncthreads();\n"
     "  float r = slots[0];\n#pragma unroll\n  for (int i = 1; i < W / 32; ++i) r = kiln_max(r, slots[i]);\n"
     "  return r;\n}\n"},
    {"kiln_block_min",
     "template <int W> static __device__ __forceinline__ float kiln_block_min(float v, float* slots) {\n"
     "  v = kiln_warp_min<32>(v);\n  if (threadIdx.x % 32 == 0) slots[threadIdx.x / 32] = v;\n  __syncthreads();\n"
     "  float r = slots[0];\n#pragma unroll\n  for (int i = 1; i < W / 32; ++i) r = kiln_min(r, slots[i]);\n"
     "  return r;\n}\n"},
    // 2^x in one instruction (MUFU.EX2, flushing results below 2^-126 to zero). exp(x) as
    // kiln_ex2(x * log2(e)) keeps softmax near 8 instructions per element; expf's exact
    // form costs about ten for every element of the row.
    {"kiln_ex2",
     "static __device__ __forceinline__ float kiln_ex2(float x) {\n"
     "  float r;\n  asm(\"ex2.approx.ftz.f32 %0, %1;\" : \"=f\"(r) : \"f\"(x));\n  return r;\n}\n"},
    // Online log-sum-exp: a part of a row is the pair (m, s), its max and the sum of
    // exp(x - m) over it; the empty part is (-inf, 0). exp is 2^x of a pre-scaled
    // difference (x - base is exact near the max). When the max is -inf (an empty or all
    // -inf part) the differences are taken from 0, so -inf - -inf never makes a NaN.
    {"kiln_lse_base",
     "static __device__ __forceinline__ float kiln_lse_base(float top) {\n"
     "  return top == __int_as_float(0xff800000) ? 0.0f : top;\n}\n"},
    {"kiln_lse_exp",  // exp(x - base)
     "static __device__ __forceinline__ float kiln_lse_exp(float x, float base) {\n"
     "  return kiln_ex2((x - base) * 1.44269504088896341f);\n}\n"},
    {"kiln_lse_add",  // (m, s) += (m2, s2): rescale both sums to the larger max
     "static __device__ __forceinline__ void kiln_lse_add(float& m, float& s, float m2, float s2) {\n"
     "  const float top = kiln_max(m, m2), base = kiln_lse_base(top);\n"
     "  s = s * kiln_lse_exp(m, base) + s2 * kiln_lse_exp(m2, base);\n  m = top;\n}\n"},
    {"kiln_lse_result",  // m + log(s); an infinite max is the answer itself
     "static __device__ __forceinline__ float kiln_lse_result(float m, float s) {\n"
     "  return fabsf(m) == __int_as_float(0x7f800000) ? m : m + logf(s);\n}\n"},
    // Welford / Chan: a part of a row is (n, mean, m2), its count, mean and sum of squared
    // deviations from the mean; merging two parts needs no second pass over either.
    {"kiln_welford_add",  // (n, mean, m2) += (nb, meanb, m2b)
     "static __device__ __forceinline__ void kiln_welford_add(float& n, float& mean, float& m2, float nb, "
     "float meanb, float m2b) {\n"
     "  const float total = n + nb;\n"
     "  const float share = total > 0.0f ? __fdividef(nb, total) : 0.0f;  // nb / (n + nb)\n"
     "  const float d = meanb - mean;\n"
     "  mean = fmaf(d, share, mean);\n  m2 = m2 + m2b + d * d * n * share;\n  n = total;\n}\n"},
    // The pair and triple combiners across a row's threads, as kiln_warp_sum and
    // kiln_block_sum: butterflies, then one slot per warp and quantity in shared memory
    // read back in warp order. A butterfly merges the lower lane's part first on both
    // lanes, so every lane ends with the same bits.
    {"kiln_warp_lse",
     "template <int W> static __device__ __forceinline__ void kiln_warp_lse(float& m, float& s) {\n"
     "#pragma unroll\n  for (int o = W / 2; o > 0; o /= 2) {\n"
     "    const float m2 = __shfl_xor_sync(0xffffffffu, m, o), s2 = __shfl_xor_sync(0xffffffffu, s, o);\n"
     "    kiln_lse_add(m, s, m2, s2);  // symmetric in its two parts\n  }\n}\n"},
    {"kiln_block_lse",
     "template <int W> static __device__ __forceinline__ void kiln_block_lse(float& m, float& s, float* slots_m, "
     "float* slots_s) {\n"
     "  kiln_warp_lse<32>(m, s);\n"
     "  if (threadIdx.x % 32 == 0) {\n    slots_m[threadIdx.x / 32] = m;\n    slots_s[threadIdx.x / 32] = s;\n  }\n"
     "  __syncthreads();\n  m = slots_m[0];\n  s = slots_s[0];\n"
     "#pragma unroll\n  for (int i = 1; i < W / 32; ++i) kiln_lse_add(m, s, slots_m[i], slots_s[i]);\n}\n"},
    {"kiln_warp_welford",
     "template <int W> static __device__ __forceinline__ void kiln_warp_welford(float& n, float& mean, float& m2) {\n"
     "#pragma unroll\n  for (int o = W / 2; o > 0; o /= 2) {\n"
     "    const float on = __shfl_xor_sync(0xffffffffu, n, o), omean = __shfl_xor_sync(0xffffffffu, mean, o);\n"
     "    const float om2 = __shfl_xor_sync(0xffffffffu, m2, o);\n"
     "    if (threadIdx.x & o) {  // the upper lane: start from the lower lane's part\n"
     "      float an = on, amean = omean, am2 = om2;\n"
     "      kiln_welford_add(an, amean, am2, n, mean, m2);\n"
     "      n = an;\n      mean = amean;\n      m2 = am2;\n"
     "    } else {\n      kiln_welford_add(n, mean, m2, on, omean, om2);\n    }\n  }\n}\n"},
    {"kiln_block_welford",
     "template <int W> static __device__ __forceinline__ void kiln_block_welford(float& n, float& mean, float& m2, "
     "float* slots_n, float* slots_mean, float* slots_m2) {\n"
     "  kiln_warp_welford<32>(n, mean, m2);\n"
     "  if (threadIdx.x % 32 == 0) {\n"
     "    slots_n[threadIdx.x / 32] = n;\n    slots_mean[threadIdx.x / 32] = mean;\n"
     "    slots_m2[threadIdx.x / 32] = m2;\n  }\n"
     "  __syncthreads();\n  n = slots_n[0];\n  mean = slots_mean[0];\n  m2 = slots_m2[0];\n"
     "#pragma unroll\n  for (int i = 1; i < W / 32; ++i) kiln_welford_add(n, mean, m2, slots_n[i], slots_mean[i], "
     "slots_m2[i]);\n}\n"},
    // Rows held partly in shared memory: a 16-byte copy from global to shared memory that
    // needs no register on the way (cp.async, sm_80; .cg skips L1, the data is read once),
    // and the wait for all of the thread's copies, after which it reads what they wrote.
    {"kiln_copy_async16",
     "static __device__ __forceinline__ void kiln_copy_async16(void* shared_dst, const void* global_src) {\n"
     "  const unsigned dst = (unsigned)__cvta_generic_to_shared(shared_dst);\n"
     "  asm volatile(\"cp.async.cg.shared.global [%0], [%1], 16;\" :: \"r\"(dst), \"l\"(global_src) : \"memory\");\n}\n"},
    {"kiln_copy_async_wait",
     "static __device__ __forceinline__ void kiln_copy_async_wait() {\n"
     "  asm volatile(\"cp.async.wait_all;\" ::: \"memory\");\n}\n"},
    // Clusters (sm_90): a cluster's blocks share a row. Threads 0..C-1 of each block write
    // the block's partial into slot[rank] of every block of the cluster (distributed
    // shared memory); after the cluster barrier lane i of every warp reads slot i % C of
    // its own block and the warp combines the C partials by a butterfly over C lanes, so
    // every block ends with the same bits, and no thread holds C partials in registers at
    // once. No block touches another's memory after the barrier, so blocks leave without
    // waiting for each other. A block may write into another only once that one has
    // started: every kernel arrives at a barrier first and waits on it before its first
    // exchange (kiln_cluster_arrive / kiln_cluster_wait), by which time the wait is free.
    {"kiln_cluster_arrive",
     "static __device__ __forceinline__ void kiln_cluster_arrive() {\n"
     "  asm volatile(\"barrier.cluster.arrive.relaxed.aligned;\" ::: \"memory\");\n}\n"},
    {"kiln_cluster_wait",
     "static __device__ __forceinline__ void kiln_cluster_wait() {\n"
     "  asm volatile(\"barrier.cluster.wait.aligned;\" ::: \"memory\");\n}\n"},
    {"kiln_cluster_sync",
     "static __device__ __forceinline__ void kiln_cluster_sync() {\n"
     "  asm volatile(\"barrier.cluster.arrive.release.aligned;\\n\\tbarrier.cluster.wait.acquire.aligned;\" ::: "
     "\"memory\");\n}\n"},
    {"kiln_cluster_put",  // slot[rank] = v in every block of the cluster
     "template <int C> static __device__ __forceinline__ void kiln_cluster_put(float* slot, float v) {\n"
     "  if (threadIdx.x < C) {\n"
     "    const unsigned local = (unsigned)__cvta_generic_to_shared(slot + blockIdx.x % C);\n"
     "    unsigned remote;\n"
     "    asm volatile(\"mapa.shared::cluster.u32 %0, %1, %2;\" : \"=r\"(remote) : \"r\"(local), \"r\"(threadIdx.x));\n"
     "    asm volatile(\"st.shared::cluster.f32 [%0], %1;\" :: \"r\"(remote), \"f\"(v) : \"memory\");\n"
     "  }\n}\n"},
    {"kiln_cluster_sum",
     "template <int C> static __device__ __forceinline__ float kiln_cluster_sum(float v, float* slot) {\n"
     "  kiln_cluster_put<C>(slot, v);\n  kiln_cluster_sync();\n"
     "  return kiln_warp_sum<C>(slot[threadIdx.x % C]);\n}\n"},
    {"kiln_cluster_max",
     "template <int C> static __device__ __forceinline__ float kiln_cluster_max(float v, float* slot) {\n"
     "  kiln_cluster_put<C>(slot, v);\n  kiln_cluster_sync();\n"
     "  return kiln_warp_max<C>(slot[threadIdx.x % C]);\n}\n"},
    {"kiln_cluster_min",
     "template <int C> static __device__ __forceinline__ float kiln_cluster_min(float v, float* slot) {\n"
     "  kiln_cluster_put<C>(slot, v);\n  kiln_cluster_sync();\n"
     "  return kiln_warp_min<C>(slot[threadIdx.x % C]);\n}\n"},
    {"kiln_cluster_lse",
     "template <int C> static __device__ __forceinline__ void kiln_cluster_lse(float& m, float& s, float* slot_m, "
     "float* slot_s) {\n"
     "  kiln_cluster_put<C>(slot_m, m);\n  kiln_cluster_put<C>(slot_s, s);\n  kiln_cluster_sync();\n"
     "  m = slot_m[threadIdx.x % C];\n  s = slot_s[threadIdx.x % C];\n  kiln_warp_lse<C>(m, s);\n}\n"},
    {"kiln_cluster_welford",
     "template <int C> static __device__ __forceinline__ void kiln_cluster_welford(float& n, float& mean, float& m2, "
     "float* slot_n, float* slot_mean, float* slot_m2) {\n"
     "  kiln_cluster_put<C>(slot_n, n);\n  kiln_cluster_put<C>(slot_mean, mean);\n  kiln_cluster_put<C>(slot_m2, m2);\n"
     "  kiln_cluster_sync();\n  n = slot_n[threadIdx.x % C];\n  mean = slot_mean[threadIdx.x % C];\n"
     "  m2 = slot_m2[threadIdx.x % C];\n  kiln_warp_welford<C>(n, mean, m2);\n}\n"},
    {"kiln_round_f16",
     "static __device__ __forceinline__ float kiln_round_f16(float x) { return __half2float(__float2half_rn(x)); }\n"},
    {"kiln_round_bf16",
     "static __device__ __forceinline__ float kiln_round_bf16(float x) {\n"
     "  return __bfloat162float(__float2bfloat16_rn(x));\n}\n"},
};

std::string substitute(const char* pattern, const std::vector<std::string>& operands) {
  std::string out;
  for (const char* p = pattern; *p; ++p) {
    if (p[0] == '{' && p[1] >= '0' && p[1] <= '9' && p[2] == '}') {
      out += operands.at(static_cast<size_t>(p[1] - '0'));
      p += 2;
    } else {
      out += *p;
    }
  }
  return out;
}

// An fp32 register holding an f16 / bf16 value, rounded to that dtype.
std::string rounded(DType t, const std::string& x) {
  if (t == DType::f16) return "kiln_round_f16(" + x + ")";
  if (t == DType::bf16) return "kiln_round_bf16(" + x + ")";
  if (t == DType::f8e4m3) return "kiln_round_f8e4m3(" + x + ")";
  if (t == DType::f8e5m2) return "kiln_round_f8e5m2(" + x + ")";
  return x;
}

// A cast reads its operand as the graph typed it: an f16 / bf16 value kept in fp32 is
// rounded to its dtype first, then converted.
std::string cast_expr(DType from, DType to, const std::string& x) {
  if (from == to) return x;
  const std::string source = rounded(from, x);
  const bool from_int = from == DType::i32 || is_storage_only(from);  // an int register
  if (to == DType::i1) return from_int || from == DType::i1 ? "(" + x + " != 0)" : "(" + source + " != 0.0f)";
  if (to == DType::i32 || to == DType::i8) {
    std::string as_int = from == DType::i1 ? "(" + x + " ? 1 : 0)"
                         : from_int        ? x
                                           : "__float2int_rz(" + source + ")";  // truncates, saturates, NaN -> 0
    return to == DType::i8 && from != DType::i1 && from != DType::i4 ? "kiln_sat_i8(" + as_int + ")" : as_int;
  }
  std::string as_float = from == DType::i1 ? "(" + x + " ? 1.0f : 0.0f)" : from_int ? "(float)" + x : source;
  return rounded(to, as_float);
}

}  // namespace

std::string_view register_type(DType t) {
  switch (t) {
    case DType::f32: case DType::f16: case DType::bf16: case DType::f8e4m3: case DType::f8e5m2: return "float";
    case DType::i32: case DType::i8: case DType::i4: return "int";
    case DType::i1: return "bool";
  }
  return "?";
}

std::string_view storage_type(DType t) {
  switch (t) {
    case DType::f32: return "float";
    case DType::f16: return "__half";
    case DType::bf16: return "__nv_bfloat16";
    case DType::i32: return "int";
    case DType::i1: return "unsigned char";
    case DType::i8: return "signed char";
    case DType::i4: return "unsigned char";  // two elements a byte: read through kiln_load_i4
    case DType::f8e4m3: case DType::f8e5m2: return "unsigned char";  // fp8 bits, converted by cuda_fp8.h
  }
  return "?";
}

std::string load_expr(DType t, const std::string& element) {
  switch (t) {
    case DType::f16: return "__half2float(" + element + ")";
    case DType::bf16: return "__bfloat162float(" + element + ")";
    case DType::i1: return "(" + element + " != 0)";
    case DType::i8: return "(int)" + element;
    case DType::f8e4m3: return "kiln_f8e4m3_to_float(" + element + ")";
    case DType::f8e5m2: return "kiln_f8e5m2_to_float(" + element + ")";
    default: return element;  // i4: kiln_load_i4 already gives an int
  }
}

std::string store_expr(DType t, const std::string& value) {
  switch (t) {
    case DType::f16: return "__float2half_rn(" + value + ")";
    case DType::bf16: return "__float2bfloat16_rn(" + value + ")";
    case DType::i1: return "(unsigned char)(" + value + " ? 1 : 0)";
    case DType::i8: return "(signed char)(" + value + ")";  // the cast saturated it
    // An element's nibble, which the pointwise kernel packs two to a byte (only views of
    // i4 tensors make i4 values, so the value is in -8..7).
    case DType::i4: return "(unsigned char)((" + value + ") & 15)";
    case DType::f8e4m3: return "kiln_float_to_f8e4m3(" + value + ")";
    case DType::f8e5m2: return "kiln_float_to_f8e5m2(" + value + ")";
    default: return value;
  }
}

std::string const_expr(DType t, double value) {
  if (t == DType::i1) return value != 0 ? "true" : "false";
  if (t == DType::i32) {
    auto v = static_cast<int64_t>(value);
    return v == -2147483648LL ? "(-2147483647 - 1)" : std::to_string(v);
  }
  if (std::isnan(value)) return "__int_as_float(0x7fc00000)";
  if (std::isinf(value)) return value > 0 ? "__int_as_float(0x7f800000)" : "__int_as_float(0xff800000)";
  std::string s = fmt::format("{:.9g}", static_cast<float>(value));  // 9 digits: exact for any float
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s + "f";
}

std::string index_expr(DType t, const std::string& index) {
  if (t == DType::i32) return "(int)" + index;
  return rounded(t, "(float)" + index);
}

std::string op_expr(OpKind op, const ir::Attrs& attrs, DType result, const std::vector<DType>& operand_types,
                    const std::vector<std::string>& operands) {
  if (op == OpKind::Cast) return cast_expr(operand_types.at(0), result, operands.at(0));
  const auto category = ir::op_info(op).category;
  const std::string variant = op == OpKind::Gelu ? attrs.get_string("approximate") : "";
  // Select's branches carry the type; everything else its first operand.
  const DType t = operand_types.at(category == ir::OpCategory::Select ? 1 : 0);
  std::vector<std::string> args = operands;
  if (category == ir::OpCategory::Compare)
    for (size_t i = 0; i < args.size(); ++i) args[i] = rounded(operand_types[i], args[i]);
  // A result of 16 bits or fewer cannot tell the short gelu from erfcf (see its helper).
  if (op == OpKind::Gelu && variant == "none" && is_float(t) && dtype_bits(result) < 32)
    return substitute("kiln_gelu_erf_short({0})", args);
  for (const Rule& r : kRules) {
    if (r.op != op || (r.variant && variant != r.variant)) continue;
    const char* pattern = is_float(t) ? r.on_float : r.on_int;
    if (!pattern) break;
    return substitute(pattern, args);
  }
  throw Error(fmt::format("codegen: no CUDA expression for {} on {}{}", ir::op_name(op), dtype_name(t),
                          variant.empty() ? "" : " (approximate = \"" + variant + "\")"));
}

std::string body_op_expr(const std::vector<ir::ScalarOp>& body, const ir::ScalarOp& op,
                         const std::function<std::string(int)>& name) {
  std::vector<DType> types;
  std::vector<std::string> names;
  for (int x : op.operands) {
    types.push_back(body.at(static_cast<size_t>(x)).dtype);
    names.push_back(name(x));
  }
  return op_expr(op.op, op.attrs, op.dtype, types, names);
}

std::string called_helpers(const std::string& code, const DeviceHelper* table, size_t count) {
  std::vector<bool> needed(count, false);
  std::string calls = code;  // grows with the bodies of the helpers found so far
  for (size_t i = count; i-- > 0;) {
    const std::string name = table[i].name;  // called as name(...) or name<W>(...)
    if (calls.find(name + "(") == std::string::npos && calls.find(name + "<") == std::string::npos) continue;
    needed[i] = true;
    calls += table[i].definition;
  }
  std::string out;
  for (size_t i = 0; i < count; ++i)
    if (needed[i]) out += table[i].definition;
  return out;
}

std::string helper_definitions(const std::string& code) {
  // The integer reductions' helpers go last: they call kiln_cluster_sync from this table.
  const std::string integer = integer_reduce_helpers(code);
  return called_helpers(code + integer, kHelpers, std::size(kHelpers)) + integer;
}

}  // namespace kiln::codegen
