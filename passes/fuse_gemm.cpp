// Gemm grouping (see fuse_gemm.h). Every candidate group is checked by building its
// kernel (build_gemm); the first that builds is kept.
#include "passes/fuse_gemm.h"

#include <unordered_map>
#include <unordered_set>

#include "ir/error.h"
#include "passes/dequant_fold.h"
#include "passes/fusion_limits.h"
#include "passes/lower_gemm.h"

namespace kiln::passes {

using ir::Node;
using ir::Value;

namespace {

bool is_view(const Node& n) { return ir::op_info(n.op).category == ir::OpCategory::View; }

// A constant, or a view of one: what a prologue may combine its operand with.
bool constant_like(const Value* v) {
  while (v->producer && is_view(*v->producer)) v = v->producer->operands[0];
  return v->producer && v->producer->op == ir::OpKind::Const;
}

class GemmGrouper {
public:
  GemmGrouper(const ir::Graph& g, const std::vector<RowGroup>& planned)
      : g_(g), nodes_(g.nodes()), users_(g.users()) {
    std::unordered_set<const Value*> needed(g.outputs().begin(), g.outputs().end());
    for (auto it = nodes_.rbegin(); it != nodes_.rend(); ++it) {
      if (!needed.count((*it)->result)) continue;
      live_.insert(*it);
      for (const Value* v : (*it)->operands) needed.insert(v);
    }
    outputs_.insert(g.outputs().begin(), g.outputs().end());
    for (const RowGroup& grp : planned)
      for (const Node* n : grp.nodes)
        if (!is_free_node(*n)) taken_.insert(n);
  }

  std::vector<RowGroup> run() {
    std::vector<RowGroup> groups;
    for (const Node* n : nodes_) {
      if (n->op != ir::OpKind::Matmul || !live_.count(n) || taken_.count(n)) continue;
      RowGroup grp{n->result->type.shape, form(n), "gemm", {}};
      for (const Node* m : grp.nodes)
        if (!is_free_node(*m)) taken_.insert(m);
      groups.push_back(std::move(grp));
    }
    return groups;
  }

private:
  // Whether the only readers of `n` are nodes of `chain` or the matmul itself.
  bool used_only_by(const Node* n, const std::set<const Node*>& chain, const Node* matmul) const {
    if (outputs_.count(n->result)) return false;
    for (const Node* u : users_[n->result->id])
      if (u != matmul && !chain.count(u) && live_.count(u)) return false;
    return true;
  }

  // The views (and, with `prologue`, the casts and scales by constants) from the
  // matmul's operand down towards the tensor it reads. Views may be shared (fuse
  // copies them); a prologue op must feed this operand alone.
  std::set<const Node*> operand_chain(const Node* matmul, int index, bool prologue) const {
    std::set<const Node*> chain;
    const Value* v = matmul->operands[static_cast<size_t>(index)];
    if (dequant_of(matmul)) return chain;  // the dequant is the whole operand (form adds it)
    int element_wise = 0;
    const int max_ops = max_fused_ops();
    while (v->producer && !taken_.count(v->producer)) {
      const Node* n = v->producer;
      if (is_view(*n)) {
        chain.insert(n);
        v = n->operands[0];
        continue;
      }
      // Each operand's prologue takes half of the kernel's budget of element-wise ops.
      if (!prologue || !ir::is_elementwise(n->op) || !is_float(n->result->type.dtype) ||
          !used_only_by(n, chain, matmul) || ++element_wise > max_ops / 2)
        break;
      const Value* main = nullptr;  // the one operand that is not a constant
      bool ok = true;
      for (const Value* u : n->operands) {
        if (constant_like(u)) continue;
        ok = ok && !main;
        main = u;
      }
      // A cast may widen fp8 (exact: every fp8 value is a value of each float type).
      const bool widens_fp8 = main && n->op == ir::OpKind::Cast && is_fp8(main->type.dtype);
      if (!ok || !main || !(is_float(main->type.dtype) || widens_fp8)) break;
      chain.insert(n);
      for (const Value* u : n->operands) {  // the constants, through their views
        if (u == main) continue;
        for (const Value* c = u; c->producer; c = c->producer->operands[0]) {
          chain.insert(c->producer);
          if (c->producer->operands.empty()) break;
        }
      }
      v = main;
    }
    return chain;
  }

