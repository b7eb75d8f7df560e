// Attention grouping (see fuse_attention.h).
#include "passes/fuse_attention.h"

#include <unordered_set>

#include "ir/error.h"
#include "ir/tile_config.h"
#include "passes/attention_pattern.h"
#include "passes/lower_attention.h"

namespace kiln::passes {

using ir::Node;
using ir::Value;

std::vector<RowGroup> plan_attention_groups(const ir::Graph& g) {
  const std::vector<Node*> nodes = g.nodes();
  const auto users = g.users();
  const std::unordered_set<const Value*> outputs(g.outputs().begin(), g.outputs().end());
  std::unordered_set<const Node*> live;
  std::unordered_set<const Value*> needed(outputs.begin(), outputs.end());
  for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
    if (!needed.count((*it)->result)) continue;
    live.insert(*it);
    for (const Value* v : (*it)->operands) needed.insert(v);
  }
  std::unordered_set<const Node*> taken;
  std::vector<RowGroup> groups;
  for (const Node* n : nodes) {
    if (n->op != ir::OpKind::Matmul || !live.count(n)) continue;
    std::optional<AttentionPattern> p = match_attention(*n);
    if (!p) continue;
    bool free = true;
    for (const Node* m : p->nodes) free = free && (is_free_node(*m) || !taken.count(m));
    if (!free) continue;
    // Only the output leaves: every score, probability and sum stays on chip.
    const std::vector<const Value*> roots = escaping_values(p->nodes, nodes, users, live, outputs);
    if (roots.size() != 1 || roots[0] != n->result) continue;
    bool independent = true;  // what it reads must not wait for what it computes
    for (const Node* m : p->nodes)
      for (const Value* u : m->operands)
        if (!(u->producer && p->nodes.count(u->producer)) && depends_on_group(u, p->nodes)) independent = false;
    if (!independent) continue;
    try {
      ir::Kernel k = build_attention("check", *p, {});
      if (!ir::attention_unsupported(k).empty()) continue;
      (void)ir::heuristic(k);
    } catch (const Error&) {
      continue;
    }
    for (const Node* m : p->nodes)
      if (!is_free_node(*m)) taken.insert(m);
    groups.push_back(RowGroup{p->scores->type.shape, p->nodes, "attention", {}});
  }
  return groups;
}

}  // namespace kiln::passes
