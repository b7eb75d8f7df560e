// cuBLAS through dlopen: four entry points, declared here with the C types of its API,
// and the numeric values of the few enums they take (cuBLAS's documented constants).
#include "runtime/gemm_rate.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "ir/error.h"
#include "runtime/device.h"
#include "runtime/device_buffer.h"
#include "runtime/timer.h"

namespace kiln::runtime {

namespace {

using Handle = void*;
using CreateFn = int (*)(Handle*);
using DestroyFn = int (*)(Handle);
using GemmExFn = int (*)(Handle, int, int, int, int, int, const void*, const void*, int, int, const void*, int, int,
                         const void*, void*, int, int, int, int);

constexpr int kOpN = 0;             // CUBLAS_OP_N
constexpr int kBf16 = 14;           // CUDA_R_16BF
constexpr int kF32 = 0;             // CUDA_R_32F
constexpr int kComputeF32 = 68;     // CUBLAS_COMPUTE_32F
constexpr int kDefaultAlgo = -1;    // CUBLAS_GEMM_DEFAULT

void* open_cublas(std::string* tried) {
  for (const char* name : {"libcublas.so.13", "libcublas.so.12", "libcublas.so"}) {
    if (void* lib = dlopen(name, RTLD_NOW | RTLD_LOCAL)) return lib;
    *tried += std::string(tried->empty() ? "" : ", ") + name;
  }
  return nullptr;
}

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
  std::string tried;
  void* lib = open_cublas(&tried);
  if (!lib) {
    r.why_not = fmt::format("cuBLAS not found (tried {})", tried);
    return r;
  }
  auto create = reinterpret_cast<CreateFn>(dlsym(lib, "cublasCreate_v2"));
  auto destroy = reinterpret_cast<DestroyFn>(dlsym(lib, "cublasDestroy_v2"));
  auto gemm = reinterpret_cast<GemmExFn>(dlsym(lib, "cublasGemmEx"));
  if (!create || !destroy || !gemm) {
    r.why_not = "cuBLAS lacks cublasCreate_v2, cublasDestroy_v2 or cublasGemmEx";
    return r;
  }
  Device::get();  // the context cuBLAS runs in
  Handle handle = nullptr;
  if (int status = create(&handle); status != 0) {
    r.why_not = fmt::format("cublasCreate failed (status {})", status);
    return r;
  }
  // The roof is optional: a failed allocation or launch is reported, not thrown.
  try {
    const size_t count = size_t(n) * n;
    DeviceBuffer a(count * 2), b(count * 2), c(count * 4);
    a.upload(random_bf16(count, 1).data(), count * 2);
    b.upload(random_bf16(count, 2).data(), count * 2);
    const float alpha = 1.0f, beta = 0.0f;
    int status = 0;
    auto launch = [&] {
      status = gemm(handle, kOpN, kOpN, n, n, n, &alpha, reinterpret_cast<const void*>(a.ptr()), kBf16, n,
                    reinterpret_cast<const void*>(b.ptr()), kBf16, n, &beta, reinterpret_cast<void*>(c.ptr()),
                    kF32, n, kComputeF32, kDefaultAlgo);
    };
    const float ms = time_kernel_ms(launch, 3, 10);
    if (status != 0) r.why_not = fmt::format("cublasGemmEx failed (status {})", status);
    else r.tflops = 2.0 * n * double(n) * n / (ms * 1e-3) / 1e12;
  } catch (const Error& e) {
    r.why_not = e.what();
  }
  destroy(handle);
  return r;
}

}  // namespace kiln::runtime
