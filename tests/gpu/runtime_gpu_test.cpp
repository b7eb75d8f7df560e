// The runtime on a real GPU: device properties, buffers, a kernel compiled through
// the cache, loaded, launched and checked against the CPU, timing and bandwidth,
// and the errors of failed driver calls. Each test skips where no GPU is usable.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <random>
#include <vector>

#include "gpu_test_util.h"
#include "ir/error.h"
#include "ir/tensor.h"
#include "runtime/compile_cache.h"
#include "runtime/cuda_driver.h"
#include "runtime/device.h"
#include "runtime/device_buffer.h"
#include "runtime/stream_ceilings.h"
#include "runtime/timer.h"

using namespace kiln;
using namespace kiln::runtime;
namespace fs = std::filesystem;

namespace {

const char* kAxpySource = R"(
extern "C" __global__ void axpy(float a, const float* __restrict__ x, const float* __restrict__ y,
                                float* __restrict__ out, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) out[i] = a * x[i] + y[i];
}
)";

// Each thread stores its index in dynamic shared memory at a strided slot, then
// reads a neighbour's slot back, so the whole requested size is used.
const char* kSharedSource = R"(
extern "C" __global__ void shared_echo(float* out, int floats_per_thread) {
  extern __shared__ float slots[];
  for (int k = 0; k < floats_per_thread; ++k) slots[k * blockDim.x + threadIdx.x] = threadIdx.x + k;
  __syncthreads();
  int neighbour = (threadIdx.x + 1) % blockDim.x;
  out[threadIdx.x] = slots[(floats_per_thread - 1) * blockDim.x + neighbour];
}
)";

class TempDir {
public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "kiln-gpu-test-XXXXXX").string();
    path_ = mkdtemp(pattern.data());
  }
  ~TempDir() { fs::remove_all(path_); }
  const std::string& path() const { return path_; }

private:
  std::string path_;
};

std::vector<float> random_floats(int64_t n, uint64_t seed) {
  HostTensor tensor = random_tensor(TensorType{DType::f32, {n}}, seed);
  return std::vector<float>(tensor.values.begin(), tensor.values.end());
}

template <typename F>
std::string error_of(F body) {
  try {
    body();
  } catch (const kiln::Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected a kiln::Error";
  return "";
}

CompileOptions device_options() { return {.arch = Device::get().compile_target(), .extra_flags = {}}; }

// Runs axpy on the device into a poisoned output and returns the output.
std::vector<float> run_axpy(CUfunction axpy, float a, const std::vector<float>& x, const std::vector<float>& y) {
  long long n = static_cast<long long>(x.size());
  size_t bytes = x.size() * sizeof(float);
  DeviceBuffer dx(bytes), dy(bytes), dout(bytes);
  dx.upload(x.data(), bytes);
  dy.upload(y.data(), bytes);
  dout.fill_bytes(0xFF);  // NaN everywhere: an element the kernel skips cannot pass
  CUdeviceptr px = dx.ptr(), py = dy.ptr(), pout = dout.ptr();
  unsigned block = 256;
  unsigned grid = static_cast<unsigned>((n + block - 1) / block);
  launch_kernel(axpy, {grid}, {block}, 0, {&a, &px, &py, &pout, &n}, "axpy");
  Device::get().synchronize();
  std::vector<float> out(x.size());
  dout.download(out.data(), bytes);
  return out;
}

}  // namespace

TEST(RuntimeGpu, DeviceReportsItsProperties) {
  KILN_REQUIRE_GPU();
  Device& device = Device::get();
  EXPECT_FALSE(device.name().empty());
  EXPECT_EQ(device.arch().rfind("sm_", 0), 0u) << device.arch();
  EXPECT_EQ(device.compile_target().rfind(device.arch(), 0), 0u) << device.compile_target();
  EXPECT_GT(device.sm_count(), 0);
  EXPECT_GT(device.l2_bytes(), 0u);
  EXPECT_GE(device.max_shared_per_block_optin(), 48u * 1024);
  EXPECT_GT(device.total_bytes(), 0u);
  if (device.compute_capability() == 90) {
    EXPECT_EQ(device.arch(), "sm_90");
    EXPECT_EQ(device.compile_target(), "sm_90a");
  }
  std::printf("device: %s, %s (target %s), %d SMs, %zu MiB L2, %zu KiB shared opt-in\n", device.name().c_str(),
              device.arch().c_str(), device.compile_target().c_str(), device.sm_count(), device.l2_bytes() >> 20,
              device.max_shared_per_block_optin() >> 10);
}

