// Hand-written softmax over the last axis, two ways:
//   two-pass: the row stays in registers; max, then the sum of exponentials (kept in
//             registers), then the normalised row: one read and one write per element.
//   online:   for rows too long for registers; a running max and a rescaled running
//             sum give the statistics in one read, then a second read writes the output.
// fp32 arithmetic for f16 data; 16-byte accesses when the row length allows.
#include <fmt/format.h>

#include "baselines/cuda_common.h"
#include "baselines/families.h"

namespace kiln::baselines {

namespace {

const char* const kSoftmaxCuda = R"CUDA(
// T threads per row, R rows per block, V accesses of W elements per thread.
template <typename E, int T, int R, int V, int W>
__forceinline__ void softmax_two_pass(const E* __restrict__ x, E* __restrict__ y, i64 rows, i64 cols) {
  __shared__ float scratch[32];
  const int lane = threadIdx.x % T;
  const i64 groups = (rows + R - 1) / R;
  for (i64 g = blockIdx.x; g < groups; g += gridDim.x) {
    const i64 row = g * R + threadIdx.x / T;
    const bool live = row < rows;
    const E* xr = x + row * cols;
    float v[V][W];
    float m = -INFINITY;
#pragma unroll
    for (int j = 0; j < V; ++j) {
      const i64 c = (i64(j) * T + lane) * W;
      if (live && c < cols) {
        load_vec<W>(xr + c, v[j]);
      } else {
#pragma unroll
        for (int k = 0; k < W; ++k) v[j][k] = -INFINITY;
      }
#pragma unroll
      for (int k = 0; k < W; ++k) m = fmaxf(m, v[j][k]);
    }
    m = row_all_reduce<T>(m, MaxOp(), scratch);
    float s = 0.0f;
#pragma unroll
    for (int j = 0; j < V; ++j) {
#pragma unroll
      for (int k = 0; k < W; ++k) {
        v[j][k] = __expf(v[j][k] - m);  // padding: exp(-inf) = 0
        s += v[j][k];
      }
    }
    s = row_all_reduce<T>(s, SumOp(), scratch);
    const float inv = 1.0f / s;
    E* yr = y + row * cols;
#pragma unroll
    for (int j = 0; j < V; ++j) {
      const i64 c = (i64(j) * T + lane) * W;
      if (live && c < cols) {
#pragma unroll
        for (int k = 0; k < W; ++k) v[j][k] *= inv;
        store_vec<W>(yr + c, v[j]);
      }
    }
  }
}

// T threads per row, R rows per block; U accesses of W elements in flight per thread.
template <typename E, int T, int R, int W, int U>
__forceinline__ void softmax_online(const E* __restrict__ x, E* __restrict__ y, i64 rows, i64 cols) {
  __shared__ float scratch[32];
  const int lane = threadIdx.x % T;
  const i64 groups = (rows + R - 1) / R;
  const i64 step = i64(T) * W;
  for (i64 g = blockIdx.x; g < groups; g += gridDim.x) {
    const i64 row = g * R + threadIdx.x / T;
    const bool live = row < rows;
    const E* xr = x + row * cols;
    float m = -INFINITY, s = 0.0f;
    for (i64 c0 = i64(lane) * W; live && c0 < cols; c0 += step * U) {
      float v[U][W];
      float mv = m;
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const i64 c = c0 + u * step;
        if (c < cols) {
          load_vec<W>(xr + c, v[u]);
        } else {
#pragma unroll
          for (int k = 0; k < W; ++k) v[u][k] = -INFINITY;
        }
#pragma unroll
        for (int k = 0; k < W; ++k) mv = fmaxf(mv, v[u][k]);
      }
      // The running sum is rescaled to the new running max (m = -inf: s is 0 and stays 0).
      s *= __expf(m - mv);
#pragma unroll
      for (int u = 0; u < U; ++u) {
#pragma unroll
        for (int k = 0; k < W; ++k) s += __expf(v[u][k] - mv);
      }
      m = mv;
    }
    const float row_max = row_all_reduce<T>(m, MaxOp(), scratch);
    s = m == -INFINITY ? 0.0f : s * __expf(m - row_max);
    const float inv = 1.0f / row_all_reduce<T>(s, SumOp(), scratch);
    E* yr = y + row * cols;
    for (i64 c0 = i64(lane) * W; live && c0 < cols; c0 += step * U) {
      float v[U][W];
#pragma unroll
      for (int u = 0; u < U; ++u)
        if (c0 + u * step < cols) load_vec<W>(xr + c0 + u * step, v[u]);
#pragma unroll
      for (int u = 0; u < U; ++u) {
        if (c0 + u * step < cols) {
#pragma unroll
          for (int k = 0; k < W; ++k) v[u][k] = __expf(v[u][k] - row_max) * inv;
          store_vec<W>(yr + c0 + u * step, v[u]);
        }
      }
    }
  }
}
)CUDA";

