// The compute ceiling of the roofline: the vendor library's GEMM rate, measured in the
// same run as the copy bandwidth. cuBLAS is loaded at run time (as the driver is), so
// Kiln builds and runs without it; where it is missing the rate says why.
#pragma once
#include <string>

namespace kiln::runtime {

struct GemmRate {
  double tflops = 0;   // 0 when not measured
  std::string source;  // what was timed, e.g. "cuBLAS bf16 GEMM 8192^3, fp32 accumulate"
  std::string why_not; // set when tflops is 0
};

// Times cublasGemmEx on random bf16 matrices of n x n (median of several runs).
GemmRate measure_gemm_rate(int n = 8192);

}  // namespace kiln::runtime
