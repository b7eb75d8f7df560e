// dlopen over a list of names. See shared_library.h.
#include "runtime/shared_library.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <cstring>
#include <vector>

#include "ir/error.h"
#include "runtime/cuda_driver.h"
#include "runtime/device.h"

namespace kiln::runtime {

void* open_shared_library(std::initializer_list<const char*> names, std::string* why) {
  std::vector<std::string> tried;
  std::string other;  // a library that exists but failed to load says more than "not found"
  for (const char* name : names) {
    if (void* lib = dlopen(name, RTLD_NOW | RTLD_LOCAL)) return lib;
    const char* detail = dlerror();
    if (detail && !std::strstr(detail, "No such file") && other.empty()) other = detail;
    tried.push_back(name);
  }
  if (why)
    *why = other.empty() ? fmt::format("{} not found (tried {})", *names.begin(), fmt::join(tried, ", "))
                         : fmt::format("{} could not be loaded: {}", *names.begin(), other);
  return nullptr;
}

void* library_symbol(void* library, const char* name) { return library ? dlsym(library, name) : nullptr; }

std::string primary_context_problem() {
  std::string why;
  if (!gpu_available(&why)) return "no GPU: " + why;
  try {
    Device::get();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace kiln::runtime
