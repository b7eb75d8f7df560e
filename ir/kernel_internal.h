// What ir/kernel.cpp shares with the kinds' kernel-IR files (ir/kernel_<kind>.cpp):
// the uniformity analysis and the dim merging that every kind builds on, and each
// reduction kind's collapsed form, which collapse() dispatches to. Internal to ir/.
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "ir/kernel.h"

namespace kiln::ir {

// The body's values that do not change along the reduced dims: loads and indices whose
// strides `moves` says stay put there, and ops of such values only. Constants and
// reductions are uniform.
std::vector<bool> uniform_values(const Kernel& k, const std::function<bool(const std::vector<int64_t>&)>& moves);

// Merges neighbouring dims of `space` that every access walks as one. `in` holds each
// access's strides over `space`: the first `num_args` are the arguments', the rest the
// index ops'.
CollapsedSpace merge_dims(const Shape& space, const std::vector<std::vector<int64_t>>& in, size_t num_args);

// A row-reduce kernel's form (ir/kernel_row_reduce.cpp): the row dims collapse among
// themselves; the reduced dim stays last, whatever its size.
CollapsedSpace collapse_row(const Kernel& k, const std::vector<std::vector<int64_t>>& in);
// A col-reduce kernel's form (ir/kernel_col_reduce.cpp): its reduced dims merged among
// themselves, then its kept dims.
CollapsedSpace collapse_col(const Kernel& k, const std::vector<std::vector<int64_t>>& in);

}  // namespace kiln::ir
