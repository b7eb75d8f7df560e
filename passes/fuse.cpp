// The `fuse` pass: attention patterns become attention groups (fuse_attention.h, planned
// first), reductions become row_reduce and col_reduce groups with their
// prologue and epilogue (planned next, see fuse_reduce.h), matmuls become gemm groups
// with their operands' views and prologues and their epilogue (fuse_gemm.h); the
// remaining element-wise chains become pointwise kernel groups.
//
// A pointwise kernel computes its outputs ("roots") element by element over their
// shape, inlining everything upstream until it reaches values that live in memory:
// graph inputs, results of the planned groups, of composites (left ungrouped for the
// kernels to come), and values that must be written anyway. So fusion is a choice of
// which values to write:
//   1. graph outputs and values that a reduction, matmul or composite reads;
//   2. values under a reshape that cannot become index arithmetic;
//   3. values that several kernels would otherwise recompute, when recomputing costs
//      more memory traffic than one write and one read (or many ops);
//   4. values that cut a cone of more than kMaxFusedOps element-wise ops into pieces
//      (passes/fusion_limits.h: NVRTC's time grows with the body).
// Roots of one shape that share work or inputs, or feed one another, then merge into
// one multi-output kernel unless that would create a cycle through another kernel or
// a reduction, or exceed kMaxFusedOps. Constants, iota and views are free: every
// kernel that needs one gets its own copy, and views become index arithmetic on loads.
#include <fmt/format.h>

#include <algorithm>
#include <iostream>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "ir/error.h"
#include "passes/fuse_attention.h"
#include "passes/fuse_gemm.h"
#include "passes/fuse_reduce.h"
#include "passes/fusion_limits.h"
#include "passes/lower.h"
#include "passes/pass.h"

namespace kiln::passes {

using ir::Node;
using ir::Value;

namespace {

enum class Role { Compute, Free, Opaque };

Role role_of_op(const Node* n) {
  if (ir::is_elementwise(n->op)) return Role::Compute;
  auto c = ir::op_info(n->op).category;
  return c == ir::OpCategory::Source || c == ir::OpCategory::View ? Role::Free : Role::Opaque;
}

// A kernel being formed: roots of one shape, the union of their cones.
struct KernelPlan {
  Shape shape;
  std::vector<const Value*> roots;
  std::set<const Node*> nodes;
  std::set<const Value*> loads;
};

// Recomputing a shared value in several kernels is fine while it re-reads no more
// bytes than writing it once and reading it back would move, and is not a long chain.
constexpr int kMaxRecomputedOps = 16;

class Fuser {
public:
  explicit Fuser(ir::Graph& g) : g_(g), rows_(plan_attention_groups(g)), max_ops_(max_fused_ops()) {
    for (RowGroup& grp : plan_row_groups(g, rows_)) rows_.push_back(std::move(grp));
    for (RowGroup& grp : plan_gemm_groups(g, rows_)) rows_.push_back(std::move(grp));
    auto nodes = g.nodes();
    for (size_t i = 0; i < nodes.size(); ++i) position_[nodes[i]] = static_cast<int>(i);
    for (size_t i = 0; i < rows_.size(); ++i)
      for (const Node* n : rows_[i].nodes)
        if (!is_free_node(*n)) row_of_[n] = static_cast<int>(i);
  }

  void run() {
    seed_roots();
    std::vector<KernelPlan> kernels;
    // Each round that fails writes one more value, so this ends within a round per node.
    for (size_t round = 0; !plan(kernels); ++round)
      if (round > position_.size()) throw Error("fuse: the grouping did not settle");
    rewrite(kernels);
  }

private:
  // What a node is to pointwise fusion: nodes a row-reduce group computes are opaque.
  Role role(const Node* n) const { return row_of_.count(n) ? Role::Opaque : role_of_op(n); }

  int pos(const Node* n) const { return position_.at(n); }
  int pos(const Value* v) const { return v->producer ? pos(v->producer) : -1; }

  void write(const Value* v, bool load_it) {
    roots_.insert(v);
    if (load_it) cut_.insert(v);
  }

