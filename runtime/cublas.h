// cuBLAS, loaded at run time (dlopen of libcublas.so.13) as the driver is, so that
// Kiln builds and runs without it and a missing vendor row says why. Its entry points
// and the few enum values they take are declared in cublas.cpp with their numeric
// values from the cuBLAS documentation; no cuBLAS header is included.
//
// Kiln's tensors are row-major; cuBLAS is column-major. A row-major C = A B is the
// column-major C^T = B^T A^T, and a row-major matrix read as column-major is its
// transpose, so the product runs with the operands swapped and nothing transposed.
#pragma once
#include <cuda.h>

#include <cstdint>
#include <string>

#include "ir/dtype.h"

namespace kiln::runtime {

// A row-major product C[b] = A[b] @ B[b] on packed matrices: A [M, K], B [K, N],
// C [M, N] per batch entry, batch entries one whole matrix apart; fp32 accumulation.
struct GemmProblem {
  DType input = DType::f16;   // A and B: f16, bf16 or f32
  DType output = DType::f16;  // C
  int64_t batch = 1, m = 1, n = 1, k = 1;
  bool b_transposed = false;  // B stored [N, K] (a weight as a linear layer keeps it): C = A @ B^T
  std::string str() const;  // "f16 4096x4096x4096", "f16 32x1024x1024x1024" (batched)
};

// The column-major call for a GemmProblem: cuBLAS's A is our B and its B our A.
struct ColumnMajorGemm {
  int m = 0, n = 0, k = 0;        // cuBLAS's: our N, M, K
  int lda = 0, ldb = 0, ldc = 0;  // our N (K when B is stored [N, K]: cuBLAS transposes it), K, N
  long long stride_a = 0, stride_b = 0, stride_c = 0;  // our K*N, M*K, M*N (elements per batch entry)
};
// Throws kiln::Error naming the size when one does not fit cuBLAS's 32-bit int.
ColumnMajorGemm column_major(const GemmProblem& p);

// CUDA's data type code for a float dtype (CUDA_R_16F = 2, CUDA_R_16BF = 14,
// CUDA_R_32F = 0); throws kiln::Error for others.
int cuda_data_type(DType t);
// "CUBLAS_STATUS_NOT_SUPPORTED (15)", for cuBLAS's and cuBLASLt's status codes.
std::string cublas_status_text(int status);

class Cublas {
public:
  // Whether cuBLAS can be used here (library, entry points, GPU, handle); *why when
  // not. Never throws.
  static bool available(std::string* why = nullptr);
  // The process's cuBLAS; throws kiln::Error saying why when it is not available.
  static Cublas& get();

  // Enqueues C = A B on the null stream (a, b, c device pointers): cublasGemmEx, or
  // cublasGemmStridedBatchedEx for batch > 1, fp32 compute (no TF32 for f32 inputs).
  // Throws kiln::Error with the problem and cuBLAS's status when it refuses.
  void gemm(const GemmProblem& p, CUdeviceptr a, CUdeviceptr b, CUdeviceptr c) const;

private:
  Cublas() = default;
  void* handle_ = nullptr;
};

}  // namespace kiln::runtime