TEST(RuntimeGpu, AxpyThroughTheCacheMatchesTheCpu) {
  KILN_REQUIRE_GPU();
  TempDir cache_dir;
  const int64_t n = 1000003;  // not a multiple of the block size: the tail block is partial
  const float a = 1.75f;
  std::vector<float> x = random_floats(n, 1), y = random_floats(n, 2);

  CompileCache cache(cache_dir.path());
  CompileResult compiled = cache.compile(kAxpySource, "axpy.cu", device_options());
  ASSERT_FALSE(compiled.cubin.empty());
  Module module(compiled.cubin.data(), compiled.cubin.size(), "axpy.cu");
  std::vector<float> out = run_axpy(module.function("axpy"), a, x, y);

  double error2 = 0, norm2 = 0;
  int64_t bad = 0;
  for (int64_t i = 0; i < n; ++i) {
    double expected = static_cast<double>(a) * x[i] + y[i];
    if (!std::isfinite(out[i])) ++bad;
    error2 += (out[i] - expected) * (out[i] - expected);
    norm2 += expected * expected;
  }
  EXPECT_EQ(bad, 0) << "elements left unwritten or not finite";
  EXPECT_LT(std::sqrt(error2 / norm2), 1e-6);

  // The same kernel from a fresh cache object comes from disk and computes the same bits.
  CompileCache fresh(cache_dir.path());
  CompileResult cached = fresh.compile(kAxpySource, "axpy.cu", device_options());
  EXPECT_TRUE(cached.from_cache);
  EXPECT_EQ(fresh.stats().disk_hits, 1u);
  Module cached_module(cached.cubin.data(), cached.cubin.size(), "axpy.cu");
  std::vector<float> again = run_axpy(cached_module.function("axpy"), a, x, y);
  EXPECT_EQ(std::memcmp(again.data(), out.data(), out.size() * sizeof(float)), 0);
}

TEST(RuntimeGpu, BuffersRoundTrip) {
  KILN_REQUIRE_GPU();
  const size_t bytes = 1000003;
  std::vector<uint8_t> data(bytes);
  std::mt19937 random(7);
  for (auto& byte : data) byte = static_cast<uint8_t>(random());

  DeviceBuffer first(bytes);
  EXPECT_EQ(first.bytes(), bytes);
  EXPECT_NE(first.ptr(), 0u);
  first.upload(data.data(), bytes);
  std::vector<uint8_t> back(bytes);
  first.download(back.data(), bytes);
  EXPECT_EQ(back, data);

  DeviceBuffer second(bytes);
  second.fill_bytes(0xFF);
  second.copy_from(first);
  std::fill(back.begin(), back.end(), 0);
  second.download(back.data(), bytes);
  EXPECT_EQ(back, data);

  second.fill_bytes(0xAB);
  second.download(back.data(), bytes);
  EXPECT_EQ(back, std::vector<uint8_t>(bytes, 0xAB));

  DeviceBuffer moved = std::move(second);
  EXPECT_EQ(second.ptr(), 0u);
  EXPECT_EQ(second.bytes(), 0u);
  EXPECT_EQ(moved.bytes(), bytes);
}

TEST(RuntimeGpu, BufferCopiesCheckSizes) {
  KILN_REQUIRE_GPU();
  DeviceBuffer small(16), large(32);
  std::vector<char> host(64);
  EXPECT_NE(error_of([&] { small.upload(host.data(), 17); }).find("upload of 17 bytes"), std::string::npos);
  EXPECT_NE(error_of([&] { small.download(host.data(), 64); }).find("download of 64 bytes"), std::string::npos);
  EXPECT_NE(error_of([&] { large.copy_from(small); }).find("copy_from"), std::string::npos);
}

TEST(RuntimeGpu, FailedAllocationNamesTheCallAndTheCode) {
  KILN_REQUIRE_GPU();
  const size_t petabyte = size_t(1) << 50;
  std::string message = error_of([&] { DeviceBuffer huge(petabyte); });
  EXPECT_NE(message.find("cuMemAlloc(" + std::to_string(petabyte) + " bytes) failed: CUDA_ERROR_OUT_OF_MEMORY"),
            std::string::npos)
      << message;
  DeviceBuffer after(1024);  // an out-of-memory error leaves the context usable
  after.fill_bytes(0);
}

TEST(RuntimeGpu, BadLaunchNamesTheKernelAndConfig) {
  KILN_REQUIRE_GPU();
  CompileResult compiled = CompileCache::global().compile(kAxpySource, "axpy.cu", device_options());
  Module module(compiled.cubin.data(), compiled.cubin.size(), "axpy.cu");
  CUfunction axpy = module.function("axpy");
  float a = 1;
  CUdeviceptr null_ptr = 0;
  long long n = 0;
  // 4096 threads per block is more than any NVIDIA GPU allows: rejected at launch.
  std::string message = error_of(
      [&] { launch_kernel(axpy, {1}, {4096}, 0, {&a, &null_ptr, &null_ptr, &null_ptr, &n}, "axpy"); });
  EXPECT_NE(message.find("cuLaunchKernel(axpy, grid (1, 1, 1), block (4096, 1, 1)"), std::string::npos) << message;
  EXPECT_NE(message.find("CUDA_ERROR_INVALID_VALUE"), std::string::npos) << message;
}