  // Rule 1. A computed value is loaded by whoever reads it; a free value (a view of
  // an input, a constant) that the graph returns is written but still inlined.
  void seed_roots() {
    for (const Value* v : g_.outputs())
      if (v->producer && role(v->producer) != Role::Opaque) write(v, role(v->producer) == Role::Compute);
    for (const RowGroup& grp : rows_)  // what a row-reduce or gemm group reads, another kernel writes
      for (const Node* n : grp.nodes)
        for (const Value* u : n->operands) {
          if (!u->producer || grp.nodes.count(u->producer)) continue;
          if (role(u->producer) == Role::Compute) write(u, true);
          // A view or constant that a group reads but does not hold (a view a matmul's
          // layout could not fold, the iota under a gemm operand's prologue): copied into memory.
          if (role(u->producer) == Role::Free) write(u, false);
        }
    for (const Node* n : g_.nodes()) {
      if (role(n) != Role::Opaque || row_of_.count(n)) continue;
      for (const Value* u : n->operands) {
        const Value* w = u;  // through the views that the reduction's kernel will fold
        while (w->producer && ir::op_info(w->producer->op).category == ir::OpCategory::View)
          w = w->producer->operands[0];
        if (w->producer && role(w->producer) == Role::Compute) write(w, true);
      }
    }
  }

  bool inlinable(const Value* v) const {
    return v->producer && role(v->producer) != Role::Opaque && !cut_.count(v);
  }

  std::vector<const Value*> sorted_roots() const {
    std::vector<const Value*> r(roots_.begin(), roots_.end());
    std::sort(r.begin(), r.end(), [&](const Value* a, const Value* b) { return pos(a) < pos(b); });
    return r;
  }

  // One round: cones, merges, checks. Returns false when it added a value to write
  // (rules 2 and 3) and the grouping must be redone.
  bool plan(std::vector<KernelPlan>& kernels) {
    std::vector<KernelPlan> singles;
    bool split = false;
    for (const Value* r : sorted_roots()) {
      auto inside = [&](const Value* v) { return v == r || inlinable(v); };
      PointwiseBuild b = build_pointwise("cone", {r}, inside, {});
      if (b.must_load) {
        write(b.must_load, true);
        return false;
      }
      split = split_large_cone(b.nodes) || split;
      singles.push_back(KernelPlan{r->type.shape, {r}, b.nodes, {b.loads.begin(), b.loads.end()}});
    }
    if (split) return false;
    kernels = merge(std::move(singles));
    for (const KernelPlan& k : kernels) {  // the kernel exactly as lowering will build it
      auto inside = [&](const Value* v) { return v->producer && k.nodes.count(v->producer); };
      PointwiseBuild b = build_pointwise("check", k.roots, inside, {});
      if (b.must_load) {
        write(b.must_load, true);
        return false;
      }
    }
    if (const Value* v = costly_duplicate(kernels)) {
      write(v, true);
      return false;
    }
    return true;
  }

  int element_wise_ops(const std::set<const Node*>& nodes) const {
    return static_cast<int>(
        std::count_if(nodes.begin(), nodes.end(), [this](const Node* n) { return role(n) == Role::Compute; }));
  }

  // Rule 4: a cone of more than kMaxFusedOps element-wise ops is cut into pieces of
  // kMaxFusedOps in graph order, latest first (a chain splits evenly in one round;
  // other shapes may need more rounds). Returns whether it wrote a value.
  bool split_large_cone(const std::set<const Node*>& cone) {
    std::vector<const Node*> ops;
    for (const Node* n : cone)
      if (role(n) == Role::Compute) ops.push_back(n);
    if (ops.size() <= static_cast<size_t>(max_ops_)) return false;
    std::sort(ops.begin(), ops.end(), [&](const Node* a, const Node* b) { return pos(a) < pos(b); });
    bool wrote = false;
    for (size_t above = static_cast<size_t>(max_ops_); above < ops.size(); above += static_cast<size_t>(max_ops_)) {
      const Value* v = ops[ops.size() - 1 - above]->result;
      if (roots_.count(v)) continue;
      write(v, true);
      wrote = true;
    }
    return wrote;
  }

