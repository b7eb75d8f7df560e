// Row-reduce grouping (see fuse_reduce.h). A group grows from a reduction: backwards
// through element-wise ops, constants, views and reductions of the same rows; forwards
// through element-wise ops, views and reductions of the same rows whose results are
// full rows or one value per row, and whose other operands do not depend on the group.
// Column groups take every other reduction (of a float or i32 tensor), over any set of axes.
// A computed value that leaves the group must be storable (full rows or per row);
// one that is not is left out and the group grows again. A group that still cannot
// be one kernel shrinks to its reduction alone. Column groups (reductions over outer
// dims) grow the same way, with per-column values in place of per-row ones; a full
// reduction of one long row (one block would read it alone) becomes a column group.
#include "passes/fuse_reduce.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "ir/error.h"
#include "passes/fusion_limits.h"
#include "passes/lower.h"

namespace kiln::passes {

using ir::Node;
using ir::Value;

bool is_free_node(const Node& n) {
  auto c = ir::op_info(n.op).category;
  // A cast of a graph input costs a kernel nothing beyond the load it needs anyway, so
  // every kernel that reads it recomputes it rather than read a widened copy.
  // Not of i8 / i4 weights: only pointwise kernels (and dequantised gemm operands) read those.
  const bool cast_of_input = n.op == ir::OpKind::Cast && !n.operands[0]->producer && !touches_storage_type(n);
  return c == ir::OpCategory::Source || c == ir::OpCategory::View || cast_of_input;
}

bool touches_storage_type(const Node& n) {
  auto storage = [](DType t) { return is_storage_only(t) || is_fp8(t); };
  if (storage(n.result->type.dtype)) return true;
  for (const Value* u : n.operands)
    if (storage(u->type.dtype)) return true;
  return false;
}

bool depends_on_group(const Value* v, const std::set<const Node*>& group) {
  std::vector<const Value*> stack{v};
  std::unordered_set<const Value*> seen;
  while (!stack.empty()) {
    const Value* x = stack.back();
    stack.pop_back();
    if (!x->producer || !seen.insert(x).second) continue;
    // A constant, view or cast of an input in the group is recomputed by every kernel
    // that reads it: only what is under it can make `v` wait for the group.
    if (group.count(x->producer) && !is_free_node(*x->producer)) return true;
    for (const Value* u : x->producer->operands) stack.push_back(u);
  }
  return false;
}

std::vector<const Value*> escaping_values(const std::set<const Node*>& group, const std::vector<Node*>& nodes,
                                          const std::vector<std::vector<Node*>>& users,
                                          const std::unordered_set<const Node*>& live,
                                          const std::unordered_set<const Value*>& outputs) {
  std::unordered_set<const Value*> leaving;
  for (const Node* n : nodes) {
    if (!group.count(n)) continue;
    bool leaves = outputs.count(n->result) > 0;
    for (const Node* u : users[n->result->id]) leaves = leaves || (!group.count(u) && live.count(u));
    if (!leaves) continue;
    // A view or constant read outside the group is copied for its readers, and the copy
    // reads what the view reads: the computed value under it leaves the group too.
    for (const Value* w = n->result; w->producer && group.count(w->producer);) {
      if (!is_free_node(*w->producer)) {
        leaving.insert(w);
        break;
      }
      if (w->producer->operands.empty()) break;
      w = w->producer->operands[0];
    }
  }
  std::vector<const Value*> out;  // in graph order
  for (const Node* n : nodes)
    if (leaving.count(n->result)) out.push_back(n->result);
  return out;
}

namespace {

// What a group reduces: rows of `space` (its last dim), or with `cols` its `axes`.
struct Target {
  bool cols = false;
  Shape space;
  std::vector<int64_t> axes;
};

// The reduced dims of size > 1: two reductions of one space that agree on these
// reduce the same elements.
std::vector<int64_t> significant(const Shape& space, const std::vector<int64_t>& axes) {
  std::vector<int64_t> out;
  for (int64_t d : axes)
    if (space[static_cast<size_t>(d)] != 1) out.push_back(d);
  return out;
}

// A value a group can write: full or per-row shapes of a row space; per-column shapes
// (the reduced dims dropped or kept as 1) of a column space.
bool storable(const Shape& shape, const Target& t) {
  if (t.cols) {
    Shape kept, keepdim = t.space;
    for (size_t d = 0; d < t.space.size(); ++d) {
      if (std::count(t.axes.begin(), t.axes.end(), static_cast<int64_t>(d))) keepdim[d] = 1;
      else kept.push_back(t.space[d]);
    }
    return shape == kept || shape == keepdim;
  }
  const Shape& rows = t.space;
  Shape keep(rows.begin(), rows.end() - 1), keepdim = keep;
  keepdim.push_back(1);
  return shape == rows || shape == keep || shape == keepdim;
}

// Whether reduction `n` reduces what the group does.
bool same_reduction(const Node& n, const Target& t) {
  if (!t.cols) return row_reduction_space(n) == t.space;
  std::optional<ColReduction> c = col_reduction(n);
  return c && c->space == t.space && significant(c->space, c->axes) == significant(t.space, t.axes);
}

// A full reduction this long goes to col_reduce, whose slices spread it over the GPU,
// rather than to one row_reduce block.
constexpr int64_t kLongFullReduction = int64_t{1} << 20;

bool long_full_reduction(const Node& n) {
  std::optional<ColReduction> c = col_reduction(n);
  return c && numel(c->space) >= kLongFullReduction &&
         significant(c->space, c->axes).size() == static_cast<size_t>(std::count_if(
             c->space.begin(), c->space.end(), [](int64_t d) { return d != 1; }));
}

class RowGrouper {
public:
  RowGrouper(const ir::Graph& g, const std::vector<RowGroup>& planned) : nodes_(g.nodes()), users_(g.users()) {
    for (const RowGroup& grp : planned)
      for (const Node* n : grp.nodes)
        if (!is_free_node(*n)) taken_.insert(n);
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
      if (!live_.count(n) || taken_.count(n) || long_full_reduction(*n)) continue;
      Target t{false, row_reduction_space(*n), {}};
      if (t.space.empty() || !storable(n->result->type.shape, t)) continue;
      RowGroup grp{t.space, form(n, t), "row_reduce", {}};
      for (const Node* m : grp.nodes)
        if (!is_free_node(*m)) taken_.insert(m);
      groups.push_back(std::move(grp));
    }
    merge_siblings(groups);
    bool col_groups = false;
    for (const Node* n : nodes_) {
      if (!live_.count(n) || taken_.count(n)) continue;
      std::optional<ColReduction> c = col_reduction(*n);
      if (!c) continue;
      Target t{true, c->space, c->axes};
      if (!storable(n->result->type.shape, t)) continue;
      RowGroup grp{t.space, form(n, t), "col_reduce", t.axes};
      for (const Node* m : grp.nodes)
        if (!is_free_node(*m)) taken_.insert(m);
      groups.push_back(std::move(grp));
      col_groups = true;
    }
    if (col_groups) merge_siblings(groups);
    return groups;
  }

private:
  bool joinable(const Node* n, const Target& t, const std::set<const Node*>& excluded) const {
    if (excluded.count(n) || taken_.count(n) || touches_storage_type(*n)) return false;
    if (is_free_node(*n) || ir::is_elementwise(n->op)) return true;
    return ir::op_info(n->op).category == ir::OpCategory::Reduce && same_reduction(*n, t);
  }

