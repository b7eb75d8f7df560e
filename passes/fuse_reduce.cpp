// Row-reduce grouping (see fuse_reduce.h). A group grows from a reduction: backwards
// through element-wise ops, constants, views and reductions of the same rows; forwards
// through element-wise ops, views and reductions of the same rows whose results are
// full rows or one value per row, and whose other operands do not depend on the group.
// A computed value that leaves the group must be storable (full rows or per row);
// one that is not is left out and the group grows again. A group that still cannot
// be one kernel shrinks to its reduction alone.
#include "passes/fuse_reduce.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "ir/error.h"
#include "passes/lower.h"

namespace kiln::passes {

using ir::Node;
using ir::Value;

bool is_free_node(const Node& n) {
  auto c = ir::op_info(n.op).category;
  return c == ir::OpCategory::Source || c == ir::OpCategory::View;
}

namespace {

// A per-row or full-row shape of the row space `rows`.
bool storable(const Shape& shape, const Shape& rows) {
  Shape keep(rows.begin(), rows.end() - 1), keepdim = keep;
  keepdim.push_back(1);
  return shape == rows || shape == keep || shape == keepdim;
}

class RowGrouper {
public:
  explicit RowGrouper(const ir::Graph& g) : nodes_(g.nodes()), users_(g.users()) {
    std::unordered_set<const Value*> needed(g.outputs().begin(), g.outputs().end());
    for (auto it = nodes_.rbegin(); it != nodes_.rend(); ++it) {
      if (!needed.count((*it)->result)) continue;
      live_.insert(*it);
      for (const Value* v : (*it)->operands) needed.insert(v);
    }
    for (const Value* v : g.outputs()) outputs_.insert(v);
  }

  std::vector<RowGroup> run() {
    std::vector<RowGroup> groups;
    for (const Node* n : nodes_) {
      if (!live_.count(n) || taken_.count(n)) continue;
      Shape rows = row_reduction_space(*n);
      if (rows.empty() || !storable(n->result->type.shape, rows)) continue;
      RowGroup grp{rows, form(n, rows)};
      for (const Node* m : grp.nodes)
        if (!is_free_node(*m)) taken_.insert(m);
      groups.push_back(std::move(grp));
    }
    return groups;
  }

private:
  bool joinable(const Node* n, const Shape& rows, const std::set<const Node*>& excluded) const {
    if (excluded.count(n) || taken_.count(n)) return false;
    if (is_free_node(*n) || ir::is_elementwise(n->op)) return true;
    return row_reduction_space(*n) == rows;
  }

  bool depends_on(const Value* v, const std::set<const Node*>& group) const {
    std::vector<const Value*> stack{v};
    std::unordered_set<const Value*> seen;
    while (!stack.empty()) {
      const Value* x = stack.back();
      stack.pop_back();
      if (!x->producer || !seen.insert(x).second) continue;
      if (group.count(x->producer)) return true;
      for (const Value* u : x->producer->operands) stack.push_back(u);
    }
    return false;
  }

  std::set<const Node*> grow(const Node* seed, const Shape& rows, const std::set<const Node*>& excluded) const {
    std::set<const Node*> group{seed};
    for (bool changed = true; changed;) {
      changed = false;
      for (bool back = true; back;) {  // producers
        back = false;
        for (const Node* n : std::vector<const Node*>(group.begin(), group.end()))
          for (const Value* u : n->operands)
            if (u->producer && !group.count(u->producer) && joinable(u->producer, rows, excluded)) {
              group.insert(u->producer);
              back = changed = true;
            }
      }
      for (const Node* n : nodes_) {  // consumers, in order
        if (group.count(n) || !live_.count(n) || !joinable(n, rows, excluded)) continue;
        if (!storable(n->result->type.shape, rows)) continue;
        bool reads_group = false, independent = true;
        for (const Value* u : n->operands) {
          if (u->producer && group.count(u->producer)) reads_group = true;
          else independent = independent && !depends_on(u, group);
        }
        if (reads_group && independent) {
          group.insert(n);
          changed = true;
        }
      }
    }
    return group;
  }

  // The computed values that leave the group (other readers, graph outputs).
  std::vector<const Value*> escaping(const std::set<const Node*>& group) const {
    std::vector<const Value*> out;
    for (const Node* n : nodes_) {
      if (!group.count(n) || is_free_node(*n)) continue;
      bool leaves = outputs_.count(n->result) > 0;
      for (const Node* u : users_[n->result->id]) leaves = leaves || (!group.count(u) && live_.count(u));
      if (leaves) out.push_back(n->result);
    }
    return out;
  }

  bool viable(const std::set<const Node*>& group, const Shape& rows) const {
    for (const Node* n : group)
      for (const Value* u : n->operands)
        if (u->producer && !group.count(u->producer) && depends_on(u, group)) return false;
    std::vector<const Value*> roots = escaping(group);
    if (roots.empty()) return false;
    auto inside = [&](const Value* v) { return v->producer && group.count(v->producer); };
    try {
      PointwiseBuild b = build_row_reduce("check", rows, roots, inside, {});
      return b.must_load == nullptr;
    } catch (const Error&) {
      return false;
    }
  }

  std::set<const Node*> form(const Node* seed, const Shape& rows) const {
    std::set<const Node*> excluded;
    for (size_t round = 0; round <= nodes_.size(); ++round) {
      std::set<const Node*> group = grow(seed, rows, excluded);
      const Value* bad = nullptr;
      for (const Value* v : escaping(group))
        if (!storable(v->type.shape, rows) && v->producer != seed) bad = v;
      if (bad) {
        excluded.insert(bad->producer);
        continue;
      }
      if (viable(group, rows)) return group;
      break;
    }
    // The reduction alone, with the constants and views it reads.
    std::set<const Node*> group{seed};
    const Value* u = seed->operands[0];
    while (u->producer && is_free_node(*u->producer)) {
      group.insert(u->producer);
      if (u->producer->operands.empty()) break;
      u = u->producer->operands[0];
    }
    return group;
  }

  std::vector<ir::Node*> nodes_;
  std::vector<std::vector<ir::Node*>> users_;
  std::unordered_set<const Node*> live_;
  std::unordered_set<const Value*> outputs_;
  std::unordered_set<const Node*> taken_;  // computing nodes already in a group
};

}  // namespace

std::vector<RowGroup> plan_row_groups(const ir::Graph& g) { return RowGrouper(g).run(); }

}  // namespace kiln::passes