  std::vector<KernelPlan> merge(std::vector<KernelPlan> singles) const {
    std::vector<KernelPlan> kernels;
    for (KernelPlan& mine : singles) {
      size_t at = kernels.size();
      for (size_t i = 0; i < kernels.size();) {
        if (kernels[i].shape == mine.shape && connected(kernels[i], mine) && !reshapes_a_root(kernels[i], mine) &&
            !reshapes_a_root(mine, kernels[i])) {
          KernelPlan both = united(kernels[i], mine);
          if (element_wise_ops(both.nodes) <= max_ops_ && !cyclic(both)) {
            mine = std::move(both);
            kernels.erase(kernels.begin() + static_cast<std::ptrdiff_t>(i));
            at = std::min(at, i);
            continue;
          }
        }
        ++i;
      }
      kernels.insert(kernels.begin() + static_cast<std::ptrdiff_t>(std::min(at, kernels.size())), std::move(mine));
    }
    return kernels;
  }

  // Whether `reader` reads a root of `other` through a reshape. United, the root would be
  // computed inside the kernel and the reshape would have to become index arithmetic,
  // which it could not (that is why the root is written): the two stay apart.
  static bool reshapes_a_root(const KernelPlan& reader, const KernelPlan& other) {
    for (const Node* n : reader.nodes) {
      if (n->op != ir::OpKind::Reshape) continue;
      for (const Value* w = n->operands[0];;) {
        if (std::count(other.roots.begin(), other.roots.end(), w)) return true;
        if (!w->producer || ir::op_info(w->producer->op).category != ir::OpCategory::View) break;
        w = w->producer->operands[0];
      }
    }
    return false;
  }

  static KernelPlan united(const KernelPlan& a, const KernelPlan& b) {
    KernelPlan u = a;
    u.roots.insert(u.roots.end(), b.roots.begin(), b.roots.end());
    u.nodes.insert(b.nodes.begin(), b.nodes.end());
    u.loads.insert(b.loads.begin(), b.loads.end());
    return u;
  }

  // Worth one kernel: shared computation, one feeding the other, or a full-size
  // input that both read (read once instead of twice).
  bool connected(const KernelPlan& a, const KernelPlan& b) const {
    auto is_root = [&](const Value* v) {
      return std::count(a.roots.begin(), a.roots.end(), v) || std::count(b.roots.begin(), b.roots.end(), v);
    };
    for (const Node* n : a.nodes)
      if (b.nodes.count(n) && (role(n) == Role::Compute || is_root(n->result))) return true;
    for (const Value* r : a.roots)
      if (b.loads.count(r)) return true;
    for (const Value* r : b.roots)
      if (a.loads.count(r)) return true;
    for (const Value* v : a.loads)
      if (b.loads.count(v) && v->type.numel() == numel(a.shape)) return true;
    return false;
  }

  // A cycle: something the kernel loads depends on something it writes.
  bool cyclic(const KernelPlan& k) const {
    std::unordered_set<const Value*> written(k.roots.begin(), k.roots.end());
    for (const Value* l : k.loads)
      if (!written.count(l) && depends_on(l, written)) return true;
    return false;
  }

  // Whether `v` waits for one of `targets`. A value that a row-reduce or gemm group
  // computes is ready only once its whole kernel has run, so it waits for everything
  // that kernel reads, not only for its own operands.
  bool depends_on(const Value* v, const std::unordered_set<const Value*>& targets) const {
    std::vector<const Value*> stack{v};
    std::unordered_set<const Value*> seen;
    std::unordered_set<int> groups_seen;
    auto visit = [&](const Value* u) {
      if (targets.count(u)) return true;
      stack.push_back(u);
      return false;
    };
    while (!stack.empty()) {
      const Value* x = stack.back();
      stack.pop_back();
      if (!x->producer || !seen.insert(x).second) continue;
      for (const Value* u : x->producer->operands)
        if (visit(u)) return true;
      auto row = row_of_.find(x->producer);
      if (row == row_of_.end() || !groups_seen.insert(row->second).second) continue;
      const RowGroup& grp = rows_[static_cast<size_t>(row->second)];
      for (const Node* n : grp.nodes)
        for (const Value* u : n->operands)
          if ((!u->producer || !grp.nodes.count(u->producer)) && visit(u)) return true;
    }
    return false;
  }

