// The NVRTC wrapper: flags, one compile per kernel, and failing sources written
// where a user can read them.
#include "runtime/nvrtc.h"

#include <fmt/format.h>
#include <nvrtc.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string_view>

#include "ir/error.h"
#include "runtime/cuda_driver.h"
#include "runtime/device.h"
#include "runtime/knobs.h"

namespace kiln::runtime {

namespace fs = std::filesystem;

namespace {

void check_nvrtc(nvrtcResult result, const char* call, const std::string& program_name) {
  if (result != NVRTC_SUCCESS)
    throw Error(fmt::format("{} failed for '{}': {}", call, program_name, nvrtcGetErrorString(result)));
}

// A program name made safe to use as a file name, without a ".cu" it may end with.
std::string file_stem(std::string_view program_name) {
  if (program_name.ends_with(".cu")) program_name.remove_suffix(3);
  std::string stem;
  for (char c : program_name) stem += std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' ? c : '_';
  return stem.empty() ? "kernel" : stem;
}

// Writes a source that failed to compile: into KILN_DUMP_DIR when set, else a fresh
// file under the cache folder. Returns the path, or a note saying why there is none.
std::string write_failed_source(const std::string& source, const std::string& program_name) {
  std::error_code ec;
  if (auto dump = knobs::dump_dir()) {
    fs::create_directories(*dump, ec);
    std::string path = fmt::format("{}/{}.cu", *dump, file_stem(program_name));
    std::ofstream out(path, std::ios::binary);
    out << source;
    if (out.flush()) return path;
  }
  std::string dir = knobs::cache_dir() + "/failed";
  fs::create_directories(dir, ec);
  std::string path = fmt::format("{}/{}-XXXXXX.cu", dir, file_stem(program_name));
  int fd = mkstemps(path.data(), 3);
  if (fd < 0) return fmt::format("(not written: cannot create a file in {})", dir);
  bool written = ::write(fd, source.data(), source.size()) == static_cast<ssize_t>(source.size());
  ::close(fd);
  return written ? path : fmt::format("(not written: writing {} failed)", path);
}

std::string program_log(nvrtcProgram program, const std::string& program_name) {
  size_t size = 0;
  check_nvrtc(nvrtcGetProgramLogSize(program, &size), "nvrtcGetProgramLogSize", program_name);
  std::string log(size, '\0');
  if (size > 0) check_nvrtc(nvrtcGetProgramLog(program, log.data()), "nvrtcGetProgramLog", program_name);
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
  return log;
}

// Destroys the program on every path out of compile_cuda.
struct ProgramGuard {
  nvrtcProgram program = nullptr;
  ~ProgramGuard() {
    if (program) nvrtcDestroyProgram(&program);
  }
};

}  // namespace

std::string default_arch() {
  if (auto arch = knobs::arch()) return *arch;
  std::string why;
  if (gpu_available(&why)) return Device::get().compile_target();
  throw Error(fmt::format("no GPU found ({}); pass --arch or set KILN_ARCH (e.g. sm_90a)", why));
}

std::string cuda_include_dir() {
  std::vector<std::string> looked;
  auto try_root = [&](const std::string& root, const std::string& label) -> std::optional<std::string> {
    std::string include = root + "/include";
    if (fs::exists(include + "/cuda_fp16.h")) return include;
    looked.push_back(fmt::format("{} ({})", include, label));
    return std::nullopt;
  };
  for (const char* variable : {"CUDA_HOME", "CUDA_PATH"}) {
    const char* root = std::getenv(variable);
    if (root && *root)
      if (auto found = try_root(root, variable)) return *found;
  }
  if (auto found = try_root("/usr/local/cuda", "the default")) return *found;
  throw Error(fmt::format("cannot find the CUDA headers NVRTC needs (cuda_fp16.h); looked in {}; "
                          "set CUDA_HOME to the CUDA toolkit's folder",
                          fmt::join(looked, ", ")));
}

int nvrtc_version() {
  int major = 0, minor = 0;
  check_nvrtc(nvrtcVersion(&major, &minor), "nvrtcVersion", "-");
  return major * 1000 + minor * 10;
}

std::string resolve_arch(const CompileOptions& options) {
  return options.arch.empty() ? default_arch() : options.arch;
}

std::vector<std::string> nvrtc_flags(const std::string& arch, const CompileOptions& options) {
  std::vector<std::string> flags = {
      "-arch=" + arch,
      "-std=c++17",
      "-default-device",  // every function is __device__ unless marked otherwise
      "--include-path=" + cuda_include_dir(),
      "-lineinfo",  // source lines in profiles and sanitizer reports; no effect on speed
  };
  flags.insert(flags.end(), options.extra_flags.begin(), options.extra_flags.end());
  return flags;
}

// One NVRTC pass per kernel: for a real target (sm_XX, sm_90a) NVRTC 13 returns the
// PTX as well as the cubin. Measured on the 2-core build machine for a small kernel:
// ~65 ms for that pass; a second, PTX-only pass (compute_90a) would add ~45 ms.
CompileResult compile_cuda(const std::string& source, const std::string& program_name, const CompileOptions& options) {
  std::string arch = resolve_arch(options);
  std::vector<std::string> flags = nvrtc_flags(arch, options);
  std::vector<const char*> flag_ptrs;
  for (const std::string& flag : flags) flag_ptrs.push_back(flag.c_str());

  auto start = std::chrono::steady_clock::now();
  ProgramGuard guard;
  check_nvrtc(nvrtcCreateProgram(&guard.program, source.c_str(), program_name.c_str(), 0, nullptr, nullptr),
              "nvrtcCreateProgram", program_name);
  nvrtcResult compiled = nvrtcCompileProgram(guard.program, static_cast<int>(flag_ptrs.size()), flag_ptrs.data());
  CompileResult result;
  result.log = program_log(guard.program, program_name);
  if (compiled != NVRTC_SUCCESS) {
    std::string path = write_failed_source(source, program_name);
    throw Error(fmt::format("NVRTC could not compile '{}' for {}: {}\nsource: {}\nflags: {}\n{}", program_name, arch,
                            nvrtcGetErrorString(compiled), path, fmt::join(flags, " "), result.log));
  }

  size_t ptx_size = 0;
  check_nvrtc(nvrtcGetPTXSize(guard.program, &ptx_size), "nvrtcGetPTXSize", program_name);
  result.ptx.resize(ptx_size);
  if (ptx_size > 0) check_nvrtc(nvrtcGetPTX(guard.program, result.ptx.data()), "nvrtcGetPTX", program_name);
  while (!result.ptx.empty() && result.ptx.back() == '\0') result.ptx.pop_back();

  size_t cubin_size = 0;  // zero for a virtual arch (compute_XX), which has no machine code
  check_nvrtc(nvrtcGetCUBINSize(guard.program, &cubin_size), "nvrtcGetCUBINSize", program_name);
  result.cubin.resize(cubin_size);
  if (cubin_size > 0) check_nvrtc(nvrtcGetCUBIN(guard.program, result.cubin.data()), "nvrtcGetCUBIN", program_name);

  result.compile_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace kiln::runtime
