// Hand-written row norms over the last axis, fp32 statistics for f16 data:
//   add_rmsnorm: h = x + r (rounded to the data type, written out), then
//                y = h * rsqrt(mean(h^2) + eps) * w; two outputs, y then h.
//   layer_norm:  y = (x - mean) * rsqrt(var + eps) * w + b, biased variance.
// A row that fits stays in registers (one read, exact two-step variance); a longer
// row is streamed: statistics in a first read (LayerNorm: sums shifted by the row's
// first element, so that the variance does not cancel), then a second read writes y.
#include <fmt/format.h>

#include "baselines/cuda_common.h"
#include "baselines/families.h"

namespace kiln::baselines {

namespace {

const char* const kNormsCuda = R"CUDA(
// T threads per row, R rows per block, W elements per access. In registers: V
// accesses per thread. Streamed: U accesses in flight per thread.
template <typename E, int T, int R, int V, int W, bool IN_REGS, int U>
__forceinline__ void add_rmsnorm(const E* __restrict__ x, const E* __restrict__ r, const E* __restrict__ w,
                                 E* __restrict__ y, E* __restrict__ h, i64 rows, i64 cols, float eps) {
  __shared__ float scratch[32];
  const int lane = threadIdx.x % T;
  const i64 groups = (rows + R - 1) / R;
  const i64 step = i64(T) * W;
  for (i64 g = blockIdx.x; g < groups; g += gridDim.x) {
    const i64 row = g * R + threadIdx.x / T;
    const bool live = row < rows;
    const i64 base = row * cols;
    float ss = 0.0f;
    if constexpr (IN_REGS) {
      float v[V][W];
#pragma unroll
      for (int j = 0; j < V; ++j) {
        const i64 c = (i64(j) * T + lane) * W;
        if (live && c < cols) {
          float b[W];
          load_vec<W>(x + base + c, v[j]);
          load_vec<W>(r + base + c, b);
#pragma unroll
          for (int k = 0; k < W; ++k) {
            v[j][k] = round_to<E>(v[j][k] + b[k]);
            ss += v[j][k] * v[j][k];
          }
          store_vec<W>(h + base + c, v[j]);
        }
      }
      const float inv = rsqrtf(row_all_reduce<T>(ss, SumOp(), scratch) / float(cols) + eps);
#pragma unroll
      for (int j = 0; j < V; ++j) {
        const i64 c = (i64(j) * T + lane) * W;
        if (live && c < cols) {
          float wv[W];
          load_vec<W>(w + c, wv);
#pragma unroll
          for (int k = 0; k < W; ++k) v[j][k] = v[j][k] * inv * wv[k];
          store_vec<W>(y + base + c, v[j]);
        }
      }
    } else {
      for (i64 c0 = i64(lane) * W; live && c0 < cols; c0 += step * U) {
        float a[U][W], b[U][W];
#pragma unroll
        for (int u = 0; u < U; ++u) {
          if (c0 + u * step < cols) {
            load_vec<W>(x + base + c0 + u * step, a[u]);
            load_vec<W>(r + base + c0 + u * step, b[u]);
          }
        }
#pragma unroll
        for (int u = 0; u < U; ++u) {
          if (c0 + u * step < cols) {
#pragma unroll
            for (int k = 0; k < W; ++k) {
              a[u][k] = round_to<E>(a[u][k] + b[u][k]);
              ss += a[u][k] * a[u][k];
            }
            store_vec<W>(h + base + c0 + u * step, a[u]);
          }
        }
      }
      const float inv = rsqrtf(row_all_reduce<T>(ss, SumOp(), scratch) / float(cols) + eps);
      // Each thread reads back only the h it wrote itself: no synchronisation needed.
      for (i64 c0 = i64(lane) * W; live && c0 < cols; c0 += step * U) {
        float a[U][W], wv[U][W];
#pragma unroll
        for (int u = 0; u < U; ++u) {
          if (c0 + u * step < cols) {
            load_vec<W>(h + base + c0 + u * step, a[u]);
            load_vec<W>(w + c0 + u * step, wv[u]);
          }
        }
#pragma unroll
        for (int u = 0; u < U; ++u) {
          if (c0 + u * step < cols) {
#pragma unroll
            for (int k = 0; k < W; ++k) a[u][k] = a[u][k] * inv * wv[u][k];
            store_vec<W>(y + base + c0 + u * step, a[u]);
          }
        }
      }
    }
  }
}

template <typename E, int T, int R, int V, int W, bool IN_REGS, int U>
__forceinline__ void layer_norm(const E* __restrict__ x, const E* __restrict__ w, const E* __restrict__ b,
                                E* __restrict__ y, i64 rows, i64 cols, float eps) {
  __shared__ float scratch[32];
  const int lane = threadIdx.x % T;
  const i64 groups = (rows + R - 1) / R;
  const i64 step = i64(T) * W;
  const float n = float(cols);
  for (i64 g = blockIdx.x; g < groups; g += gridDim.x) {
    const i64 row = g * R + threadIdx.x / T;
    const bool live = row < rows;
    const i64 base = row * cols;
    float mean, rstd;
    float v[IN_REGS ? V : 1][W];
    if constexpr (IN_REGS) {
      float sum = 0.0f;
#pragma unroll
      for (int j = 0; j < V; ++j) {
        const i64 c = (i64(j) * T + lane) * W;
        if (live && c < cols) {
          load_vec<W>(x + base + c, v[j]);
#pragma unroll
          for (int k = 0; k < W; ++k) sum += v[j][k];
        }
      }
      mean = row_all_reduce<T>(sum, SumOp(), scratch) / n;
      float sq = 0.0f;
#pragma unroll
      for (int j = 0; j < V; ++j) {
        const i64 c = (i64(j) * T + lane) * W;
        if (live && c < cols) {
#pragma unroll
          for (int k = 0; k < W; ++k) sq += (v[j][k] - mean) * (v[j][k] - mean);
        }
      }
      rstd = rsqrtf(row_all_reduce<T>(sq, SumOp(), scratch) / n + eps);
    } else {
      const float shift = live ? to_float(x[base]) : 0.0f;
      float sd = 0.0f, sdd = 0.0f;
      for (i64 c0 = i64(lane) * W; live && c0 < cols; c0 += step * U) {
        float a[U][W];
#pragma unroll
        for (int u = 0; u < U; ++u)
          if (c0 + u * step < cols) load_vec<W>(x + base + c0 + u * step, a[u]);
#pragma unroll
        for (int u = 0; u < U; ++u) {
          if (c0 + u * step < cols) {
#pragma unroll
            for (int k = 0; k < W; ++k) {
              const float d = a[u][k] - shift;
              sd += d;
              sdd += d * d;
            }
          }
        }
      }
      const float dm = row_all_reduce<T>(sd, SumOp(), scratch) / n;
      const float var = fmaxf(row_all_reduce<T>(sdd, SumOp(), scratch) / n - dm * dm, 0.0f);
      mean = shift + dm;
      rstd = rsqrtf(var + eps);
    }
    if constexpr (IN_REGS) {
#pragma unroll
      for (int j = 0; j < V; ++j) {
        const i64 c = (i64(j) * T + lane) * W;
        if (live && c < cols) {
          float wv[W], bv[W];
          load_vec<W>(w + c, wv);
          load_vec<W>(b + c, bv);
#pragma unroll
          for (int k = 0; k < W; ++k) v[j][k] = (v[j][k] - mean) * rstd * wv[k] + bv[k];
          store_vec<W>(y + base + c, v[j]);
        }
      }
    } else {
      for (i64 c0 = i64(lane) * W; live && c0 < cols; c0 += step * U) {
        float a[U][W];
#pragma unroll
        for (int u = 0; u < U; ++u)
          if (c0 + u * step < cols) load_vec<W>(x + base + c0 + u * step, a[u]);
#pragma unroll
        for (int u = 0; u < U; ++u) {
          const i64 c = c0 + u * step;
          if (c < cols) {
            float wv[W], bv[W];
            load_vec<W>(w + c, wv);
            load_vec<W>(b + c, bv);
#pragma unroll
            for (int k = 0; k < W; ++k) a[u][k] = (a[u][k] - mean) * rstd * wv[k] + bv[k];
            store_vec<W>(y + base + c, a[u]);
          }
        }
      }
    }
  }
}
)CUDA";

constexpr int kStreamInFlight = 4;

// Both norms share the schedule and the choice between registers and streaming.
struct NormPlan {
  RowSchedule schedule;
  bool in_registers = true;
  int in_flight = kStreamInFlight;  // streamed: accesses in flight per thread
};

NormPlan plan_norm(const Problem& p) {
  NormPlan plan;
  plan.in_registers = row_fits_in_registers(p.dtype, p.rows, p.cols);
  plan.schedule = row_schedule(p.dtype, p.rows, p.cols, plan.in_registers ? 4 : kStreamInFlight);
  // A block of 1024 threads has at most 64 registers per thread: fewer loads in
  // flight there keep the streamed loops from spilling.
  if (plan.schedule.block_threads() >= 1024) plan.in_flight = 2;
  return plan;
}

std::string norm_config(const NormPlan& plan) {
  return plan.in_registers ? "{" + plan.schedule.str() + ", row in registers}"
                           : fmt::format("{{threads/row = {}, rows/block = {}, vec = {}, {} accesses in flight, "
                                         "streamed twice}}",
                                         plan.schedule.threads_per_row, plan.schedule.rows_per_block,
                                         plan.schedule.vec, plan.in_flight);
}

std::string template_args(const Problem& p, const NormPlan& plan) {
  const RowSchedule& s = plan.schedule;
  return fmt::format("{}, {}, {}, {}, {}, {}, {}", cuda_type(p.dtype), s.threads_per_row, s.rows_per_block,
                     plan.in_registers ? s.accesses_per_thread : 1, s.vec, plan.in_registers, plan.in_flight);
}

// One norm's kernel: the shared templates and an entry `<name>_entry(<params>, float*,
// i64 rows, i64 cols)` that calls `<name><...>(<args>, rows, cols, eps)`.
BaselineKernel norm_kernel(const Problem& p, const std::string& name, const std::string& params,
                           const std::string& args, double eps) {
  const NormPlan plan = plan_norm(p);
  BaselineKernel k;
  k.name = name;
  k.config = norm_config(plan);
  k.source = std::string(kCommonCuda) + kNormsCuda +
             fmt::format("\nextern \"C\" __global__ void __launch_bounds__({0}) {1}_entry(\n"
                         "    {2}, float*, i64 rows, i64 cols) {{\n"
                         "  {1}<{3}>({4}, rows, cols, {5});\n}}\n",
                         plan.schedule.block_threads(), name, fmt::format(fmt::runtime(params), cuda_type(p.dtype)),
                         template_args(p, plan), args, float_literal(eps));
  k.launches.push_back(
      {name + "_entry", {plan.schedule.grid}, {static_cast<unsigned>(plan.schedule.block_threads())}, 0});
  return k;
}

BaselineKernel build_add_rmsnorm(const Problem& p) {
  return norm_kernel(p, "add_rmsnorm",
                     "const {0}* __restrict__ x, const {0}* __restrict__ r, const {0}* __restrict__ w,\n"
                     "    {0}* __restrict__ y, {0}* __restrict__ h",
                     "x, r, w, y, h", 1e-6);
}

BaselineKernel build_layer_norm(const Problem& p) {
  return norm_kernel(p, "layer_norm",
                     "const {0}* __restrict__ x, const {0}* __restrict__ w, const {0}* __restrict__ b,\n"
                     "    {0}* __restrict__ y",
                     "x, w, b, y", 1e-5);
}

std::string any_shape(const Problem&) { return ""; }

}  // namespace

std::vector<Baseline> norm_baselines() {
  return {
      {"add_rmsnorm", "add_rmsnorm", {DType::f16, DType::f32}, any_shape, build_add_rmsnorm},
      {"layer_norm", "layer_norm", {DType::f16, DType::f32}, any_shape, build_layer_norm},
  };
}

}  // namespace kiln::baselines
