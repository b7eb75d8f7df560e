// DeviceBuffer: an owned block of device memory with copies to and from the host.
#pragma once
#include <cuda.h>

#include <cstddef>
#include <cstdint>

#include "ir/tensor.h"

namespace kiln::runtime {

class DeviceBuffer {
public:
  DeviceBuffer() = default;
  // Allocates `bytes` on Device::get() (a zero-byte buffer holds no allocation).
  explicit DeviceBuffer(size_t bytes);
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer();

  size_t bytes() const { return bytes_; }
  CUdeviceptr ptr() const { return ptr_; }

  // Copies `n` bytes from the host to the start of the buffer (n <= bytes()).
  void upload(const void* src, size_t n);
  // Copies the first `n` bytes of the buffer to the host (n <= bytes()).
  void download(void* dst, size_t n) const;
  // Sets every byte, e.g. 0xFF to poison an output with NaNs before a kernel writes it.
  void fill_bytes(uint8_t value);
  // Copies all of `other` into this buffer, which must have the same size.
  void copy_from(const DeviceBuffer& other);

  // A new buffer holding `t` packed as the device stores it.
  static DeviceBuffer from_host(const HostTensor& t);
  // The first t.bytes() bytes of the buffer read back as a tensor of type `t`.
  HostTensor to_host(const TensorType& t) const;

private:
  void release() noexcept;
  CUdeviceptr ptr_ = 0;
  size_t bytes_ = 0;
};

}  // namespace kiln::runtime
