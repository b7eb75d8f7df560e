// The read-only and write-only stream kernels and the ceiling of a read/write mix. See
// stream_ceilings.h.
#include "runtime/stream_ceilings.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "ir/error.h"
#include "runtime/cuda_driver.h"
#include "runtime/device.h"
#include "runtime/device_buffer.h"
#include "runtime/helper_kernel.h"
#include "runtime/timer.h"

namespace kiln::runtime {

namespace {

constexpr unsigned kThreads = 256;
constexpr size_t kChunkBytes = 64 * 1024;  // read by one block into one partial sum

// Each block sums one 64 KiB chunk with four 16-byte loads in flight per thread and
// writes one float; the fill's blocks write 16 KiB each, four 16-byte stores a thread.
constexpr const char* kSource = R"(
extern "C" __global__ void __launch_bounds__(256) kiln_read_stream(const float4* __restrict__ x,
    float* __restrict__ partial) {
  const float4* chunk = x + (unsigned long long)blockIdx.x * 4096;
  float sum = 0.f;
#pragma unroll
  for (int i = 0; i < 16; i += 4) {
    float4 v[4];
#pragma unroll
    for (int j = 0; j < 4; ++j) v[j] = chunk[(i + j) * 256 + threadIdx.x];
#pragma unroll
    for (int j = 0; j < 4; ++j) sum += (v[j].x + v[j].y) + (v[j].z + v[j].w);
  }
  for (int o = 16; o > 0; o /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, o);
  __shared__ float warp_sums[8];
  if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = sum;
  __syncthreads();
  if (threadIdx.x == 0) {
    float total = 0.f;
    for (int w = 0; w < 8; ++w) total += warp_sums[w];
    partial[blockIdx.x] = total;
  }
}

extern "C" __global__ void __launch_bounds__(256) kiln_write_stream(float4* __restrict__ y,
    unsigned long long n4) {
  const float4 one = make_float4(1.f, 1.f, 1.f, 1.f);
  const unsigned long long first = (unsigned long long)blockIdx.x * 1024 + threadIdx.x;
#pragma unroll
  for (int j = 0; j < 4; ++j)
    if (first + j * 256 < n4) y[first + j * 256] = one;
}
)";

CUfunction stream_kernel(const char* entry) { return helper_kernel(kSource, entry, Device::get().compile_target()); }

// Fills `bytes` at `ptr` with 1.0f through the write kernel (four 16-byte stores a thread).
void fill_ones(CUdeviceptr ptr, size_t bytes) {
  unsigned long long vectors = bytes / 16;
  std::vector<void*> args = {&ptr, &vectors};
  const auto blocks = static_cast<unsigned>((vectors + 1023) / 1024);
  launch_kernel(stream_kernel("kiln_write_stream"), Dim3{blocks}, Dim3{kThreads}, 0, args, "kiln_write_stream");
}

void check_size(size_t bytes, const char* what) {
  if (bytes == 0 || bytes % kChunkBytes != 0)
    throw Error(fmt::format("{}: the size must be a positive multiple of {} bytes, got {}", what, kChunkBytes, bytes));
}

}  // namespace

double measure_read_bandwidth_gbs(size_t bytes) {
  check_size(bytes, "measure_read_bandwidth_gbs");
  const size_t blocks = bytes / kChunkBytes;
  DeviceBuffer x(bytes), partial(blocks * sizeof(float));
  const size_t floats = bytes / sizeof(float);
  // Ones uploaded from the host, 64 MiB at a time. Filled by the write kernel instead,
  // the same ones read at 3960 GB/s on the H200, where uploaded ones read at 4540-4620
  // (bench/RESULTS.md): that fill made the ceiling a floor. Why is not known.
  {
    const size_t piece = std::min<size_t>(bytes, size_t{64} << 20);
    const std::vector<float> ones(piece / sizeof(float), 1.0f);
    for (size_t at = 0; at < bytes; at += piece)
      cu::memcpy_htod(x.ptr() + at, ones.data(), std::min(piece, bytes - at));
  }
  CUdeviceptr x_ptr = x.ptr(), partial_ptr = partial.ptr();
  std::vector<void*> args = {&x_ptr, &partial_ptr};
  CUfunction f = stream_kernel("kiln_read_stream");
  auto launch = [&] { launch_kernel(f, Dim3{static_cast<unsigned>(blocks)}, Dim3{kThreads}, 0, args, "kiln_read_stream"); };
  const float ms = time_kernel_ms(launch, 3, 11);
  std::vector<float> sums(blocks);
  partial.download(sums.data(), blocks * sizeof(float));
  double total = 0;
  for (float s : sums) total += s;
  if (std::abs(total - static_cast<double>(floats)) > 0.5)
    throw Error(fmt::format("the read-only stream kernel summed {} ones to {}: it skipped part of its input", floats, total));
  return static_cast<double>(bytes) / (static_cast<double>(ms) * 1e-3) / 1e9;
}

double measure_write_bandwidth_gbs(size_t bytes) {
  check_size(bytes, "measure_write_bandwidth_gbs");
  DeviceBuffer y(bytes);
  y.fill_bytes(0);
  const float ms = time_kernel_ms([&] { fill_ones(y.ptr(), bytes); }, 3, 11);
  // The fill is zeroed first, so a kernel that stopped short leaves its last vector unset.
  float last[4] = {};
  cu::memcpy_dtoh(last, y.ptr() + bytes - sizeof last, sizeof last);
  if (last[0] != 1.0f || last[3] != 1.0f)
    throw Error("the write-only stream kernel left the end of its output unwritten");
  return static_cast<double>(bytes) / (static_cast<double>(ms) * 1e-3) / 1e9;
}

StreamCeilings measure_stream_ceilings() {
  StreamCeilings c;
  c.copy_gbs = measure_copy_bandwidth_gbs();
  c.read_gbs = measure_read_bandwidth_gbs();
  c.write_gbs = measure_write_bandwidth_gbs();
  return c;
}

double mix_ceiling_gbs(int64_t read_bytes, int64_t written_bytes, const StreamCeilings& c) {
  if (read_bytes < 0 || written_bytes < 0 || read_bytes + written_bytes == 0) return 0;
  const double written_share = static_cast<double>(written_bytes) / static_cast<double>(read_bytes + written_bytes);
  // Seconds per GB at either end of the segment the share lies on, and where on it.
  double from = 0, to = 0, along = 0;
  if (written_share <= 0.5) {
    if (c.read_gbs <= 0 || (written_share > 0 && c.copy_gbs <= 0)) return 0;
    from = 1.0 / c.read_gbs;
    to = written_share > 0 ? 1.0 / c.copy_gbs : from;
    along = written_share / 0.5;
  } else {
    if (c.write_gbs <= 0 || (written_share < 1 && c.copy_gbs <= 0)) return 0;
    from = written_share < 1 ? 1.0 / c.copy_gbs : 1.0 / c.write_gbs;
    to = 1.0 / c.write_gbs;
    along = (written_share - 0.5) / 0.5;
  }
  return 1.0 / (from + along * (to - from));
}

}  // namespace kiln::runtime
