// The GEMM rate: cuBLAS (runtime/cublas.h) timed on random bf16 matrices.
#include "runtime/gemm_rate.h"

#include <fmt/format.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "ir/error.h"
#include "runtime/cublas.h"
#include "runtime/device.h"
#include "runtime/device_buffer.h"
#include "runtime/timer.h"

namespace kiln::runtime {

namespace {

// Random bf16 values in [-1, 1) from a fixed seed: a GEMM on zeros or constants draws
// less power and runs faster than on data.
std::vector<uint16_t> random_bf16(size_t count, uint64_t seed) {
  std::vector<uint16_t> v(count);
  uint64_t s = seed;
  for (uint16_t& x : v) {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    const float f = static_cast<float>(static_cast<int32_t>(s >> 40) - (1 << 23)) / static_cast<float>(1 << 23);
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    x = static_cast<uint16_t>(bits >> 16);
  }
  return v;
}

}  // namespace

GemmRate measure_gemm_rate(int n) {
  GemmRate r;
  r.source = fmt::format("cuBLAS bf16 GEMM {}^3, fp32 accumulate and output", n);
  std::string why;
  if (!Cublas::available(&why)) {
    r.why_not = why;
    return r;
  }
  // The roof is optional: a failed allocation or launch is reported, not thrown.
  try {
    const Cublas& cublas = Cublas::get();
    const size_t count = size_t(n) * n;
    DeviceBuffer a(count * 2), b(count * 2), c(count * 4);
    a.upload(random_bf16(count, 1).data(), count * 2);
    b.upload(random_bf16(count, 2).data(), count * 2);
    const GemmProblem problem{DType::bf16, DType::f32, 1, n, n, n};
    const float ms = time_kernel_ms([&] { cublas.gemm(problem, a.ptr(), b.ptr(), c.ptr()); }, 3, 10);
    r.tflops = 2.0 * n * double(n) * n / (ms * 1e-3) / 1e12;
  } catch (const Error& e) {
    r.why_not = e.what();
  }
  return r;
}

}  // namespace kiln::runtime