  bool depends_on(const Value* v, const std::set<const Node*>& group) const { return depends_on_group(v, group); }

  // Grows from the seed until nothing more joins or the group computes max_fused_ops()
  // element-wise ops (the rest is left to pointwise kernels).
  std::set<const Node*> grow(const Node* seed, const Target& t, const std::set<const Node*>& excluded) const {
    std::set<const Node*> group{seed};
    int element_wise = 0;
    const int max_ops = max_fused_ops();
    auto room = [&](const Node* n) { return !ir::is_elementwise(n->op) || element_wise < max_ops; };
    auto join = [&](const Node* n) {
      group.insert(n);
      if (ir::is_elementwise(n->op)) ++element_wise;
    };
    for (bool changed = true; changed;) {
      changed = false;
      // Producers, breadth first from the nodes that joined last.
      std::vector<const Node*> frontier(group.begin(), group.end());
      while (!frontier.empty()) {
        std::vector<const Node*> next;
        for (const Node* n : frontier)
          for (const Value* u : n->operands)
            if (u->producer && !group.count(u->producer) && joinable(u->producer, t, excluded) && room(u->producer)) {
              join(u->producer);
              next.push_back(u->producer);
              changed = true;
            }
        frontier = std::move(next);
      }
      for (const Node* n : nodes_) {  // consumers, in order
        if (group.count(n) || !live_.count(n) || !joinable(n, t, excluded) || !room(n)) continue;
        if (!storable(n->result->type.shape, t)) continue;
        bool reads_group = false;
        for (const Value* u : n->operands) reads_group = reads_group || (u->producer && group.count(u->producer));
        if (!reads_group) continue;
        bool independent = true;  // checked only now: depends_on walks the graph upstream
        for (const Value* u : n->operands)
          if (!(u->producer && group.count(u->producer))) independent = independent && !depends_on(u, group);
        if (independent) {
          join(n);
          changed = true;
        }
      }
    }
    return group;
  }

