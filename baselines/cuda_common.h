// What the hand-written baselines share: the device helpers every kernel source
// starts with, and the row schedule (threads per row, rows per block, access width)
// that the row-wise kernels are instantiated with.
#pragma once
#include <cstdint>
#include <string>

#include "baselines/baseline.h"
#include "ir/dtype.h"

namespace kiln::baselines {

// CUDA source prepended to every baseline: cuda_fp16.h, 16-byte vector loads and
// stores of f16, bf16 and f32 with fp32 values, and row reductions (shuffles within a
// partial warp, or whole warps then shared memory).
extern const char* const kCommonCuda;

// CUDA source for the Tensor Core baselines, after kCommonCuda: shared-memory addresses,
// 16-byte cp.async copies (bytes past `bytes` zero-filled), their groups, and ldmatrix
// (volatile with a memory clobber, so that they stay between the barriers that guard them).
extern const char* const kTensorCoreCuda;

// "__half" for f16, "__nv_bfloat16" for bf16, "float" for f32; throws kiln::Error for other dtypes.
std::string cuda_type(DType t);
// Elements in one 16-byte access: 8 for f16, 4 for f32.
int vector_width(DType t);
// A float as a CUDA literal that reads back exactly: "1.00000001e-06f".
std::string float_literal(double v);
// Throws "baseline NAME: not supported: WHY" when `why` is not empty.
void require_supported(const std::string& name, const std::string& why);

// How a row-wise kernel covers a row: T = threads_per_row threads (a power of two;
// fewer than 32 share a warp), each making accesses of `vec` elements (16 bytes when
// the row length allows, else 1) at (j * T + lane) * vec; R rows per block.
struct RowSchedule {
  int vec = 1;
  int threads_per_row = 1;
  int rows_per_block = 1;
  int accesses_per_thread = 1;  // ceil(ceil(cols / vec) / T)
  unsigned grid = 1;            // blocks (each loops over groups of R rows)
  int block_threads() const { return threads_per_row * rows_per_block; }
  std::string str() const;
};

// Threads per row grow with the row so that each thread makes about
// `target_accesses` accesses (at most 1024 threads); short rows share a block of 256
// threads. Grid: one block per group of rows (capped; blocks then loop).
RowSchedule row_schedule(DType t, int64_t rows, int64_t cols, int target_accesses = 4);

// The most fp32 values a thread keeps in registers for a row kept on chip.
inline constexpr int kMaxRegisterValues = 32;
// Whether a row of `cols` fits in registers (row_schedule with the default target).
bool row_fits_in_registers(DType t, int64_t rows, int64_t cols);

}  // namespace kiln::baselines
