// The attention pattern, as decompose (or a user) writes it from primitives:
//   s = matmul(q, k^T)               (or matmul(q, kt) with kt a view [..., D, Skv]; q and k
//                                     f16 / bf16 widened to f32 first, as decompose writes it)
//   x = score ops on s               (scale, masks from iota / compare / select, bias adds)
//   p = softmax(x) along the keys    (max / exp / sum / div, or online-softmax's logsumexp,
//                                     with the casts around it)
//   o = matmul(p, v)
// Matching is structural: it names the nodes; the fuse pass checks that no node but the
// last is read outside them, and lowering that the kernel can be built.
// Internal to passes/.
#pragma once
#include <optional>
#include <set>

#include "ir/graph.h"

namespace kiln::passes {

struct AttentionPattern {
  const ir::Node* qk = nullptr;      // the first matmul
  const ir::Node* pv = nullptr;      // the second: the kernel's output
  const ir::Value* scores = nullptr;  // the softmax's input x
  const ir::Value* q = nullptr;       // what the kernel reads for q and k: the first
  const ir::Value* k = nullptr;       // matmul's operands, before a widening cast
  // Every node the kernel computes: both matmuls, the views of q, k and v folded into
  // their strides, the score ops and what they read that needs no memory (constants,
  // iota and element-wise ops on those), and the softmax.
  std::set<const ir::Node*> nodes;
  // The element-wise ops among them that read no memory and no product (a mask made
  // from iota and compares): CSE may share them with another pattern.
  std::set<const ir::Node*> mask_nodes;
};

// The pattern ending at `pv`, or none.
std::optional<AttentionPattern> match_attention(const ir::Node& pv);

}  // namespace kiln::passes
