// Hand-written baselines: CUDA kernels written by hand for the jobs Kiln's benchmark
// cases do, so that a generated kernel can be measured against what an expert writes.
// A baseline is built for one problem (op, dtype, rows x cols): it yields CUDA source,
// entry names and launch geometry, and is compiled through the same compile cache and
// NVRTC flags as generated code (see baselines/runner.h), so that only the kernel differs.
//
// Calling convention of every entry point, whatever the op:
//   (inputs..., outputs..., float* workspace, long long rows, long long cols)
// with the inputs and outputs in the order of the benchmark case's graph (see
// runtime/bench_cases.h); the workspace is BaselineKernel::workspace_bytes long.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/dtype.h"

namespace kiln::baselines {

// What to build a kernel for. sm_count sizes grids (132 on an H200). For a GEMM case
// rows = M and cols = N of C[batch, M, N] = A[batch, M, K] @ B[batch, K, N], with
// depth = K and batch the number of products (1 for an unbatched one); the memory-bound
// cases leave depth and batch at 1.
struct Problem {
  std::string op;  // a benchmark case's name: "softmax", "add_rmsnorm", ...
  DType dtype = DType::f16;
  int64_t rows = 1, cols = 1;
  int sm_count = 132;
  int64_t depth = 1;  // K of a GEMM case
  int64_t batch = 1;  // products of a batched GEMM case
  // An attention case: rows = Sq and cols = D for batch x heads query heads, which read
  // kv_heads key and value heads (a group of heads / kv_heads each) of kv_len keys.
  int64_t heads = 0, kv_heads = 0, kv_len = 0;
  bool causal = false;
};

struct Dims {
  unsigned x = 1, y = 1, z = 1;
};

// One launch of an entry point of the source.
struct BaselineLaunch {
  std::string entry;
  Dims grid, block;
  unsigned shared_bytes = 0;  // dynamic shared memory
};

// A baseline built for one problem.
struct BaselineKernel {
  std::string name;    // the variant: "softmax_two_pass"
  std::string config;  // how it is tiled, for reports: "{threads/row = 128, rows/block = 2, ...}"
  std::string source;  // one CUDA translation unit
  std::vector<BaselineLaunch> launches;  // run in this order
  size_t workspace_bytes = 0;
};

struct Baseline {
  std::string name;  // "softmax_online"
  std::string op;    // the benchmark case it computes
  std::vector<DType> dtypes;
  // Empty when the variant handles the problem; otherwise why not.
  std::function<std::string(const Problem&)> why_unsupported;
  // Throws kiln::Error when the problem is unsupported.
  std::function<BaselineKernel(const Problem&)> build;
};

// Every baseline, in the order a benchmark prefers them.
const std::vector<Baseline>& all();
// The baselines of `op` for `dtype` (any shape).
std::vector<const Baseline*> for_op(std::string_view op, DType dtype);
// The preferred baseline for a problem: the first of for_op() that supports its shape;
// nullptr when none does.
const Baseline* find(const Problem& p);
// A baseline by name; throws kiln::Error listing the known names.
const Baseline& by_name(std::string_view name);

}  // namespace kiln::baselines