TEST(RuntimeGpu, MissingKernelNamesIt) {
  KILN_REQUIRE_GPU();
  CompileResult compiled = CompileCache::global().compile(kAxpySource, "axpy.cu", device_options());
  Module module(compiled.cubin.data(), compiled.cubin.size(), "axpy.cu");
  std::string message = error_of([&] { module.function("no_such_kernel"); });
  EXPECT_NE(message.find("cuModuleGetFunction('no_such_kernel'"), std::string::npos) << message;
  EXPECT_NE(message.find("CUDA_ERROR_NOT_FOUND"), std::string::npos) << message;
}

TEST(RuntimeGpu, LaunchOptsIntoLargeSharedMemory) {
  KILN_REQUIRE_GPU();
  const unsigned threads = 256;
  const int floats_per_thread = 100;  // 100 KiB of dynamic shared memory
  const unsigned shared_bytes = threads * floats_per_thread * sizeof(float);
  if (Device::get().max_shared_per_block_optin() < shared_bytes) GTEST_SKIP() << "device allows less shared memory";
  CompileResult compiled = CompileCache::global().compile(kSharedSource, "shared_echo.cu", device_options());
  Module module(compiled.cubin.data(), compiled.cubin.size(), "shared_echo.cu");
  DeviceBuffer out(threads * sizeof(float));
  out.fill_bytes(0xFF);
  CUdeviceptr pout = out.ptr();
  int per_thread = floats_per_thread;
  launch_kernel(module.function("shared_echo"), {1}, {threads}, shared_bytes, {&pout, &per_thread}, "shared_echo");
  Device::get().synchronize();
  std::vector<float> host(threads);
  out.download(host.data(), threads * sizeof(float));
  for (unsigned t = 0; t < threads; ++t) EXPECT_EQ(host[t], float((t + 1) % threads + floats_per_thread - 1)) << t;
}

TEST(RuntimeGpu, Sm90aKernelWithWgmmaLoads) {
  KILN_REQUIRE_GPU();
  if (Device::get().compute_capability() != 90) GTEST_SKIP() << "wgmma needs compute capability 9.0";
  const char* source = R"(
extern "C" __global__ void fence(float* out) {
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
  out[threadIdx.x] = 1.0f;
}
)";
  CompileResult compiled = CompileCache::global().compile(source, "fence.cu", device_options());
  Module module(compiled.cubin.data(), compiled.cubin.size(), "fence.cu");
  DeviceBuffer out(128 * sizeof(float));
  CUdeviceptr pout = out.ptr();
  launch_kernel(module.function("fence"), {1}, {128}, 0, {&pout}, "fence");
  Device::get().synchronize();
  std::vector<float> host(128);
  out.download(host.data(), host.size() * sizeof(float));
  EXPECT_EQ(host, std::vector<float>(128, 1.0f));
}

TEST(RuntimeGpu, TimingGivesAPositiveMedian) {
  KILN_REQUIRE_GPU();
  CompileResult compiled = CompileCache::global().compile(kAxpySource, "axpy.cu", device_options());
  Module module(compiled.cubin.data(), compiled.cubin.size(), "axpy.cu");
  CUfunction axpy = module.function("axpy");
  long long n = 1 << 24;
  DeviceBuffer x(n * sizeof(float)), y(n * sizeof(float)), out(n * sizeof(float));
  x.fill_bytes(0);
  y.fill_bytes(0);
  float a = 2;
  CUdeviceptr px = x.ptr(), py = y.ptr(), pout = out.ptr();
  float ms = time_kernel_ms(
      [&] { launch_kernel(axpy, {static_cast<unsigned>(n / 256)}, {256}, 0, {&a, &px, &py, &pout, &n}, "axpy"); }, 2,
      7);
  EXPECT_GT(ms, 0.0f);
  // 12 bytes moved per element; no GPU moves them faster than 100 TB/s.
  EXPECT_LT(12.0 * n / (ms * 1e-3) / 1e12, 100.0);
  std::printf("axpy over %lld floats: %.4f ms, %.0f GB/s\n", n, ms, 12.0 * n / (ms * 1e-3) / 1e9);
}

