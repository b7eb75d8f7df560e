// The vendor-library rows of `kiln bench`: for the GEMM cases, cuBLAS and cuBLASLt set
// up on the job's own device buffers, so that they are checked against the reference
// and timed exactly as Kiln's kernels are (the same inputs, outputs and timer).
//   cublas             cublasGemmEx (cublasGemmStridedBatchedEx when batched)
//   cublas + epilogue  gemm_bias_gelu as cuBLAS's GEMM followed by Kiln's own generated
//                      kernel for gelu_tanh(c + bias), timed together as one launch sequence
//   cublaslt           cublasLtMatmul: plain for gemm, gemm_batched; the fused GELU_BIAS
//                      epilogue for gemm_bias_gelu
// The memory-bound cases have no vendor rows.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "runtime/bench_cases.h"
#include "runtime/device_buffer.h"

namespace kiln::runtime {

inline constexpr const char* kCublasImpl = "cublas";
inline constexpr const char* kCublasEpilogueImpl = "cublas + epilogue";
inline constexpr const char* kCublasLtImpl = "cublaslt";

// The vendor rows of a case, in the order `kiln bench` prints them (empty for the
// memory-bound cases).
std::vector<std::string> vendor_impls(const BenchCase& c);

// One vendor implementation set up for a job: launch() enqueues all of it on the null
// stream, as Executable::launch does; config says what runs.
struct VendorRun {
  std::string config;
  std::function<void()> launch;
};

// Sets `impl` up for case `c` at `dtype` and `size` on device buffers holding the
// graph's inputs and outputs (in the order of bench_graph's). `arch` is for Kiln's
// epilogue kernel (empty: the default). Throws kiln::Error saying why it cannot be set
// up: the library is missing, cuBLASLt has no algorithm, an unknown impl, ...
VendorRun make_vendor_run(const std::string& impl, const BenchCase& c, DType dtype, const BenchSize& size,
                          const std::vector<DeviceBuffer>& inputs, std::vector<DeviceBuffer>& outputs,
                          const std::string& arch);

// The graph of Kiln's kernel in the "cublas + epilogue" row: y = gelu_tanh(c + bias),
// c [.., M, N] the GEMM's result, bias [N].
ir::Graph vendor_epilogue_graph(DType dtype, const BenchSize& size);

}  // namespace kiln::runtime
