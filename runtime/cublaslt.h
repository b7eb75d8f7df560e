// cuBLASLt, loaded at run time (dlopen of libcublasLt.so.13): a row-major GEMM with
// cuBLASLt's fused epilogues (bias; bias then GELU), planned once (descriptors, the
// heuristic's algorithm, a workspace) and run many times. The operands swap as for
// cuBLAS (cublas.h): in the column-major view D^T = B^T A^T has N rows, so cuBLASLt's
// bias vector, one value per row of D^T, is Kiln's bias[N], one per output column.
#pragma once
#include <cuda.h>

#include <cstddef>
#include <string>
#include <string_view>

#include "runtime/cublas.h"
#include "runtime/device_buffer.h"

namespace kiln::runtime {

// What cuBLASLt applies to the product before storing it. GeluBias is bias, then the
// tanh-approximate GELU (cuBLASLt's only GELU).
enum class LtEpilogue { None, Bias, GeluBias };
std::string_view lt_epilogue_name(LtEpilogue e);  // "DEFAULT", "BIAS", "GELU_BIAS"

// The workspace offered to cuBLASLt's heuristic and to every run.
inline constexpr size_t kLtWorkspaceBytes = size_t{32} << 20;

class LtMatmul {
public:
  // Whether cuBLASLt can be used here (library, entry points, GPU, handle); *why when
  // not. Never throws.
  static bool available(std::string* why = nullptr);

  // Builds the descriptors and asks the heuristic for an algorithm, with the bias
  // pointer already set when one is given (the heuristic may weigh its alignment).
  // Throws kiln::Error when cuBLASLt is not available, refuses the problem or has no
  // algorithm for it.
  LtMatmul(const GemmProblem& p, LtEpilogue epilogue, CUdeviceptr bias = 0,
           size_t workspace_bytes = kLtWorkspaceBytes);
  ~LtMatmul();
  LtMatmul(const LtMatmul&) = delete;
  LtMatmul& operator=(const LtMatmul&) = delete;

  // Enqueues C = epilogue(A B [+ bias]) on the null stream; `bias` (N values of the
  // output dtype) is read for Bias and GeluBias. Throws kiln::Error on a refusal.
  void run(CUdeviceptr a, CUdeviceptr b, CUdeviceptr c, CUdeviceptr bias = 0);

  // For reports: "cuBLASLt GELU_BIAS, heuristic's first of 8 algorithms, workspace 4.0 of 32 MiB".
  const std::string& config() const { return config_; }

private:
  void release() noexcept;
  void set_bias(CUdeviceptr bias);
  GemmProblem problem_;
  LtEpilogue epilogue_;
  void* desc_ = nullptr;                      // cublasLtMatmulDesc_t
  void* layout_a_ = nullptr;                  // cublasLtMatrixLayout_t of cuBLASLt's A (our B)
  void* layout_b_ = nullptr;                  // ... of its B (our A)
  void* layout_c_ = nullptr;                  // ... of C and D
  alignas(8) unsigned char algo_[64] = {};    // cublasLtMatmulAlgo_t: 8 x uint64_t, opaque
  size_t workspace_used_ = 0;
  DeviceBuffer workspace_;
  CUdeviceptr bias_set_ = 0;                  // the bias pointer the descriptor holds
  std::string config_;
};

}  // namespace kiln::runtime
