// Hand-written element-wise jobs that read several full-size inputs for each output:
// the SwiGLU gate y = silu(g) * u and the multiply-add y = a * b + c. Each thread moves
// 16-byte vectors of every input, two of them in flight per input, over a grid-stride
// loop whose grid holds as many threads as the SMs can keep resident. fp32 arithmetic;
// silu(v) = v / (1 + exp(-v)) with the fast exponential and division.
#include <fmt/format.h>

#include <algorithm>

#include "baselines/cuda_common.h"
#include "baselines/families.h"

namespace kiln::baselines {

namespace {

const char* const kMultiInputCuda = R"CUDA(
struct Swiglu {
  static constexpr int inputs = 2;
  __forceinline__ float operator()(const float* v) const { return __fdividef(v[0], 1.0f + __expf(-v[0])) * v[1]; }
};
struct MulAdd {
  static constexpr int inputs = 3;
  __forceinline__ float operator()(const float* v) const { return fmaf(v[0], v[1], v[2]); }
};

// y[i] = op(in[0][i], in[1][i], ...) over n elements; n is a multiple of W.
template <typename Op, typename E, int W, int U>
__forceinline__ void multi_input(const E* const* in, E* __restrict__ y, i64 n) {
  constexpr int N = Op::inputs;
  const i64 step = i64(gridDim.x) * blockDim.x * W;
  for (i64 i = (i64(blockIdx.x) * blockDim.x + threadIdx.x) * W; i < n; i += step * U) {
    float v[U][N][W];
#pragma unroll
    for (int u = 0; u < U; ++u)
      if (i + u * step < n) {
#pragma unroll
        for (int a = 0; a < N; ++a) load_vec<W>(in[a] + i + u * step, v[u][a]);
      }
#pragma unroll
    for (int u = 0; u < U; ++u)
      if (i + u * step < n) {
        float out[W];
#pragma unroll
        for (int k = 0; k < W; ++k) {
          float args[N];
#pragma unroll
          for (int a = 0; a < N; ++a) args[a] = v[u][a][k];
          out[k] = Op()(args);
        }
        store_vec<W>(y + i + u * step, out);
      }
  }
}
)CUDA";

constexpr int kThreads = 256;
constexpr int kVectorsInFlight = 2;

// op: the case ("swiglu", "mul_add"); functor: its struct above; inputs: how many it reads.
BaselineKernel build_multi_input(const Problem& p, const std::string& functor, int inputs) {
  const int64_t n = p.rows * p.cols;
  const int vec = n % vector_width(p.dtype) == 0 ? vector_width(p.dtype) : 1;
  const int64_t resident_blocks = int64_t{p.sm_count} * 2048 / kThreads;
  const int64_t needed = (n / vec + kThreads - 1) / kThreads;
  const int64_t grid = std::clamp<int64_t>(needed, 1, resident_blocks);
  const std::string type = cuda_type(p.dtype);
  std::string params, pointers;
  for (int a = 0; a < inputs; ++a) {
    params += fmt::format("const {}* __restrict__ in{}, ", type, a);
    pointers += fmt::format("{}in{}", a ? ", " : "", a);
  }
  BaselineKernel k;
  k.name = p.op;
  k.config = fmt::format("{{threads = {}, vec = {}, grid = {} (grid-stride), {} vectors in flight per input}}",
                         kThreads, vec, grid, kVectorsInFlight);
  k.source = std::string(kCommonCuda) + kMultiInputCuda +
             fmt::format("\nextern \"C\" __global__ void __launch_bounds__({0}) {1}_entry(\n"
                         "    {2}{3}* __restrict__ y, float*, i64 rows, i64 cols) {{\n"
                         "  const {3}* in[] = {{{4}}};\n"
                         "  multi_input<{5}, {3}, {6}, {7}>(in, y, rows * cols);\n}}\n",
                         kThreads, p.op, params, type, pointers, functor, vec, kVectorsInFlight);
  k.launches.push_back({p.op + "_entry", {static_cast<unsigned>(grid)}, {kThreads}, 0});
  return k;
}

std::string any_problem(const Problem&) { return ""; }

}  // namespace

std::vector<Baseline> multi_input_elementwise_baselines() {
  const std::vector<DType> floats = {DType::f16, DType::bf16, DType::f32};
  return {
      {"swiglu", "swiglu", floats, any_problem, [](const Problem& p) { return build_multi_input(p, "Swiglu", 2); }},
      {"mul_add", "mul_add", floats, any_problem, [](const Problem& p) { return build_multi_input(p, "MulAdd", 3); }},
  };
}

}  // namespace kiln::baselines
