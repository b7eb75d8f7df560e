// Hand-written f32 reductions of a matrix [rows, cols]:
//   row_sum: y[r] = sum over the row; threads per row grow with the row, several
//            rows per block for short rows, several 16-byte loads in flight per thread.
//   col_sum: y[c] = sum over the rows; threads read neighbouring 16-byte column
//            groups of a row (coalesced), the rows are split over blocks (grid.y) that
//            write partial sums to a workspace, and a second kernel adds the partials
//            in a fixed order, so that the result is the same bits on every run.
//   middle_axis_sum: y[b, c] = sum over the rows of x[b] (x is [B, rows, cols]): the
//            column sum of each matrix of the batch, one per grid.z.
//   multi_axis_sum: y[r] = sum of x[b, r, :] over b and the row (x is [B, rows, cols]):
//            a block per r reads its B rows with 16-byte loads, then one tree.
#include <fmt/format.h>

#include <algorithm>

#include "baselines/cuda_common.h"
#include "baselines/families.h"
#include "runtime/bench_cases.h"

namespace kiln::baselines {

namespace {

const char* const kReductionsCuda = R"CUDA(
// T threads per row, R rows per block, U accesses of W elements in flight per thread.
template <typename E, int T, int R, int W, int U>
__forceinline__ void row_sum(const E* __restrict__ x, E* __restrict__ y, i64 rows, i64 cols) {
  __shared__ float scratch[32];
  const int lane = threadIdx.x % T;
  const i64 groups = (rows + R - 1) / R;
  const i64 step = i64(T) * W;
  for (i64 g = blockIdx.x; g < groups; g += gridDim.x) {
    const i64 row = g * R + threadIdx.x / T;
    const bool live = row < rows;
    const E* xr = x + row * cols;
    float s = 0.0f;
    for (i64 c0 = i64(lane) * W; live && c0 < cols; c0 += step * U) {
      float v[U][W];
#pragma unroll
      for (int u = 0; u < U; ++u) {
        if (c0 + u * step < cols) {
          load_vec<W>(xr + c0 + u * step, v[u]);
        } else {
#pragma unroll
          for (int k = 0; k < W; ++k) v[u][k] = 0.0f;
        }
      }
#pragma unroll
      for (int u = 0; u < U; ++u) {
#pragma unroll
        for (int k = 0; k < W; ++k) s += v[u][k];
      }
    }
    s = row_all_reduce<T>(s, SumOp(), scratch);
    if (live && lane == 0) y[row] = from_float<E>(s);
  }
}

// Block: BX threads across columns (W columns each) by BY threads down the rows;
// grid.x tiles the columns, grid.y slices the rows. Slice s writes work[s * cols + c].
template <int BX, int BY, int W, int U>
__forceinline__ void col_sum_partial(const float* __restrict__ x, float* __restrict__ work, i64 rows, i64 cols) {
  __shared__ float part[BY][BX * W];
  x += i64(blockIdx.z) * rows * cols;  // grid.z: the matrices of a batch [B, rows, cols]
  work += i64(blockIdx.z) * gridDim.y * cols;
  const i64 c = (i64(blockIdx.x) * BX + threadIdx.x) * W;
  const i64 per_slice = (rows + gridDim.y - 1) / gridDim.y;
  const i64 begin = i64(blockIdx.y) * per_slice;
  const i64 end = min(rows, begin + per_slice);
  float acc[W];
#pragma unroll
  for (int k = 0; k < W; ++k) acc[k] = 0.0f;
  if (c < cols) {
    i64 r = begin + threadIdx.y;
    for (; r + (U - 1) * BY < end; r += U * BY) {
      float v[U][W];
#pragma unroll
      for (int u = 0; u < U; ++u) load_vec<W>(x + (r + u * BY) * cols + c, v[u]);
#pragma unroll
      for (int u = 0; u < U; ++u) {
#pragma unroll
        for (int k = 0; k < W; ++k) acc[k] += v[u][k];
      }
    }
    for (; r < end; r += BY) {
      float v[W];
      load_vec<W>(x + r * cols + c, v);
#pragma unroll
      for (int k = 0; k < W; ++k) acc[k] += v[k];
    }
  }
#pragma unroll
  for (int k = 0; k < W; ++k) part[threadIdx.y][threadIdx.x * W + k] = acc[k];
  __syncthreads();
  // One thread per column adds the BY partials of the block, in order.
  for (int i = threadIdx.y * BX + threadIdx.x; i < BX * W; i += BX * BY) {
    const i64 col = i64(blockIdx.x) * BX * W + i;
    if (col < cols) {
      float s = 0.0f;
#pragma unroll
      for (int j = 0; j < BY; ++j) s += part[j][i];
      work[i64(blockIdx.y) * cols + col] = s;
    }
  }
}

template <int SLICES>
__forceinline__ void col_sum_finish(const float* __restrict__ work, float* __restrict__ y, i64 cols, float scale) {
  const i64 c = i64(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= cols) return;
  work += i64(blockIdx.z) * SLICES * cols;
  y += i64(blockIdx.z) * cols;
  float s = 0.0f;
#pragma unroll 4
  for (int i = 0; i < SLICES; ++i) s += work[i * cols + c];
  y[c] = s * scale;
}

// A block of T threads per row r of x [B, rows, cols]: y[r] = sum over b and the row.
template <int T, int W, int B>
__forceinline__ void outer_inner_sum(const float* __restrict__ x, float* __restrict__ y, i64 rows, i64 cols) {
  __shared__ float scratch[32];
  const i64 r = blockIdx.x;
  float s = 0.0f;
#pragma unroll
  for (int b = 0; b < B; ++b) {
    const float* xr = x + (i64(b) * rows + r) * cols;
    for (i64 c0 = i64(threadIdx.x) * W; c0 < cols; c0 += i64(T) * W) {
      float v[W];
      load_vec<W>(xr + c0, v);
#pragma unroll
      for (int k = 0; k < W; ++k) s += v[k];
    }
  }
  s = row_all_reduce<T>(s, SumOp(), scratch);
  if (threadIdx.x == 0) y[r] = s;
}
)CUDA";

constexpr int kInFlight = 4;
constexpr int kColThreadsX = 32, kColThreadsY = 8, kFinishThreads = 256;

std::string any_shape(const Problem&) { return ""; }

BaselineKernel build_row_sum(const Problem& p) {
  const RowSchedule s = row_schedule(p.dtype, p.rows, p.cols, kInFlight);
  const std::string type = cuda_type(p.dtype);
  BaselineKernel k;
  k.name = "row_sum";
  k.config = fmt::format("{{threads/row = {}, rows/block = {}, vec = {}, {} accesses in flight}}", s.threads_per_row,
                         s.rows_per_block, s.vec, kInFlight);
  k.source = std::string(kCommonCuda) + kReductionsCuda +
             fmt::format("\nextern \"C\" __global__ void __launch_bounds__({0}) row_sum_entry(\n"
                         "    const {1}* __restrict__ x, {1}* __restrict__ y, float*, i64 rows, i64 cols) {{\n"
                         "  row_sum<{1}, {2}, {3}, {4}, {5}>(x, y, rows, cols);\n}}\n",
                         s.block_threads(), type, s.threads_per_row, s.rows_per_block, s.vec, kInFlight);
  k.launches.push_back({"row_sum_entry", {s.grid}, {static_cast<unsigned>(s.block_threads())}, 0});
  return k;
}

std::string why_col_sum_unsupported(const Problem& p) {
  return p.dtype == DType::f32 ? "" : "col_sum is written for f32 only";
}

// The column sums of `batch` matrices [rows, cols], one per grid.z; with `mean`, divided
// by the rows.
BaselineKernel column_sums(const Problem& p, const std::string& name, int64_t batch, bool mean = false) {
  const int vec = p.cols % 4 == 0 ? 4 : 1;
  const int64_t tile_cols = int64_t{kColThreadsX} * vec;
  const int64_t col_tiles = (p.cols + tile_cols - 1) / tile_cols;
  // Enough blocks for 2048 threads on every SM, but at least 64 rows per slice.
  const int64_t want_blocks = int64_t{p.sm_count} * 2048 / (kColThreadsX * kColThreadsY);
  const int64_t tiles = col_tiles * batch;
  const int64_t slices =
      std::clamp<int64_t>((want_blocks + tiles - 1) / tiles, 1, std::max<int64_t>(1, p.rows / 64));
  BaselineKernel k;
  k.name = name;
  k.config = fmt::format("{{block = {}x{}, vec = {}, {} row slices, {} loads in flight, fixed-order second stage}}",
                         kColThreadsX, kColThreadsY, vec, slices, kInFlight);
  k.source = std::string(kCommonCuda) + kReductionsCuda +
             fmt::format("\nextern \"C\" __global__ void __launch_bounds__({0}) col_sum_partial_entry(\n"
                         "    const float* __restrict__ x, float*, float* work, i64 rows, i64 cols) {{\n"
                         "  col_sum_partial<{1}, {2}, {3}, {4}>(x, work, rows, cols);\n}}\n"
                         "extern \"C\" __global__ void __launch_bounds__({5}) col_sum_finish_entry(\n"
                         "    const float*, float* __restrict__ y, float* work, i64, i64 cols) {{\n"
                         "  col_sum_finish<{6}>(work, y, cols, {7});\n}}\n",
                         kColThreadsX * kColThreadsY, kColThreadsX, kColThreadsY, vec, kInFlight, kFinishThreads,
                         slices, float_literal(mean ? 1.0 / static_cast<double>(p.rows) : 1.0));
  const unsigned z = static_cast<unsigned>(batch);
  k.launches.push_back({"col_sum_partial_entry",
                        {static_cast<unsigned>(col_tiles), static_cast<unsigned>(slices), z},
                        {kColThreadsX, kColThreadsY},
                        0});
  k.launches.push_back(
      {"col_sum_finish_entry", {static_cast<unsigned>((p.cols + kFinishThreads - 1) / kFinishThreads), 1, z},
       {kFinishThreads}, 0});
  k.workspace_bytes = static_cast<size_t>(batch * slices * p.cols) * sizeof(float);
  return k;
}

BaselineKernel build_col_sum(const Problem& p) {
  require_supported("col_sum", why_col_sum_unsupported(p));
  return column_sums(p, "col_sum", 1);
}

std::string why_not_f32(const Problem& p) { return p.dtype == DType::f32 ? "" : p.op + " is written for f32 only"; }

BaselineKernel build_col_mean(const Problem& p) {
  require_supported("col_mean", why_not_f32(p));
  return column_sums(p, "col_mean", 1, true);
}

BaselineKernel build_middle_axis_sum(const Problem& p) {
  require_supported("middle_axis_sum", why_not_f32(p));
  return column_sums(p, "middle_axis_sum", runtime::kReduceBenchBatch);
}

constexpr int kOuterInnerThreads = 256;

BaselineKernel build_multi_axis_sum(const Problem& p) {
  require_supported("multi_axis_sum", why_not_f32(p));
  const int vec = p.cols % 4 == 0 ? 4 : 1;
  BaselineKernel k;
  k.name = "multi_axis_sum";
  k.config = fmt::format("{{block of {} per row, vec = {}, one tree}}", kOuterInnerThreads, vec);
  k.source = std::string(kCommonCuda) + kReductionsCuda +
             fmt::format("\nextern \"C\" __global__ void __launch_bounds__({0}) outer_inner_sum_entry(\n"
                         "    const float* __restrict__ x, float* __restrict__ y, float*, i64 rows, i64 cols) {{\n"
                         "  outer_inner_sum<{0}, {1}, {2}>(x, y, rows, cols);\n}}\n",
                         kOuterInnerThreads, vec, runtime::kReduceBenchBatch);
  k.launches.push_back({"outer_inner_sum_entry", {static_cast<unsigned>(p.rows)}, {kOuterInnerThreads}, 0});
  return k;
}

}  // namespace

std::vector<Baseline> reduction_baselines() {
  return {
      {"row_sum", "row_sum", {DType::f32, DType::f16}, any_shape, build_row_sum},
      {"col_sum", "col_sum", {DType::f32}, why_col_sum_unsupported, build_col_sum},
      {"col_mean", "col_mean", {DType::f32}, why_not_f32, build_col_mean},
      {"middle_axis_sum", "middle_axis_sum", {DType::f32}, why_not_f32, build_middle_axis_sum},
      {"multi_axis_sum", "multi_axis_sum", {DType::f32}, why_not_f32, build_multi_axis_sum},
  };
}

}  // namespace kiln::baselines
