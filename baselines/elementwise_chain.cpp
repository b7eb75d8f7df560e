// Hand-written element-wise chain y = gelu_tanh(x * s + b) + r, with s and b of shape
// [cols] broadcast over the rows. Threads own column groups of 16 bytes (so each loads
// its s and b once) and walk the rows, several rows' loads in flight; the grid fills
// every SM. fp32 arithmetic; gelu_tanh(u) = 0.5 u (1 + tanh(z)) = u / (1 + exp(-2z)),
// z = sqrt(2/pi) (u + 0.044715 u^3), which needs one exponential and no tanh.
#include <fmt/format.h>

#include <algorithm>

#include "baselines/cuda_common.h"
#include "baselines/families.h"

namespace kiln::baselines {

namespace {

const char* const kChainCuda = R"CUDA(
template <typename E, int W, int U>
__forceinline__ void gelu_chain(const E* __restrict__ x, const E* __restrict__ r, const E* __restrict__ s,
                                const E* __restrict__ b, E* __restrict__ y, i64 rows, i64 cols) {
  const i64 c = (i64(blockIdx.x) * blockDim.x + threadIdx.x) * W;
  if (c >= cols) return;
  float sv[W], bv[W];
  load_vec<W>(s + c, sv);
  load_vec<W>(b + c, bv);
  const i64 stride = gridDim.y;
  for (i64 row = blockIdx.y; row < rows; row += stride * U) {
    float xv[U][W], rv[U][W];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      if (row + u * stride < rows) {
        load_vec<W>(x + (row + u * stride) * cols + c, xv[u]);
        load_vec<W>(r + (row + u * stride) * cols + c, rv[u]);
      }
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      if (row + u * stride < rows) {
#pragma unroll
        for (int k = 0; k < W; ++k) {
          const float v = xv[u][k] * sv[k] + bv[k];
          const float z = 0.7978845608f * (v + 0.044715f * v * v * v);
          xv[u][k] = __fdividef(v, 1.0f + __expf(-2.0f * z)) + rv[u][k];
        }
        store_vec<W>(y + (row + u * stride) * cols + c, xv[u]);
      }
    }
  }
}
)CUDA";

constexpr int kRowsInFlight = 2;

BaselineKernel build_chain(const Problem& p) {
  const int vec = p.cols % vector_width(p.dtype) == 0 ? vector_width(p.dtype) : 1;
  const int64_t groups = (p.cols + vec - 1) / vec;  // column groups per row
  const int64_t block = std::clamp<int64_t>((groups + 31) / 32 * 32, 32, 256);
  const int64_t grid_x = (groups + block - 1) / block;
  const int64_t want_blocks = int64_t{p.sm_count} * 2048 / block;
  const int64_t grid_y = std::clamp<int64_t>((want_blocks + grid_x - 1) / grid_x, 1, std::min<int64_t>(p.rows, 65535));
  const std::string type = cuda_type(p.dtype);
  BaselineKernel k;
  k.name = "gelu_chain";
  k.config = fmt::format("{{threads = {}, vec = {}, grid = {}x{}, {} rows in flight}}", block, vec, grid_x, grid_y,
                         kRowsInFlight);
  k.source = std::string(kCommonCuda) + kChainCuda +
             fmt::format("\nextern \"C\" __global__ void __launch_bounds__({0}) gelu_chain_entry(\n"
                         "    const {1}* __restrict__ x, const {1}* __restrict__ r, const {1}* __restrict__ s,\n"
                         "    const {1}* __restrict__ b, {1}* __restrict__ y, float*, i64 rows, i64 cols) {{\n"
                         "  gelu_chain<{1}, {2}, {3}>(x, r, s, b, y, rows, cols);\n}}\n",
                         block, type, vec, kRowsInFlight);
  k.launches.push_back({"gelu_chain_entry",
                        {static_cast<unsigned>(grid_x), static_cast<unsigned>(grid_y)},
                        {static_cast<unsigned>(block)},
                        0});
  return k;
}

}  // namespace

std::vector<Baseline> elementwise_chain_baselines() {
  return {{"gelu_chain", "gelu_chain", {DType::f16, DType::f32}, [](const Problem&) { return std::string(); },
           build_chain}};
}

}  // namespace kiln::baselines
