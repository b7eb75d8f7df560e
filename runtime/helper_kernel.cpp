// One loaded module per (source, arch) of Kiln's helper kernels. See helper_kernel.h.
#include "runtime/helper_kernel.h"

#include <map>
#include <mutex>
#include <tuple>

#include "runtime/compile_cache.h"
#include "runtime/cuda_driver.h"

namespace kiln::runtime {

CUfunction helper_kernel(const std::string& source, const std::string& entry, const std::string& arch) {
  static std::mutex mutex;
  static std::map<std::tuple<std::string, std::string, std::string>, Module> modules;
  std::lock_guard<std::mutex> lock(mutex);
  auto key = std::make_tuple(source, entry, arch);
  auto it = modules.find(key);
  if (it == modules.end()) {
    CompileResult r = CompileCache::global().compile(source, entry, CompileOptions{arch, {}});
    it = modules.emplace(key, Module(r.cubin.data(), r.cubin.size(), entry)).first;
  }
  return it->second.function(entry);
}

}  // namespace kiln::runtime
