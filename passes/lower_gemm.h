// Lowering of a gemm group: a matmul, the views and element-wise ops between it and
// the tensors it reads (each operand's layout and prologue), and the element-wise ops
// that consume its result (the epilogue), become one gemm kernel (ir/kernel_gemm.h).
#pragma once
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/graph.h"
#include "ir/kernel.h"

namespace kiln::passes {

// The gemm kernel computing `roots` (values of `members` of the output's shape; the
// matmul's own result among them or not) from `matmul`, without a config. Members
// upstream of the matmul fold into its operands: views into their strides, casts and
// scales into their prologues. Throws kiln::Error when that is impossible (an operand
// reads two tensors, has no contiguous matrix dim, or the epilogue reads the product
// at another element than its own).
ir::Kernel build_gemm(const std::string& name, const ir::Node& matmul, const std::set<const ir::Node*>& members,
                      const std::vector<const ir::Value*>& roots, const std::unordered_map<int, std::string>& names);

// The gemm kernel of group `group`, with its config (the group's `tile`, validated,
// or the heuristic's).
ir::Kernel lower_gemm_group(const ir::Graph& g, int group, const std::unordered_map<int, std::string>& names);

}  // namespace kiln::passes
