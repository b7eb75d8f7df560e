// Helpers for tests that need a GPU: KILN_REQUIRE_GPU() skips the test, saying
// why, on a machine where no device can be used (no libcuda.so.1, no device, a
// failed cuInit), so that the GPU test binary passes on build machines and in CI.
#pragma once
#include <gtest/gtest.h>

#include <string>

#include "runtime/cuda_driver.h"

namespace kiln::gpu_test {

// Empty when a GPU is usable; otherwise why not ("libcuda.so.1 not found", ...).
inline std::string why_no_gpu() {
  std::string why;
  return runtime::gpu_available(&why) ? std::string() : why;
}

}  // namespace kiln::gpu_test

#define KILN_REQUIRE_GPU()                                                              \
  do {                                                                                  \
    if (std::string kiln_why_no_gpu = ::kiln::gpu_test::why_no_gpu(); !kiln_why_no_gpu.empty()) \
      GTEST_SKIP() << "no GPU: " << kiln_why_no_gpu;                                    \
  } while (0)