  std::vector<const Value*> escaping(const std::set<const Node*>& group) const {
    return escaping_values(group, nodes_, users_, live_, outputs_);
  }

  bool viable(const std::set<const Node*>& group, const Target& t) const {
    for (const Node* n : group)
      for (const Value* u : n->operands)
        if (u->producer && !group.count(u->producer) && depends_on(u, group)) return false;
    std::vector<const Value*> roots = escaping(group);
    if (roots.empty()) return false;
    auto inside = [&](const Value* v) { return v->producer && group.count(v->producer); };
    try {
      PointwiseBuild b = t.cols ? build_col_reduce("check", ColReduction{t.space, t.axes}, roots, inside, {})
                                : build_row_reduce("check", t.space, roots, inside, {});
      return b.must_load == nullptr;
    } catch (const Error&) {
      return false;
    }
  }

  // The values a group reads from outside itself (through free nodes: constants, views).
  std::set<const Value*> external_reads(const std::set<const Node*>& group) const {
    std::set<const Value*> out;
    for (const Node* n : group)
      for (const Value* u : n->operands) {
        if (u->producer && group.count(u->producer)) continue;
        const Value* v = u;
        while (v->producer && is_free_node(*v->producer) && !v->producer->operands.empty())
          v = v->producer->operands[0];
        out.insert(v);
      }
    return out;
  }

  // Groups over the same rows (or columns: the same space and reduced dims) that read
  // the same tensors and nothing else from outside (sum and max of x; the statistics of
  // one row, or a mean and a variance over a middle axis) become one group, so that
  // the input is read once for all of them. Only such groups merge: a group that reads
  // another kernel's output keeps its own place in the launch order.
  void merge_siblings(std::vector<RowGroup>& groups) const {
    for (size_t i = 0; i < groups.size(); ++i)
      for (size_t j = i + 1; j < groups.size();) {
        RowGroup& a = groups[i];
        const RowGroup& b = groups[j];
        const bool cols = a.kind == "col_reduce";
        const Target t{cols, a.rows, a.reduced_axes};
        const bool same_target = a.kind == b.kind && a.rows == b.rows &&
                                 (!cols || significant(a.rows, a.reduced_axes) == significant(b.rows, b.reduced_axes));
        bool same_inputs = same_target && external_reads(a.nodes) == external_reads(b.nodes);
        std::set<const Node*> both = a.nodes;
        both.insert(b.nodes.begin(), b.nodes.end());
        if (same_inputs && viable(both, t)) {
          a.nodes = std::move(both);
          groups.erase(groups.begin() + static_cast<std::ptrdiff_t>(j));
        } else {
          ++j;
        }
      }
  }

  std::set<const Node*> form(const Node* seed, const Target& t) const {
    std::set<const Node*> excluded;
    for (size_t round = 0; round <= nodes_.size(); ++round) {
      std::set<const Node*> group = grow(seed, t, excluded);
      const Value* bad = nullptr;
      for (const Value* v : escaping(group))
        if (!storable(v->type.shape, t) && v->producer != seed) bad = v;
      if (bad) {
        excluded.insert(bad->producer);
        continue;
      }
      if (viable(group, t)) return group;
      break;
    }
    // The reduction alone, with the constants and views it reads when the kernel can
    // fold them (a reshape may not become index arithmetic: then another kernel writes
    // what the reduction reads).
    std::set<const Node*> group{seed};
    const Value* u = seed->operands[0];
    while (u->producer && is_free_node(*u->producer)) {
      group.insert(u->producer);
      if (u->producer->operands.empty()) break;
      u = u->producer->operands[0];
    }
    if (group.size() > 1 && !viable(group, t)) return {seed};
    return group;
  }

  std::vector<ir::Node*> nodes_;
  std::vector<std::vector<ir::Node*>> users_;
  std::unordered_set<const Node*> live_;
  std::unordered_set<const Value*> outputs_;
  std::unordered_set<const Node*> taken_;  // computing nodes already in a group
};

}  // namespace

std::vector<RowGroup> plan_row_groups(const ir::Graph& g, const std::vector<RowGroup>& planned) {
  return RowGrouper(g, planned).run();
}

}  // namespace kiln::passes