  // Rule 3: the latest computed value inlined into several kernels that is too
  // costly to recompute, or null.
  const Value* costly_duplicate(const std::vector<KernelPlan>& kernels) const {
    std::map<const Node*, int> copies;
    for (const KernelPlan& k : kernels)
      for (const Node* n : k.nodes)
        if (role(n) == Role::Compute && !roots_.count(n->result)) ++copies[n];
    const Value* latest = nullptr;
    for (const auto& [n, count] : copies) {
      if (count < 2 || (latest && pos(n) < pos(latest))) continue;
      const Value* v = n->result;
      auto inside = [&](const Value* x) { return x == v || inlinable(x); };
      PointwiseBuild b = build_pointwise("cost", {v}, inside, {});
      int64_t reread = 0;
      for (const Value* l : b.loads) reread += l->type.bytes();
      int ops = static_cast<int>(std::count_if(b.nodes.begin(), b.nodes.end(),
                                               [this](const Node* x) { return role(x) == Role::Compute; }));
      if ((count - 1) * reread > (count + 1) * v->type.bytes() || ops > kMaxRecomputedOps) latest = v;
    }
    return latest;
  }

  // Free nodes that a reduction, matmul or composite reads directly (through views):
  // they stay outside every group, and kernels that need them get copies.
  std::unordered_set<const Node*> kept_for_opaque() const {
    std::unordered_set<const Node*> keep;
    for (const Node* n : g_.nodes()) {
      if (role(n) != Role::Opaque) continue;
      for (const Value* w : n->operands) {
        while (w->producer && role(w->producer) == Role::Free && !roots_.count(w)) {
          keep.insert(w->producer);
          if (ir::op_info(w->producer->op).category != ir::OpCategory::View) break;
          w = w->producer->operands[0];
        }
      }
    }
    return keep;
  }

  // Gives every node at most one kernel (copying nodes that several kernels inline),
  // then reorders the graph so that each kernel is a contiguous block.
  void rewrite(const std::vector<KernelPlan>& kernels) {
    std::unordered_map<const Node*, int> owner;
    for (size_t k = 0; k < kernels.size(); ++k)
      for (const Value* r : kernels[k].roots) owner[r->producer] = static_cast<int>(k);
    const auto keep = kept_for_opaque();
    for (size_t k = 0; k < kernels.size(); ++k) {
      std::vector<const Node*> copies;
      for (const Node* n : sorted(kernels[k].nodes)) {
        if (!keep.count(n) && owner.emplace(n, static_cast<int>(k)).second) continue;  // claimed
        if (keep.count(n) || owner.at(n) != static_cast<int>(k)) copies.push_back(n);
      }
      copy_into(static_cast<int>(k), copies, kernels[k].nodes, owner);
    }
    for (size_t r = 0; r < rows_.size(); ++r) claim_row_group(static_cast<int>(kernels.size() + r), rows_[r], owner);
    std::vector<Node*> order = block_order(owner, static_cast<int>(kernels.size() + rows_.size()));
    g_.reorder(order);
    g_.clear_groups();
    std::map<int, int> group_of;  // plan index -> group index, in order of appearance
    for (Node* n : order) {
      auto it = owner.find(n);
      if (it == owner.end()) continue;
      auto [g, fresh] = group_of.emplace(it->second, static_cast<int>(group_of.size()));
      if (fresh) {
        bool rows = it->second >= static_cast<int>(kernels.size());
        g_.add_group(ir::Group{fmt::format("k{}", g->second),
                               rows ? rows_[static_cast<size_t>(it->second) - kernels.size()].kind : "pointwise"});
      }
      n->group = g->second;
    }
  }

