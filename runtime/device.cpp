// Device 0 and its primary context, opened once per process and made current on
// each thread that asks for it.
#include "runtime/device.h"

#include <fmt/format.h>

#include "runtime/cuda_driver.h"

namespace kiln::runtime {

Device::Device() {
  device_ = cu::device(0);
  // The primary context is the one the runtime API and other libraries share; it is
  // retained for the life of the process, so that buffers and modules never outlive it.
  context_ = cu::primary_context_retain(device_);
  name_ = cu::device_name(device_);
  cc_major_ = cu::device_attribute(device_, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  cc_minor_ = cu::device_attribute(device_, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  arch_ = fmt::format("sm_{}{}", cc_major_, cc_minor_);
  compile_target_ = cc_major_ == 9 && cc_minor_ == 0 ? "sm_90a" : arch_;
  sm_count_ = cu::device_attribute(device_, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  l2_bytes_ = static_cast<size_t>(cu::device_attribute(device_, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE));
  max_shared_optin_ =
      static_cast<size_t>(cu::device_attribute(device_, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN));
  total_bytes_ = cu::device_total_bytes(device_);
}

Device& Device::get() {
  static Device device;  // thread-safe, once; a failure throws and the next call tries again
  device.make_current();
  return device;
}

void Device::make_current() {
  // A context is current per thread: each new thread (a tuner's worker, say) sets it once.
  thread_local bool current = false;
  if (!current) {
    cu::context_set_current(context_);
    current = true;
  }
}

void Device::synchronize() {
  make_current();
  cu::context_synchronize();
}

}  // namespace kiln::runtime
