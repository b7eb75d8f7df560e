// See rewrite.h.
#include "passes/rewrite.h"

#include <utility>
#include <vector>

namespace kiln::passes {

void replace_with_new_nodes(ir::Graph& g, ir::Node* old, size_t first_new, ir::Value* replacement) {
  std::vector<ir::Node*> all = g.nodes();
  for (size_t i = first_new; i < all.size(); ++i) all[i]->group = old->group;
  g.move_tail_before(first_new, old);
  g.replace_all_uses(old->result, replacement);
  replacement->name = std::move(old->result->name);
  old->result->name.clear();
}

bool rewrite_nodes(ir::Graph& g, const std::function<ir::Value*(ir::Node&)>& rewrite) {
  bool changed = false;
  for (ir::Node* n : g.nodes()) {
    const size_t mark = g.num_nodes();
    ir::Value* result = rewrite(*n);
    if (!result) continue;
    replace_with_new_nodes(g, n, mark, result);
    changed = true;
  }
  if (changed) g.remove_dead_nodes();
  return changed;
}

}  // namespace kiln::passes
