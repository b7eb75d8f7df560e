// DeviceBuffer: allocation through the driver, size-checked copies.
#include "runtime/device_buffer.h"

#include <vector>

#include <fmt/format.h>

#include <cstdio>
#include <utility>

#include "ir/error.h"
#include "runtime/cuda_driver.h"
#include "runtime/device.h"

namespace kiln::runtime {

namespace {

void check_size(const char* copy, const char* preposition, size_t n, size_t bytes) {
  if (n > bytes)
    throw Error(fmt::format("DeviceBuffer::{} of {} bytes {} a buffer of {} bytes", copy, n, preposition, bytes));
}

}  // namespace

DeviceBuffer::DeviceBuffer(size_t bytes) : bytes_(bytes) {
  Device::get();  // the context must be current before allocating
  if (bytes > 0) ptr_ = cu::mem_alloc(bytes);
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : ptr_(std::exchange(other.ptr_, 0)), bytes_(std::exchange(other.bytes_, 0)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    release();
    ptr_ = std::exchange(other.ptr_, 0);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

DeviceBuffer::~DeviceBuffer() { release(); }

void DeviceBuffer::release() noexcept {
  if (!ptr_) return;
  try {
    Device::get();  // this thread may never have made the context current
  } catch (const Error&) {
  }
  // A destructor cannot throw; a failed free means the context is already broken
  // (a kernel faulted), which the next checked call reports anyway.
  if (CUresult result = cu::mem_free(ptr_); result != CUDA_SUCCESS)
    std::fprintf(stderr, "kiln: warning: cuMemFree(0x%llx) failed: %s\n", static_cast<unsigned long long>(ptr_),
                 cu::error_text(result).c_str());
  ptr_ = 0;
  bytes_ = 0;
}

void DeviceBuffer::upload(const void* src, size_t n) {
  check_size("upload", "into", n, bytes_);
  if (n > 0) cu::memcpy_htod(ptr_, src, n);
}

void DeviceBuffer::download(void* dst, size_t n) const {
  check_size("download", "from", n, bytes_);
  if (n > 0) cu::memcpy_dtoh(dst, ptr_, n);
}

void DeviceBuffer::fill_bytes(uint8_t value) {
  if (bytes_ > 0) cu::memset_d8(ptr_, value, bytes_);
}

void DeviceBuffer::copy_from(const DeviceBuffer& other) {
  if (other.bytes_ != bytes_)
    throw Error(fmt::format("DeviceBuffer::copy_from a buffer of {} bytes into one of {} bytes", other.bytes_, bytes_));
  if (bytes_ > 0 && other.ptr_ != ptr_) cu::memcpy_dtod(ptr_, other.ptr_, bytes_);
}

DeviceBuffer DeviceBuffer::from_host(const HostTensor& t) {
  std::vector<std::byte> bytes = t.to_bytes();
  DeviceBuffer b(bytes.size());
  b.upload(bytes.data(), bytes.size());
  return b;
}

HostTensor DeviceBuffer::to_host(const TensorType& t) const {
  std::vector<std::byte> bytes(static_cast<size_t>(t.bytes()));
  download(bytes.data(), bytes.size());
  return HostTensor::from_bytes(t, bytes.data());
}

}  // namespace kiln::runtime