  // Gives a row-reduce group its nodes. A constant or view that something outside the
  // group also reads (or that another group already owns) is copied for the group.
  void claim_row_group(int k, const RowGroup& grp, std::unordered_map<const Node*, int>& owner) {
    std::unordered_set<const Value*> outputs(g_.outputs().begin(), g_.outputs().end());
    auto users = g_.users();
    std::vector<const Node*> copies;
    for (const Node* n : sorted(grp.nodes)) {
      bool shared = false;
      if (is_free_node(*n)) {
        shared = outputs.count(n->result) || owner.count(n);
        for (const Node* u : users[n->result->id]) shared = shared || !grp.nodes.count(u);
      }
      if (shared) copies.push_back(n);
      else owner[n] = k;
    }
    copy_into(k, copies, grp.nodes, owner);
  }

  std::vector<const Node*> sorted(const std::set<const Node*>& nodes) const {
    std::vector<const Node*> v(nodes.begin(), nodes.end());
    std::sort(v.begin(), v.end(), [&](const Node* a, const Node* b) { return pos(a) < pos(b); });
    return v;
  }

  // Appends copies of `copies` (in order) for kernel k and points k's nodes at them.
  void copy_into(int k, const std::vector<const Node*>& copies, const std::set<const Node*>& members,
                 std::unordered_map<const Node*, int>& owner) {
    // Keyed by the original value. A node copied here may already read another
    // kernel's copy (made for that kernel alone): it reads this kernel's copy of the
    // same value instead, or else the original.
    std::unordered_map<const Value*, Value*> copy_of;
    auto mine = [&](Value* u) {
      Value* o = original(u);
      auto it = copy_of.find(o);
      return it != copy_of.end() ? it->second : o;
    };
    for (const Node* n : copies) {
      std::vector<Value*> operands;
      for (Value* u : n->operands) operands.push_back(mine(u));
      Value* c = g_.add(n->op, operands, n->attrs, n->result->type, n->loc);
      copy_of[original(n->result)] = c;
      original_of_[c] = original(n->result);
      owner[c->producer] = k;
      position_[c->producer] = static_cast<int>(position_.size());
    }
    if (copy_of.empty()) return;
    for (Node* n : g_.nodes()) {
      auto it = owner.find(n);
      if (!members.count(n) || it == owner.end() || it->second != k) continue;
      for (Value*& u : n->operands) u = mine(u);
    }
  }

  Value* original(Value* v) const {
    auto it = original_of_.find(v);
    return it != original_of_.end() ? it->second : v;
  }

  // A topological order of blocks (each kernel, each ungrouped node), the earliest
  // original position first; inside a block, a topological order too.
  std::vector<Node*> block_order(const std::unordered_map<const Node*, int>& owner, int num_kernels) const {
    auto nodes = g_.nodes();
    std::sort(nodes.begin(), nodes.end(), [&](const Node* a, const Node* b) { return pos(a) < pos(b); });
    auto block_of = [&](const Node* n) {
      auto it = owner.find(n);
      return it != owner.end() ? it->second : num_kernels + pos(n);
    };
    std::map<int, std::vector<Node*>> members;  // block -> nodes in position order
    std::map<int, std::set<int>> succ;
    std::map<int, int> indegree, first;
    for (Node* n : nodes) {
      int b = block_of(n);
      members[b].push_back(n);
      first.emplace(b, pos(n));
      indegree.emplace(b, 0);
    }
    for (Node* n : nodes)
      for (const Value* u : n->operands) {
        if (!u->producer || block_of(u->producer) == block_of(n)) continue;
        if (succ[block_of(u->producer)].insert(block_of(n)).second) ++indegree[block_of(n)];
      }
    std::set<std::pair<int, int>> ready;  // (first position, block)
    for (const auto& [b, d] : indegree)
      if (d == 0) ready.insert({first[b], b});
    std::vector<Node*> order;
    while (!ready.empty()) {
      int b = ready.begin()->second;
      ready.erase(ready.begin());
      append_topologically(members[b], order);
      for (int s : succ[b])
        if (--indegree[s] == 0) ready.insert({first[s], s});
    }
    if (order.size() != nodes.size()) throw Error("fuse: the kernel groups depend on each other in a cycle");
    return order;
  }

