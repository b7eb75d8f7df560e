// Lowering of an attention group (passes/attention_pattern.h): both matmuls, the score
// ops between them and the softmax become one attention kernel (ir/kernel_attention.h).
// The views of q, k and v fold into their strides; the score ops become the kernel's
// body, in which a multiplication by a constant folds into the kernel's scale and a
// causal mask written with iota / compare / select becomes its `causal` flag.
#pragma once
#include <string>
#include <unordered_map>

#include "ir/graph.h"
#include "ir/kernel.h"
#include "passes/attention_pattern.h"

namespace kiln::passes {

// The attention kernel of pattern `p`, without a config. Throws kiln::Error when it
// cannot be built (an operand reads through ops other than views, a score op reads the
// product at another element than its own, the second matmul broadcasts further).
ir::Kernel build_attention(const std::string& name, const AttentionPattern& p,
                           const std::unordered_map<int, std::string>& names);

// The attention kernel of group `group`, with its config.
ir::Kernel lower_attention_group(const ir::Graph& g, int group, const std::unordered_map<int, std::string>& names);

}  // namespace kiln::passes
