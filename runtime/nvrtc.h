// NVRTC: CUDA C++ source to a cubin (to load) and PTX (to read and dump), with
// the flags Kiln always uses and errors that carry the log and the source's path.
#pragma once
#include <string>
#include <vector>

namespace kiln::runtime {

struct CompileOptions {
  std::string arch;                      // "sm_90a", "sm_80"; empty means default_arch()
  std::vector<std::string> extra_flags;  // appended after Kiln's own flags
};

struct CompileResult {
  std::string ptx;
  std::vector<char> cubin;  // empty only for a virtual arch (compute_XX)
  std::string log;          // NVRTC's warnings, if any
  bool from_cache = false;
  double compile_ms = 0;  // the NVRTC compile's wall time (the original one for a cached result)
};

// KILN_ARCH when set, else the device's compile target (sm_90a on an H200);
// with neither, throws "no GPU found ...; pass --arch or set KILN_ARCH (e.g. sm_90a)".
std::string default_arch();

// The toolkit's include folder that NVRTC needs for cuda_fp16.h and cuda_bf16.h,
// found at run time: $CUDA_HOME/include, $CUDA_PATH/include, /usr/local/cuda/include.
std::string cuda_include_dir();

// The linked NVRTC's version as CUDA writes it: 13000 for 13.0.
int nvrtc_version();

// options.arch, or default_arch() when it is empty.
std::string resolve_arch(const CompileOptions& options);

// Every flag NVRTC gets when compiling for `arch` (a resolved arch, not empty).
std::vector<std::string> nvrtc_flags(const std::string& arch, const CompileOptions& options);

// Compiles `source` in one NVRTC pass that yields both the cubin and the PTX
// (NVRTC keeps the PTX of a real sm_XX target). On failure throws kiln::Error with
// NVRTC's log and the path where the failing source was written. No caching: see
// CompileCache.
CompileResult compile_cuda(const std::string& source, const std::string& program_name, const CompileOptions& options);

}  // namespace kiln::runtime
