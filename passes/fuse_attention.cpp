// Attention grouping (see fuse_attention.h).
#include "passes/fuse_attention.h"

#include <set>
#include <unordered_map>
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
    // What it reads must not wait for what it computes (constants and views, which fuse
    // copies for every kernel that reads them, compute nothing).
    std::set<const Node*> computing;
    for (const Node* m : p->nodes)
      if (!is_free_node(*m)) computing.insert(m);
    bool independent = true;
    for (const Node* m : p->nodes)
      for (const Value* u : m->operands)
        if (!(u->producer && p->nodes.count(u->producer)) && depends_on_group(u, computing)) independent = false;
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

namespace {

// The copies were appended after their readers: operands first again, depth first from
// each node in the current order (an explicit stack, for long chains).
void sort_topologically(ir::Graph& g) {
  const std::vector<Node*> nodes = g.nodes();
  std::unordered_set<const Node*> done;
  std::vector<Node*> order;
  std::vector<std::pair<Node*, size_t>> stack;  // (node, next operand to visit)
  for (Node* start : nodes) {
    if (!done.insert(start).second) continue;
    stack.push_back({start, 0});
    while (!stack.empty()) {
      auto& [n, next] = stack.back();
      if (next < n->operands.size()) {
        Node* p = n->operands[next++]->producer;
        if (p && done.insert(p).second) stack.push_back({p, 0});
        continue;
      }
      order.push_back(n);
      stack.pop_back();
    }
  }
  g.reorder(order);
}

}  // namespace

void separate_attention_masks(ir::Graph& g) {
  bool changed = false;
  const std::vector<Node*> matmuls = [&] {
    std::vector<Node*> m;
    for (Node* n : g.nodes())
      if (n->op == ir::OpKind::Matmul) m.push_back(n);
    return m;
  }();
  for (const Node* pv : matmuls) {
    std::optional<AttentionPattern> p = match_attention(*pv);
    if (!p || p->mask_nodes.empty()) continue;
    const auto users = g.users();
    const std::unordered_set<const Value*> outputs(g.outputs().begin(), g.outputs().end());
    bool shared = false;
    for (const Node* m : p->mask_nodes) {
      shared = shared || outputs.count(m->result);
      for (const Node* u : users[static_cast<size_t>(m->result->id)]) shared = shared || !p->nodes.count(u);
    }
    if (!shared) continue;
    std::unordered_map<const Value*, Value*> copy_of;
    for (Node* n : g.nodes()) {
      if (p->mask_nodes.count(n)) {
        std::vector<Value*> operands;
        for (Value* u : n->operands) operands.push_back(copy_of.count(u) ? copy_of.at(u) : u);
        copy_of[n->result] = g.add(n->op, operands, n->attrs, n->result->type, n->loc);
        continue;
      }
      if (!p->nodes.count(n)) continue;
      for (Value*& u : n->operands)
        if (auto it = copy_of.find(u); it != copy_of.end()) u = it->second;
    }
    changed = true;
  }
  if (changed) sort_topologically(g);
}

}  // namespace kiln::passes
