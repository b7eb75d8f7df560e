// The CUDA driver API, loaded at run time: libcuda.so.1 is opened with dlopen at
// first use and its functions resolved by their versioned symbol names, so that
// Kiln builds, compiles kernels and runs its tests on machines with no GPU driver.
// Only <cuda.h> is used, for its types. Every wrapper below checks its call and
// throws kiln::Error naming the call, its arguments and the CUDA error.
#pragma once
#include <cuda.h>
#include <fmt/format.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

namespace kiln::runtime {

// Whether a GPU can be used here. When not, *why (if given) says why:
// "libcuda.so.1 not found", "no CUDA device", or the cuInit error. Never throws.
bool gpu_available(std::string* why = nullptr);

// Every driver function Kiln resolves, by its exported symbol name. The names in
// <cuda.h> without the suffix are macros for these (cuMemAlloc -> cuMemAlloc_v2),
// so `driver().cuMemAlloc(...)` reaches the right entry point.
#define KILN_CUDA_DRIVER_FUNCTIONS(X)                                                          \
  X(cuGetErrorName) X(cuGetErrorString) X(cuInit) X(cuDriverGetVersion) X(cuDeviceGetCount)  \
  X(cuDeviceGet) X(cuDeviceGetName) X(cuDeviceGetAttribute) X(cuDeviceTotalMem_v2)            \
  X(cuDevicePrimaryCtxRetain) X(cuDevicePrimaryCtxRelease_v2) X(cuCtxSetCurrent)               \
  X(cuCtxSynchronize) X(cuStreamSynchronize) X(cuMemAlloc_v2) X(cuMemFree_v2)                  \
  X(cuMemGetInfo_v2) X(cuMemsetD8_v2) X(cuMemsetD8Async) X(cuMemcpyHtoD_v2) X(cuMemcpyDtoH_v2) \
  X(cuMemcpyDtoD_v2) X(cuMemcpyDtoDAsync_v2) X(cuModuleLoadData) X(cuModuleGetFunction)        \
  X(cuModuleUnload) X(cuLaunchKernel) X(cuFuncGetAttribute) X(cuFuncSetAttribute)              \
  X(cuEventCreate) X(cuEventRecord) X(cuEventSynchronize) X(cuEventElapsedTime_v2)             \
  X(cuEventDestroy_v2) X(cuTensorMapEncodeTiled) X(cuPointerGetAttribute) X(cuStreamCreate)  \
  X(cuStreamDestroy_v2) X(cuStreamBeginCapture_v2) X(cuStreamEndCapture)                       \
  X(cuGraphInstantiateWithFlags) X(cuGraphLaunch) X(cuGraphExecDestroy) X(cuGraphDestroy)     \
  X(cuGraphGetNodes)

struct DriverApi {
#define KILN_DRIVER_MEMBER(symbol) decltype(&::symbol) symbol = nullptr;
  KILN_CUDA_DRIVER_FUNCTIONS(KILN_DRIVER_MEMBER)
#undef KILN_DRIVER_MEMBER
};

// The resolved driver, cuInit done. Throws "no GPU: <why>" when gpu_available() is false.
const DriverApi& driver();

namespace cu {

// "CUDA_ERROR_OUT_OF_MEMORY (out of memory)".
std::string error_text(CUresult result);
// Throws "<what> failed: <error_text>".
[[noreturn]] void throw_error(CUresult result, const std::string& what);

// Checks a driver call; the description is formatted only when the call failed.
template <typename... Args>
inline void check(CUresult result, fmt::format_string<Args...> what, Args&&... args) {
  if (result != CUDA_SUCCESS) throw_error(result, fmt::format(what, std::forward<Args>(args)...));
}

int driver_version();  // e.g. 13000 for CUDA 13.0
int device_count();
CUdevice device(int ordinal);
std::string device_name(CUdevice dev);
int device_attribute(CUdevice dev, CUdevice_attribute attribute);
size_t device_total_bytes(CUdevice dev);

CUcontext primary_context_retain(CUdevice dev);
void context_set_current(CUcontext context);
void context_synchronize();
void stream_synchronize(CUstream stream);

CUdeviceptr mem_alloc(size_t bytes);
// Unchecked (for destructors); the caller decides what a failure means.
CUresult mem_free(CUdeviceptr ptr) noexcept;
void memset_d8(CUdeviceptr dst, uint8_t value, size_t bytes);
void memcpy_htod(CUdeviceptr dst, const void* src, size_t bytes);
void memcpy_dtoh(void* dst, CUdeviceptr src, size_t bytes);
void memcpy_dtod(CUdeviceptr dst, CUdeviceptr src, size_t bytes);
void memcpy_dtod_async(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream stream = nullptr);

// The stream that a launch or an async copy given none goes to: the null stream,
// unless a ScopedLaunchStream on this thread names another (the capture of a CUDA
// graph, which the null stream cannot be). Every runtime launch goes through it.
CUstream launch_stream(CUstream given);
class ScopedLaunchStream {
public:
  explicit ScopedLaunchStream(CUstream stream);
  ~ScopedLaunchStream();
  ScopedLaunchStream(const ScopedLaunchStream&) = delete;
  ScopedLaunchStream& operator=(const ScopedLaunchStream&) = delete;

private:
  CUstream saved_;
};

// The ordinal of the device that holds `ptr`, or -1 when `ptr` is no CUDA
// allocation (host memory, a freed or made-up pointer); *why then says why.
int pointer_device_ordinal(CUdeviceptr ptr, std::string* why = nullptr);

int func_attribute(CUfunction function, CUfunction_attribute attribute);
void func_set_attribute(CUfunction function, CUfunction_attribute attribute, int value);

}  // namespace cu

// A loaded module (cubin or PTX image), unloaded when destroyed. Move-only.
class Module {
public:
  Module() = default;
  // `name` appears in error messages (the kernel or program name).
  Module(const void* image, size_t image_bytes, const std::string& name);
  Module(Module&& other) noexcept;
  Module& operator=(Module&& other) noexcept;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;
  ~Module();

  CUfunction function(const std::string& kernel_name) const;
  CUmodule handle() const { return module_; }

private:
  void reset() noexcept;
  CUmodule module_ = nullptr;
  std::string name_;
};

// A timing event, destroyed with the object. Move-only.
class Event {
public:
  Event();
  Event(Event&& other) noexcept : event_(std::exchange(other.event_, nullptr)) {}
  Event& operator=(Event&& other) noexcept;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  ~Event();

  void record(CUstream stream = nullptr);
  void synchronize();
  // Milliseconds from `start` to this event; both must have completed.
  float elapsed_ms_since(const Event& start) const;
  CUevent handle() const { return event_; }

private:
  CUevent event_ = nullptr;
};

}  // namespace kiln::runtime
