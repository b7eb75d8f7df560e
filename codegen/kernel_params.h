// What every emitter names the same way: a kernel's CUDA parameters ("in_x", "out_y":
// the graph value's name made an identifier, unique within the kernel, never clashing
// with an emitter's locals) and whether its indices need 64 bits.
#pragma once
#include <string>
#include <vector>

#include "ir/kernel.h"

namespace kiln::codegen {

// One name per Kernel::args entry, in order.
std::vector<std::string> param_names(const ir::Kernel& k);

// Whether `name` can name a CUDA function (a kernel's entry point is named as the kernel).
bool is_c_identifier(const std::string& name);

// True when the iteration space or any argument has 2^31 elements or more: offsets
// are then computed in unsigned long long, else in unsigned int.
bool needs_wide_index(const ir::Kernel& k);

}  // namespace kiln::codegen
