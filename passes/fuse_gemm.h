// Gemm grouping for the `fuse` pass: each matmul becomes a gemm group with
//   - its operands' views (transposes, reshapes, broadcasts), folded into their layouts,
//     and the casts and scales by constants between the views and the tensors they
//     read, folded into their loads (a prologue per operand);
//   - the element-wise consumers of its result over the output's shape (bias,
//     activations, residual adds, casts, several outputs): its epilogue.
// A group that cannot be one kernel sheds its epilogue, then its prologues, then
// every view: what it then reads from memory, another kernel writes.
#pragma once
#include <vector>

#include "ir/graph.h"
#include "passes/fuse_reduce.h"

namespace kiln::passes {

// The gemm groups of a graph without groups, in the order of their matmuls; nodes
// that `planned` groups compute are left to them.
std::vector<RowGroup> plan_gemm_groups(const ir::Graph& g, const std::vector<RowGroup>& planned);

}  // namespace kiln::passes
