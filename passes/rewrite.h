// What the rewriting passes share: matching a value's producer, and the step that ends
// every rewrite which replaces one node by new ones (decompose, online-softmax, welford):
// the new nodes take the old node's place and kernel group, its readers read the new
// result, and the new result takes its name.
#pragma once
#include <cstddef>
#include <functional>

#include "ir/graph.h"

namespace kiln::passes {

// The node that computes `v` when it is an op of kind `k`, else null.
inline const ir::Node* producer_of(const ir::Value* v, ir::OpKind k) {
  return v->producer && v->producer->op == k ? v->producer : nullptr;
}

// Replaces node `old` by the nodes added to `g` since it held `first_new` nodes, the last
// of them computing `replacement`: they move just before `old` and join its group, every
// reader of old's result reads `replacement` instead, and `replacement` takes old's name,
// so the printed IR still reads as the user wrote it. `old` is left for remove_dead_nodes.
void replace_with_new_nodes(ir::Graph& g, ir::Node* old, size_t first_new, ir::Value* replacement);

// Offers each node of `g` (those it held at the start) to `rewrite`, which adds new nodes
// and returns the value that replaces the node, or null to leave it; a replaced node goes
// through replace_with_new_nodes, and once any was, the dead nodes are removed. True
// when some node was replaced.
bool rewrite_nodes(ir::Graph& g, const std::function<ir::Value*(ir::Node&)>& rewrite);

}  // namespace kiln::passes
