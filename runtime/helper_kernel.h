// Kiln's own small kernels (the on-GPU output comparison, the reference product):
// compiled through the compile cache and loaded once per process for each source and
// arch, then kept for the process's life.
#pragma once
#include <cuda.h>

#include <string>

namespace kiln::runtime {

// Entry `entry` of `source`, compiled for `arch` and loaded on first use. Thread-safe.
CUfunction helper_kernel(const std::string& source, const std::string& entry, const std::string& arch);

}  // namespace kiln::runtime
