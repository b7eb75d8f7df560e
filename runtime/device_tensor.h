// DeviceTensor: a tensor in device memory that the caller owns (its own allocation,
// or a framework's tensor reached through DLPack), described by dtype, shape and
// strides, so that a Program runs on it in place, with no copy. The checks here need
// no GPU: they compare the description with what the compiled graph expects.
#pragma once
#include <cuda.h>

#include <cstdint>
#include <string>
#include <vector>

#include "ir/shape.h"
#include "passes/lower.h"

namespace kiln::runtime {

struct DeviceTensor {
  CUdeviceptr data = 0;
  DType dtype = DType::f32;
  Shape shape;
  std::vector<int64_t> strides;  // in elements, one per dim; empty: row-major contiguous
};

// Kernels read and write with 16-byte vector accesses where the shape allows, so a
// tensor must start on a 16-byte boundary (every cuMemAlloc and framework allocation does).
inline constexpr uint64_t kDeviceTensorAlignment = 16;

// Throws kiln::Error starting with `what` ("input 1 %r") when `t` cannot stand for a
// tensor of type `expected`: another dtype or shape, strides that are not row-major
// contiguous (a dim of size 1 may have any stride), a null or misaligned pointer.
void check_device_tensor(const DeviceTensor& t, const TensorType& expected, const std::string& what);

// Checks the counts and each tensor against the plan's inputs and outputs, naming them
// as "input 0 %x" and "output 0 %y".
void check_device_tensors(const passes::Plan& plan, const std::vector<DeviceTensor>& inputs,
                          const std::vector<DeviceTensor>& outputs);

}  // namespace kiln::runtime
