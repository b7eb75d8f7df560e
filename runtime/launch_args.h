// The argument block of one kernel launch: a device pointer per kernel argument, then
// the kernel's tensor maps (codegen::TensorMapSpec) encoded for those pointers. Built
// once per binding of buffers and reused for every launch with them. Operands the
// kernel reads from a padded copy (codegen::StagedOperand) get their copy's buffer
// here, and stage() fills it: call it before each launch.
#pragma once
#include <cuda.h>

#include <string>
#include <vector>

#include "codegen/emit.h"
#include "runtime/device_buffer.h"

namespace kiln::runtime {

class LaunchArgs {
public:
  // `ptrs`: one per kernel argument, in order. Throws kiln::Error naming `kernel` when
  // the driver refuses a tensor map (an unaligned pointer or stride).
  LaunchArgs(const codegen::LaunchDims& launch, const std::vector<CUdeviceptr>& ptrs, const std::string& kernel);
  LaunchArgs(const LaunchArgs&) = delete;
  LaunchArgs& operator=(const LaunchArgs&) = delete;

  // What cuLaunchKernel takes: the address of each parameter.
  const std::vector<void*>& pointers() const { return args_; }
  // Enqueues the copies of the staged operands on `stream` (none for most kernels).
  void stage(CUstream stream = nullptr) const;

private:
  std::vector<codegen::StagedOperand> staged_;
  std::vector<DeviceBuffer> copies_;  // per staged operand
  std::vector<CUdeviceptr> ptrs_;
  std::vector<CUtensorMap> maps_;  // CUtensorMap is 64-byte aligned; the vector's storage is too
  std::vector<void*> args_;
};

// Encodes `spec` for the buffer at `base` (one map, the 128-byte swizzle, zeros past the edges).
CUtensorMap encode_tensor_map(const codegen::TensorMapSpec& spec, CUdeviceptr base, const std::string& kernel);

}  // namespace kiln::runtime
