// The GPU Kiln runs on: device 0 with its primary context, and the properties
// that codegen, the tiler and the roofline need.
#pragma once
#include <cuda.h>

#include <cstddef>
#include <string>

namespace kiln::runtime {

class Device {
public:
  // Device 0, its primary context made current on the calling thread.
  // Throws "no GPU: ..." when none is usable (see gpu_available()).
  static Device& get();

  const std::string& name() const { return name_; }
  // From the compute capability: "sm_90" on an H100/H200.
  const std::string& arch() const { return arch_; }
  // What NVRTC should compile for: arch(), with the arch-specific "a" variant on
  // 9.0 ("sm_90a") so that wgmma and setmaxnreg are allowed.
  const std::string& compile_target() const { return compile_target_; }
  int compute_capability() const { return cc_major_ * 10 + cc_minor_; }  // 90
  int sm_count() const { return sm_count_; }
  size_t l2_bytes() const { return l2_bytes_; }
  size_t max_shared_per_block_optin() const { return max_shared_optin_; }
  size_t total_bytes() const { return total_bytes_; }
  CUdevice handle() const { return device_; }
  CUcontext context() const { return context_; }

  // Waits for all work on the device (from this context) and reports any error it raised.
  void synchronize();

private:
  Device();
  void make_current();

  CUdevice device_ = 0;
  CUcontext context_ = nullptr;
  std::string name_, arch_, compile_target_;
  int cc_major_ = 0, cc_minor_ = 0, sm_count_ = 0;
  size_t l2_bytes_ = 0, max_shared_optin_ = 0, total_bytes_ = 0;
};

}  // namespace kiln::runtime
