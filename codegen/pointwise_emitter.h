// The pointwise emitter: a kernel whose threads each compute a few consecutive
// elements of the iteration space, moving contiguous arguments as 16-byte vectors.
#pragma once
#include <string>

#include "codegen/emit.h"
#include "ir/kernel.h"

namespace kiln::codegen {

// The kernel's code without the file's prelude (includes, kiln_vec, helpers): its
// element function and its __global__ entry. Throws kiln::Error for a kernel that
// does not verify or a config that is not legal.
std::string emit_pointwise(const ir::Kernel& k);

// One block of config.threads threads per threads * elems elements.
LaunchDims pointwise_launch_dims(const ir::Kernel& k);

}  // namespace kiln::codegen