constexpr int kOnlineInFlight = 4;
// A block of 1024 threads has at most 64 registers per thread: fewer loads in flight
// there keep the online loop from spilling.
int online_in_flight(const RowSchedule& s) { return s.block_threads() >= 1024 ? 2 : kOnlineInFlight; }

std::string why_two_pass_unsupported(const Problem& p) {
  if (!row_fits_in_registers(p.dtype, p.rows, p.cols))
    return fmt::format("a row of {} does not fit in registers (at most {} values per thread); use softmax_online",
                       p.cols, kMaxRegisterValues);
  return "";
}

BaselineKernel build_two_pass(const Problem& p) {
  require_supported("softmax_two_pass", why_two_pass_unsupported(p));
  const RowSchedule s = row_schedule(p.dtype, p.rows, p.cols);
  const std::string type = cuda_type(p.dtype);
  BaselineKernel k;
  k.name = "softmax_two_pass";
  k.config = "{" + s.str() + ", row in registers}";
  k.source = std::string(kCommonCuda) + kSoftmaxCuda +
             fmt::format("\nextern \"C\" __global__ void __launch_bounds__({0}) softmax_two_pass_entry(\n"
                         "    const {1}* __restrict__ x, {1}* __restrict__ y, float*, i64 rows, i64 cols) {{\n"
                         "  softmax_two_pass<{1}, {2}, {3}, {4}, {5}>(x, y, rows, cols);\n}}\n",
                         s.block_threads(), type, s.threads_per_row, s.rows_per_block, s.accesses_per_thread, s.vec);
  k.launches.push_back({"softmax_two_pass_entry", {s.grid}, {static_cast<unsigned>(s.block_threads())}, 0});
  return k;
}

BaselineKernel build_online(const Problem& p) {
  const RowSchedule s = row_schedule(p.dtype, p.rows, p.cols, kOnlineInFlight);
  const std::string type = cuda_type(p.dtype);
  BaselineKernel k;
  k.name = "softmax_online";
  const int in_flight = online_in_flight(s);
  k.config = fmt::format("{{threads/row = {}, rows/block = {}, vec = {}, {} accesses in flight, streamed twice}}",
                         s.threads_per_row, s.rows_per_block, s.vec, in_flight);
  k.source = std::string(kCommonCuda) + kSoftmaxCuda +
             fmt::format("\nextern \"C\" __global__ void __launch_bounds__({0}) softmax_online_entry(\n"
                         "    const {1}* __restrict__ x, {1}* __restrict__ y, float*, i64 rows, i64 cols) {{\n"
                         "  softmax_online<{1}, {2}, {3}, {4}, {5}>(x, y, rows, cols);\n}}\n",
                         s.block_threads(), type, s.threads_per_row, s.rows_per_block, s.vec, in_flight);
  k.launches.push_back({"softmax_online_entry", {s.grid}, {static_cast<unsigned>(s.block_threads())}, 0});
  return k;
}

}  // namespace

std::vector<Baseline> softmax_baselines() {
  return {
      {"softmax_two_pass", "softmax", {DType::f16, DType::f32}, why_two_pass_unsupported, build_two_pass},
      {"softmax_online", "softmax", {DType::f16, DType::f32}, [](const Problem&) { return std::string(); },
       build_online},
  };
}

}  // namespace kiln::baselines