  // The element-wise consumers of the product over the output's shape, in order, with
  // the constants and views they read.
  std::set<const Node*> epilogue(const Node* matmul) const {
    const Shape& shape = matmul->result->type.shape;
    std::set<const Node*> group{matmul};
    std::set<const Node*> computed{matmul};
    const size_t max_ops = static_cast<size_t>(max_fused_ops());
    for (const Node* n : nodes_) {
      if (computed.size() > max_ops) break;  // the rest goes to pointwise kernels
      if (computed.count(n) || !live_.count(n) || taken_.count(n) || !ir::is_elementwise(n->op) ||
          touches_storage_type(*n))
        continue;
      if (n->result->type.shape != shape) continue;
      bool reads_group = false;
      for (const Value* u : n->operands) reads_group = reads_group || (u->producer && computed.count(u->producer));
      if (!reads_group) continue;
      bool independent = true;  // checked only now: depends_on_group walks the graph upstream
      for (const Value* u : n->operands)
        if (!(u->producer && computed.count(u->producer))) independent = independent && !depends_on_group(u, computed);
      if (!independent) continue;
      computed.insert(n);
      group.insert(n);
      for (const Value* u : n->operands)
        for (const Value* w = u; w->producer && is_free_node(*w->producer) && !computed.count(w->producer);) {
          group.insert(w->producer);
          if (w->producer->operands.empty()) break;
          w = w->producer->operands[0];
        }
    }
    group.erase(matmul);
    return group;
  }

  bool viable(const Node* matmul, const std::set<const Node*>& group) const {
    std::vector<const Value*> roots = escaping_values(group, nodes_, users_, live_, outputs_);
    if (roots.empty()) return false;
    for (const Node* n : group)
      for (const Value* u : n->operands)
        if (u->producer && !group.count(u->producer) && depends_on_group(u, group)) return false;
    try {
      build_gemm("check", *matmul, group, roots, {});
      return true;
    } catch (const Error&) {
      return false;
    }
  }

  // The dequant that computes the matmul's B operand when it folds into the operand load.
  const Node* dequant_of(const Node* matmul) const {
    const Node* d = matmul->operands[1]->producer;
    return d && !taken_.count(d) && dequant_folds_into_matmul(g_, *d) ? d : nullptr;
  }

  std::set<const Node*> form(const Node* matmul) const {
    const std::set<const Node*> tail = epilogue(matmul);
    for (int attempt = 0; attempt < 4; ++attempt) {
      std::set<const Node*> group{matmul};
      // Every attempt keeps a folding dequant: no other kernel writes dequantised weights.
      if (const Node* d = dequant_of(matmul)) {
        group.insert(d);
        // An interleaved weight's transpose and reshape become the gemv's addresses.
        if (interleaved_weight_source(d->operands[0])) {
          const Node* reshape = d->operands[0]->producer;
          group.insert(reshape);
          group.insert(reshape->operands[0]->producer);
        }
      }
      if (attempt < 3) {  // 0: all; 1: no epilogue; 2: views only; 3: the matmul alone
        for (int i = 0; i < 2; ++i) {
          std::set<const Node*> chain = operand_chain(matmul, i, attempt < 2);
          group.insert(chain.begin(), chain.end());
        }
      }
      if (attempt == 0) group.insert(tail.begin(), tail.end());
      if (attempt == 3 || viable(matmul, group)) return group;
    }
    return {matmul};
  }

  const ir::Graph& g_;
  std::vector<Node*> nodes_;
  std::vector<std::vector<Node*>> users_;
  std::unordered_set<const Node*> live_;
  std::unordered_set<const Value*> outputs_;
  std::unordered_set<const Node*> taken_;
};

}  // namespace

std::vector<RowGroup> plan_gemm_groups(const ir::Graph& g, const std::vector<RowGroup>& planned) {
  return GemmGrouper(g, planned).run();
}

}  // namespace kiln::passes
