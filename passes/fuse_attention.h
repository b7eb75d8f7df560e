// Attention grouping for the `fuse` pass: matmul(q, k^T) -> score ops -> softmax ->
// matmul(., v) (passes/attention_pattern.h) becomes one attention group when none of
// its values but the last is read elsewhere and its kernel can be built and tiled.
// Otherwise its nodes are left to the other groupers: two gemm kernels around a row
// kernel, as before.
#pragma once
#include <vector>

#include "ir/graph.h"
#include "passes/fuse_reduce.h"

namespace kiln::passes {

// The attention groups of a graph without groups, in the order of their last matmuls.
// Planned before every other kind, so that the softmax between the products is not
// taken by a row group.
std::vector<RowGroup> plan_attention_groups(const ir::Graph& g);

// Gives every attention pattern its own copy of the mask ops it shares with another
// (CSE merges the identical causal masks of a model's layers into one), so that each
// can be one kernel: a mask costs no memory, only a few ops per score.
void separate_attention_masks(ir::Graph& g);

}  // namespace kiln::passes
