// The col-reduce emitter: a kernel that reduces the leading (outer) dims K of a
// [K, N] space for every column, with an element-wise prologue on the loaded values
// and an element-wise epilogue on the reduced columns; full reductions are the case
// of one column.
#pragma once
#include <string>

#include "codegen/emit.h"
#include "ir/kernel.h"

namespace kiln::codegen {

// The kernel's code without the file's prelude: module-scope scratch (when K is split
// across blocks) and one __global__ function. Throws kiln::Error for a kernel that does
// not verify or a config that is not legal. The scratch makes concurrent launches of
// one loaded module unsafe; Kiln launches a module's kernel on one stream at a time.
std::string emit_col_reduce(const ir::Kernel& k);

// Grid x: column tiles of `cols` columns; grid y: the k_split slices of K.
LaunchDims col_reduce_launch_dims(const ir::Kernel& k);

}  // namespace kiln::codegen
