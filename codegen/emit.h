// Codegen's entry: a Kernel (or all kernels of a plan) to one CUDA C++ translation
// unit for NVRTC, and each kernel's launch geometry. Dispatches on the kernel kind.
#pragma once
#include <array>
#include <string>
#include <vector>

#include "codegen/tensor_map_spec.h"
#include "ir/kernel.h"

namespace kiln::codegen {

struct LaunchDims {
  std::array<unsigned, 3> grid{1, 1, 1};
  std::array<unsigned, 3> block{1, 1, 1};
  unsigned shared_bytes = 0;  // dynamic shared memory
  // Blocks that the kernel's launch bounds ask to share an SM: where more than one, the
  // launch prefers the carveout that holds their shared memory (the driver's own pick
  // holds one block's).
  unsigned blocks_per_sm = 1;
  // Tensor maps passed after the pointers, in this order (wgmma gemm kernels).
  std::vector<TensorMapSpec> tensor_maps;
  // Operands copied into padded rows before each launch (wgmma gemm kernels).
  std::vector<StagedOperand> staged;
};

// The grid and block a kernel is launched with, from its shapes and tile config.
LaunchDims launch_dims(const ir::Kernel& k);

// CUDA source holding one `extern "C" __global__` function per kernel, named as the
// kernel, taking one pointer per Kernel::args entry in that order. Pointers must be
// 16-byte aligned (device allocations are); an output never aliases an input.
std::string emit_cuda(const ir::Kernel& k);
std::string emit_cuda(const std::vector<ir::Kernel>& kernels);

}  // namespace kiln::codegen