  // Operands first, depth first from each node in block order; an explicit stack, so
  // that a block holding a chain of tens of thousands of nodes does not overflow.
  static void append_topologically(const std::vector<Node*>& block, std::vector<Node*>& order) {
    std::unordered_set<const Node*> in_block(block.begin(), block.end()), done;
    std::vector<std::pair<Node*, size_t>> stack;  // (node, next operand to visit)
    for (Node* start : block) {
      if (!done.insert(start).second) continue;
      stack.push_back({start, 0});
      while (!stack.empty()) {
        auto& [n, next] = stack.back();
        if (next < n->operands.size()) {
          Value* u = n->operands[next++];
          if (u->producer && in_block.count(u->producer) && done.insert(u->producer).second)
            stack.push_back({u->producer, 0});
          continue;
        }
        order.push_back(n);
        stack.pop_back();
      }
    }
  }

  ir::Graph& g_;
  std::vector<RowGroup> rows_;                   // row-reduce groups, planned first
  std::unordered_map<const Node*, int> row_of_;  // computing node -> its row group
  std::unordered_map<const Node*, int> position_;
  std::unordered_set<const Value*> roots_;  // values some kernel writes
  std::unordered_set<const Value*> cut_;    // values every reader loads
  const int max_ops_;                       // element-wise ops per kernel (rule 4)
  std::unordered_map<const Value*, Value*> original_of_;  // copy -> the value it copies
};

// What a fused graph looks like: the node order and each node's group and name.
std::vector<std::string> snapshot(const ir::Graph& g) {
  std::vector<std::string> s;
  for (const Node* n : g.nodes())
    s.push_back(fmt::format("{}:{}:{}", static_cast<const void*>(n), n->group,
                            n->group >= 0 ? g.groups()[n->group].name + g.groups()[n->group].kind : ""));
  return s;
}

class Fuse : public Pass {
public:
  std::string_view name() const override { return "fuse"; }
  bool run(ir::Graph& g) override {
    auto before = snapshot(g);
    size_t groups_before = g.groups().size();
    const std::vector<PinnedTile> pinned = pinned_tiles(g);
    g.clear_groups();
    separate_attention_masks(g);
    Fuser(g).run();
    restore_pinned_tiles(g, pinned);
    return snapshot(g) != before || g.groups().size() != groups_before;
  }

private:
  // A kernel block of the input whose tile was written by hand (or by an earlier run):
  // its kind, its tile and its last node (the op whose result it writes).
  struct PinnedTile {
    std::string kind;
    ir::Attrs tile;
    const Node* last = nullptr;
  };

  static std::vector<PinnedTile> pinned_tiles(const ir::Graph& g) {
    std::vector<PinnedTile> pinned(g.groups().size());
    for (const Node* n : g.nodes())
      if (n->group >= 0 && !g.groups()[n->group].tile.empty()) {
        pinned[n->group] = {g.groups()[n->group].kind, g.groups()[n->group].tile, n};
      }
    return pinned;
  }

  // The fused groups that end with the node a pinned block ended with, and are of its
  // kind, keep its tile: a block written with its config stays pinned through the
  // pipeline. A pin whose block fusion did not form again is dropped, with a warning.
  static void restore_pinned_tiles(ir::Graph& g, const std::vector<PinnedTile>& pinned) {
    for (const PinnedTile& p : pinned) {
      if (p.last == nullptr) continue;
      const int group = p.last->group;
      if (group >= 0 && g.groups()[group].kind == p.kind && g.groups()[group].tile.empty()) {
        const Node* last = nullptr;
        for (const Node* n : g.nodes())
          if (n->group == group) last = n;
        if (last == p.last) {
          g.group(group).tile = p.tile;
          continue;
        }
      }
      std::cerr << fmt::format("kiln: fuse: a {} kernel's tile config was dropped: fusion formed other kernels around "
                               "its ops\n", p.kind);
    }
  }
};

}  // namespace

std::unique_ptr<Pass> make_Fuse() { return std::make_unique<Fuse>(); }

}  // namespace kiln::passes
