// The row-reduce emitter: a kernel whose threads share the rows of a [rows..., N]
// space, reducing each row (sums, maxima, minima, means, in phases) and writing full
// rows and per-row values computed from the reductions.
#pragma once
#include <string>

#include "codegen/emit.h"
#include "ir/kernel.h"

namespace kiln::codegen {

// The kernel's code without the file's prelude. Throws kiln::Error for a kernel that
// does not verify or a config that is not legal.
std::string emit_row_reduce(const ir::Kernel& k);

// One block of row_threads * rows threads per `rows` rows.
LaunchDims row_reduce_launch_dims(const ir::Kernel& k);

}  // namespace kiln::codegen
