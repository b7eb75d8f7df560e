// Loading libcuda.so.1 at first use, and the checked wrappers over its calls.
#include "runtime/cuda_driver.h"

#include <dlfcn.h>

#include <cstring>

#include "ir/error.h"

namespace kiln::runtime {

namespace {

struct LoadedDriver {
  DriverApi api;
  bool usable = false;
  std::string why_not;  // set when !usable
};

LoadedDriver load_driver() {
  LoadedDriver loaded;
  void* library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    const char* detail = dlerror();
    bool missing = !detail || std::strstr(detail, "No such file");
    loaded.why_not = missing ? "libcuda.so.1 not found" : fmt::format("libcuda.so.1 could not be loaded: {}", detail);
    return loaded;
  }
  // The library stays open for the life of the process: modules and buffers outlive any one user.
#define KILN_RESOLVE(symbol)                                                                      \
  loaded.api.symbol = reinterpret_cast<decltype(loaded.api.symbol)>(dlsym(library, #symbol));     \
  if (!loaded.api.symbol) {                                                                       \
    loaded.why_not = fmt::format("libcuda.so.1 has no {}: the driver is older than CUDA {}.{}",   \
                                 #symbol, CUDA_VERSION / 1000, CUDA_VERSION % 1000 / 10);          \
    return loaded;                                                                                \
  }
  KILN_CUDA_DRIVER_FUNCTIONS(KILN_RESOLVE)
#undef KILN_RESOLVE

  CUresult result = loaded.api.cuInit(0);
  if (result == CUDA_ERROR_NO_DEVICE) {
    loaded.why_not = "no CUDA device";
    return loaded;
  }
  if (result != CUDA_SUCCESS) {
    const char* name = nullptr;
    const char* text = nullptr;
    loaded.api.cuGetErrorName(result, &name);
    loaded.api.cuGetErrorString(result, &text);
    loaded.why_not =
        fmt::format("cuInit failed: {} ({})", name ? name : "unknown error", text ? text : "no description");
    return loaded;
  }
  int count = 0;
  if (loaded.api.cuDeviceGetCount(&count) != CUDA_SUCCESS || count == 0) {
    loaded.why_not = "no CUDA device";
    return loaded;
  }
  loaded.usable = true;
  return loaded;
}

const LoadedDriver& loaded_driver() {
  static const LoadedDriver loaded = load_driver();  // thread-safe, once
  return loaded;
}

}  // namespace

bool gpu_available(std::string* why) {
  const LoadedDriver& loaded = loaded_driver();
  if (why) *why = loaded.usable ? "" : loaded.why_not;
  return loaded.usable;
}

const DriverApi& driver() {
  const LoadedDriver& loaded = loaded_driver();
  if (!loaded.usable) throw Error("no GPU: " + loaded.why_not);
  return loaded.api;
}

namespace cu {

std::string error_text(CUresult result) {
  const DriverApi& api = loaded_driver().api;
  const char* name = nullptr;
  const char* text = nullptr;
  if (api.cuGetErrorName) api.cuGetErrorName(result, &name);
  if (api.cuGetErrorString) api.cuGetErrorString(result, &text);
  if (!name) return fmt::format("CUDA error {}", static_cast<int>(result));
  return fmt::format("{} ({})", name, text ? text : "no description");
}

void throw_error(CUresult result, const std::string& what) {
  throw Error(fmt::format("{} failed: {}", what, error_text(result)));
}

int driver_version() {
  int version = 0;
  check(driver().cuDriverGetVersion(&version), "cuDriverGetVersion");
  return version;
}

int device_count() {
  int count = 0;
  check(driver().cuDeviceGetCount(&count), "cuDeviceGetCount");
  return count;
}

CUdevice device(int ordinal) {
  CUdevice dev = 0;
  check(driver().cuDeviceGet(&dev, ordinal), "cuDeviceGet({})", ordinal);
  return dev;
}

std::string device_name(CUdevice dev) {
  char name[256] = {};
  check(driver().cuDeviceGetName(name, sizeof(name) - 1, dev), "cuDeviceGetName(device {})", dev);
  return name;
}

int device_attribute(CUdevice dev, CUdevice_attribute attribute) {
  int value = 0;
  check(driver().cuDeviceGetAttribute(&value, attribute, dev), "cuDeviceGetAttribute(attribute {}, device {})",
        static_cast<int>(attribute), dev);
  return value;
}

size_t device_total_bytes(CUdevice dev) {
  size_t bytes = 0;
  check(driver().cuDeviceTotalMem(&bytes, dev), "cuDeviceTotalMem(device {})", dev);
  return bytes;
}

CUcontext primary_context_retain(CUdevice dev) {
  CUcontext context = nullptr;
  check(driver().cuDevicePrimaryCtxRetain(&context, dev), "cuDevicePrimaryCtxRetain(device {})", dev);
  return context;
}

void context_set_current(CUcontext context) { check(driver().cuCtxSetCurrent(context), "cuCtxSetCurrent"); }

void context_synchronize() { check(driver().cuCtxSynchronize(), "cuCtxSynchronize"); }

void stream_synchronize(CUstream stream) { check(driver().cuStreamSynchronize(stream), "cuStreamSynchronize"); }

CUdeviceptr mem_alloc(size_t bytes) {
  CUdeviceptr ptr = 0;
  check(driver().cuMemAlloc(&ptr, bytes), "cuMemAlloc({} bytes)", bytes);
  return ptr;
}

CUresult mem_free(CUdeviceptr ptr) noexcept {
  const DriverApi& api = loaded_driver().api;
  if (!ptr || !api.cuMemFree) return CUDA_SUCCESS;
  return api.cuMemFree(ptr);
}

void memset_d8(CUdeviceptr dst, uint8_t value, size_t bytes) {
  check(driver().cuMemsetD8(dst, value, bytes), "cuMemsetD8(0x{:x}, {}, {} bytes)", dst, value, bytes);
}

void memcpy_htod(CUdeviceptr dst, const void* src, size_t bytes) {
  check(driver().cuMemcpyHtoD(dst, src, bytes), "cuMemcpyHtoD({} bytes to 0x{:x})", bytes, dst);
}

void memcpy_dtoh(void* dst, CUdeviceptr src, size_t bytes) {
  check(driver().cuMemcpyDtoH(dst, src, bytes), "cuMemcpyDtoH({} bytes from 0x{:x})", bytes, src);
}

void memcpy_dtod(CUdeviceptr dst, CUdeviceptr src, size_t bytes) {
  check(driver().cuMemcpyDtoD(dst, src, bytes), "cuMemcpyDtoD({} bytes, 0x{:x} to 0x{:x})", bytes, src, dst);
}

namespace {
thread_local CUstream default_stream = nullptr;
}  // namespace

CUstream launch_stream(CUstream given) { return given ? given : default_stream; }
ScopedLaunchStream::ScopedLaunchStream(CUstream stream) : saved_(std::exchange(default_stream, stream)) {}
ScopedLaunchStream::~ScopedLaunchStream() { default_stream = saved_; }

void memcpy_dtod_async(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream stream) {
  check(driver().cuMemcpyDtoDAsync(dst, src, bytes, launch_stream(stream)), "cuMemcpyDtoDAsync({} bytes, 0x{:x} to 0x{:x})", bytes,
        src, dst);
}

int pointer_device_ordinal(CUdeviceptr ptr, std::string* why) {
  int ordinal = -1;
  CUresult result = driver().cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, ptr);
  if (result == CUDA_SUCCESS) return ordinal;
  if (why) *why = fmt::format("cuPointerGetAttribute(0x{:x}): {}", ptr, error_text(result));
  return -1;
}

int func_attribute(CUfunction function, CUfunction_attribute attribute) {
  int value = 0;
  check(driver().cuFuncGetAttribute(&value, attribute, function), "cuFuncGetAttribute(attribute {})",
        static_cast<int>(attribute));
  return value;
}

void func_set_attribute(CUfunction function, CUfunction_attribute attribute, int value) {
  check(driver().cuFuncSetAttribute(function, attribute, value), "cuFuncSetAttribute(attribute {}, value {})",
        static_cast<int>(attribute), value);
}

}  // namespace cu

Module::Module(const void* image, size_t image_bytes, const std::string& name) : name_(name) {
  if (!image || image_bytes == 0)
    throw Error(fmt::format("cannot load module '{}': its image is empty (was it compiled for a virtual arch?)", name));
  cu::check(driver().cuModuleLoadData(&module_, image), "cuModuleLoadData('{}', {} bytes)", name, image_bytes);
}

Module::Module(Module&& other) noexcept
    : module_(std::exchange(other.module_, nullptr)), name_(std::move(other.name_)) {}

Module& Module::operator=(Module&& other) noexcept {
  if (this != &other) {
    reset();
    module_ = std::exchange(other.module_, nullptr);
    name_ = std::move(other.name_);
  }
  return *this;
}

Module::~Module() { reset(); }

void Module::reset() noexcept {
  if (module_) loaded_driver().api.cuModuleUnload(module_);
  module_ = nullptr;
}

CUfunction Module::function(const std::string& kernel_name) const {
  if (!module_) throw Error(fmt::format("cannot look up kernel '{}': no module is loaded", kernel_name));
  CUfunction function = nullptr;
  cu::check(driver().cuModuleGetFunction(&function, module_, kernel_name.c_str()),
            "cuModuleGetFunction('{}' in module '{}')", kernel_name, name_);
  // A cluster wider than the portable 8 blocks (sm_90 runs 16) needs the function's opt-in.
  if (cu::func_attribute(function, CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH) > 8)
    cu::func_set_attribute(function, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1);
  return function;
}

Event::Event() { cu::check(driver().cuEventCreate(&event_, CU_EVENT_DEFAULT), "cuEventCreate"); }

Event& Event::operator=(Event&& other) noexcept {
  if (this != &other) {
    if (event_) loaded_driver().api.cuEventDestroy(event_);
    event_ = std::exchange(other.event_, nullptr);
  }
  return *this;
}

Event::~Event() {
  if (event_) loaded_driver().api.cuEventDestroy(event_);
}

void Event::record(CUstream stream) { cu::check(driver().cuEventRecord(event_, stream), "cuEventRecord"); }

void Event::synchronize() { cu::check(driver().cuEventSynchronize(event_), "cuEventSynchronize"); }

float Event::elapsed_ms_since(const Event& start) const {
  float ms = 0;
  cu::check(driver().cuEventElapsedTime(&ms, start.event_, event_), "cuEventElapsedTime");
  return ms;
}

}  // namespace kiln::runtime