// A short launch replayed from a CUDA graph: it runs (the output is written), its time
// is positive and not above the event-pair time of the same launch, and the launches
// went to the capture's stream, not the null stream (which cannot be captured).
TEST(RuntimeGpu, GraphTimingRunsTheCapturedLaunches) {
  KILN_REQUIRE_GPU();
  CompileResult compiled = CompileCache::global().compile(kAxpySource, "axpy.cu", device_options());
  Module module(compiled.cubin.data(), compiled.cubin.size(), "axpy.cu");
  CUfunction axpy = module.function("axpy");
  long long n = 1 << 12;  // a few microseconds: the launch costs more than the kernel
  DeviceBuffer x(n * sizeof(float)), y(n * sizeof(float)), out(n * sizeof(float));
  std::vector<float> ones(n, 1.0f);
  x.upload(ones.data(), n * sizeof(float));
  y.upload(ones.data(), n * sizeof(float));
  out.fill_bytes(0);
  float a = 2;
  CUdeviceptr px = x.ptr(), py = y.ptr(), pout = out.ptr();
  auto launch = [&] {
    launch_kernel(axpy, {static_cast<unsigned>(n / 256)}, {256}, 0, {&a, &px, &py, &pout, &n}, "axpy");
  };
  const float events = time_kernel_ms(launch, 2, 50);
  const float graph = time_in_graph_ms(launch, 2, 20, 20);
  EXPECT_GT(graph, 0.0f);
  EXPECT_LE(graph, events * 1.05f);
  std::vector<float> host(n);
  out.download(host.data(), n * sizeof(float));
  EXPECT_EQ(host, std::vector<float>(n, 3.0f));
  std::printf("axpy over %lld floats: %.2f us between events, %.2f us a launch in a CUDA graph\n", n, events * 1e3,
              graph * 1e3);
}

// The tuner's warm-up runs a kernel until the GPU has spent the time asked in it: the
// calls it made, timed again, take about that long at least; asking for none makes none.
TEST(RuntimeGpu, WarmUpRunsUntilTheGpuHasSpentTheTimeAsked) {
  KILN_REQUIRE_GPU();
  CompileResult compiled = CompileCache::global().compile(kAxpySource, "axpy.cu", device_options());
  Module module(compiled.cubin.data(), compiled.cubin.size(), "axpy.cu");
  CUfunction axpy = module.function("axpy");
  long long n = 1 << 22;
  DeviceBuffer x(n * sizeof(float)), y(n * sizeof(float)), out(n * sizeof(float));
  std::vector<float> ones(n, 1.0f);
  x.upload(ones.data(), n * sizeof(float));
  y.upload(ones.data(), n * sizeof(float));
  float a = 2;
  CUdeviceptr px = x.ptr(), py = y.ptr(), pout = out.ptr();
  int launches = 0;
  auto launch = [&] {
    launch_kernel(axpy, {static_cast<unsigned>(n / 256)}, {256}, 0, {&a, &px, &py, &pout, &n}, "axpy");
    ++launches;
  };
  const int calls = warm_up_for_ms(launch, 5.0f);
  EXPECT_EQ(calls, launches);
  EXPECT_GE(static_cast<float>(calls) * time_kernel_ms(launch, 2, 20), 5.0f * 0.8f);
  EXPECT_EQ(warm_up_for_ms(launch, 0.0f), 0);
  EXPECT_THROW(warm_up_for_ms(launch, -1.0f), Error);
}

// A launch that puts nothing into the capture (it went to a stream of its own) is an
// error, not a time of zero.
TEST(RuntimeGpu, GraphTimingRefusesAnEmptyCapture) {
  KILN_REQUIRE_GPU();
  EXPECT_THROW(time_in_graph_ms([] {}, 0, 2, 2), Error);
}

TEST(RuntimeGpu, CopyBandwidthIsPositive) {
  KILN_REQUIRE_GPU();
  double gbs = measure_copy_bandwidth_gbs();
  EXPECT_GT(gbs, 0.0);
  EXPECT_LT(gbs, 100000.0);
  std::printf("device-to-device copy: %.0f GB/s (read + write)\n", gbs);
}

// The read-only and write-only stream kernels check their own work (the sum of ones,
// the last vector written) and give rates of the order of the copy's.
TEST(RuntimeGpu, ReadAndWriteCeilingsAreOfTheCopysOrder) {
  KILN_REQUIRE_GPU();
  const double copy = measure_copy_bandwidth_gbs(size_t(256) << 20);
  const double read = measure_read_bandwidth_gbs(size_t(256) << 20);
  const double write = measure_write_bandwidth_gbs(size_t(256) << 20);
  std::printf("copy %.0f, read-only %.0f, write-only %.0f GB/s\n", copy, read, write);
  EXPECT_GT(read, 0.5 * copy);
  EXPECT_LT(read, 3.0 * copy);
  EXPECT_GT(write, 0.5 * copy);
  EXPECT_LT(write, 3.0 * copy);
  EXPECT_THROW(measure_read_bandwidth_gbs(1000), Error);
}
