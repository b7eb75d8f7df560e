// The GPU comparison kernel and its host side. See device_compare.h.
#include "runtime/device_compare.h"

#include <fmt/format.h>


#include "ir/error.h"
#include "runtime/cuda_driver.h"
#include "runtime/device.h"
#include "runtime/helper_kernel.h"
#include "runtime/timer.h"

namespace kiln::runtime {

namespace {

// A fixed grid: each thread walks a fixed set of elements, so the sums' order (and
// their rounding) never changes.
constexpr unsigned kBlocks = 528;
constexpr unsigned kThreads = 256;

// One kernel per dtype; GOT_T and READ say how an element is read.
constexpr const char* kSource = R"(
#include <cuda_fp16.h>
extern "C" __global__ void __launch_bounds__(256) kiln_compare(const GOT_T* __restrict__ got,
    const double* __restrict__ want, unsigned long long n, double* __restrict__ sums,
    unsigned long long* __restrict__ counts) {
  __shared__ double s_diff2[256], s_ref2[256], s_max[256];
  __shared__ unsigned long long s_bad[256], s_mis[256];
  double diff2 = 0, ref2 = 0, max_abs = 0;
  unsigned long long bad = 0, mis = 0;
  for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (unsigned long long)gridDim.x * blockDim.x) {
    const double g = READ(got, i), w = want[i];
    if (!isfinite(w)) {  // the reference is NaN or Inf itself: the same class passes
      if (!((isnan(w) && isnan(g)) || g == w)) ++bad;
      continue;
    }
    if (!isfinite(g)) { ++bad; continue; }
    if (g != w) ++mis;
    diff2 += (g - w) * (g - w);
    ref2 += w * w;
    max_abs = fmax(max_abs, fabs(g - w));
  }
  const unsigned t = threadIdx.x;
  s_diff2[t] = diff2; s_ref2[t] = ref2; s_max[t] = max_abs; s_bad[t] = bad; s_mis[t] = mis;
  __syncthreads();
  for (unsigned half = blockDim.x / 2; half > 0; half /= 2) {
    if (t < half) {
      s_diff2[t] += s_diff2[t + half];
      s_ref2[t] += s_ref2[t + half];
      s_max[t] = fmax(s_max[t], s_max[t + half]);
      s_bad[t] += s_bad[t + half];
      s_mis[t] += s_mis[t + half];
    }
    __syncthreads();
  }
  if (t == 0) {
    sums[3 * blockIdx.x] = s_diff2[0];
    sums[3 * blockIdx.x + 1] = s_ref2[0];
    sums[3 * blockIdx.x + 2] = s_max[0];
    counts[2 * blockIdx.x] = s_bad[0];
    counts[2 * blockIdx.x + 1] = s_mis[0];
  }
}
)";

std::string source_for(DType t) {
  std::string got;
  switch (t) {
    case DType::f32: got = "float"; break;
    case DType::f16: case DType::bf16: got = "unsigned short"; break;
    case DType::i32: got = "int"; break;
    case DType::i1: got = "unsigned char"; break;
    case DType::i8: got = "signed char"; break;
    case DType::i4: got = "unsigned char"; break;  // two a byte, the even element in the low nibble
    case DType::f8e4m3: case DType::f8e5m2: got = "unsigned char"; break;
  }
  std::string prefix = fmt::format("#define GOT_T {}\n", got);
  if (t == DType::f16) prefix += "#define DECODE(x) ((double)__half2float(__ushort_as_half(x)))\n";
  else if (t == DType::bf16) prefix += "#define DECODE(x) ((double)__uint_as_float((unsigned)(x) << 16))\n";
  else if (t == DType::i1) prefix += "#define DECODE(x) ((x) != 0 ? 1.0 : 0.0)\n";
  else if (is_fp8(t))
    prefix += fmt::format("#include <cuda_fp8.h>\n#define DECODE(x) ((double)__half2float(__half(__nv_cvt_fp8_to_halfraw((x), "
                          "{}))))\n",
                          t == DType::f8e4m3 ? "__NV_E4M3" : "__NV_E5M2");
  else prefix += "#define DECODE(x) ((double)(x))\n";
  if (t == DType::i4)  // element i: nibble i % 2 of byte i / 2, sign-extended
    prefix += "#define READ(p, i) DECODE((int)((((p)[(i) >> 1] >> (((i) & 1) * 4)) & 0xf) ^ 8) - 8)\n";
  else
    prefix += "#define READ(p, i) DECODE((p)[i])\n";
  return prefix + kSource;
}

}  // namespace

DeviceReference::DeviceReference(const HostTensor& want, double bound)
    : want_(&want), bound_(bound), values_(want.values.size() * sizeof(double)) {
  if (!want.values.empty()) values_.upload(want.values.data(), want.values.size() * sizeof(double));
}

Comparison DeviceReference::compare(const DeviceBuffer& got, const std::string& arch) const {
  const HostTensor& want = *want_;
  const unsigned long long n = want.values.size();
  if (got.bytes() < static_cast<size_t>(want.type.bytes()))
    throw Error(fmt::format("device comparison: the buffer holds {} bytes, a {} needs {}", got.bytes(),
                            want.type.str(), want.type.bytes()));
  CompareSums total;
  if (n > 0) {
    DeviceBuffer sums(kBlocks * 3 * sizeof(double)), counts(kBlocks * 2 * sizeof(unsigned long long));
    CUdeviceptr got_ptr = got.ptr(), want_ptr = values_.ptr(), sums_ptr = sums.ptr(), counts_ptr = counts.ptr();
    unsigned long long count = n;
    std::vector<void*> args = {&got_ptr, &want_ptr, &count, &sums_ptr, &counts_ptr};
    launch_kernel(helper_kernel(source_for(want.type.dtype), "kiln_compare", arch), Dim3{kBlocks}, Dim3{kThreads}, 0, args, "kiln_compare");
    std::vector<double> s(kBlocks * 3);
    std::vector<unsigned long long> c(kBlocks * 2);
    sums.download(s.data(), s.size() * sizeof(double));  // synchronous: waits for the kernel
    counts.download(c.data(), c.size() * sizeof(unsigned long long));
    for (unsigned b = 0; b < kBlocks; ++b) {
      CompareSums part;
      part.diff2 = s[3 * b];
      part.ref2 = s[3 * b + 1];
      part.max_abs = s[3 * b + 2];
      part.bad_nonfinite = static_cast<int64_t>(c[2 * b]);
      part.mismatches = static_cast<int64_t>(c[2 * b + 1]);
      total.merge(part);
    }
  }
  return finish_comparison(total, want, bound_);
}

}  // namespace kiln::runtime
