// The attention pattern (see attention_pattern.h).
#include "passes/attention_pattern.h"

#include <vector>

#include "passes/fuse_reduce.h"
#include "passes/lower.h"

namespace kiln::passes {

using ir::Node;
using ir::OpKind;
using ir::Value;

namespace {

const Node* producer(const Value* v, OpKind op) { return v->producer && v->producer->op == op ? v->producer : nullptr; }

bool is_view(const Node& n) { return ir::op_info(n.op).category == ir::OpCategory::View; }
bool is_source(const Node& n) { return ir::op_info(n.op).category == ir::OpCategory::Source; }

// A float-to-float cast, which the kernel's fp32 registers make free.
const Value* through_casts(const Value* v, std::vector<const Node*>& casts) {
  while (const Node* c = producer(v, OpKind::Cast)) {
    if (!is_float(c->result->type.dtype) || !is_float(c->operands[0]->type.dtype)) break;
    casts.push_back(c);
    v = c->operands[0];
  }
  return v;
}

// A reduction of `x` along its last axis alone, keeping it as size 1.
bool reduces_keys(const Node* r, OpKind op, const Value* x) {
  if (!r || r->op != op || r->operands[0] != x) return false;
  if (row_reduction_space(*r) != x->type.shape) return false;
  Shape kept = x->type.shape;
  kept.back() = 1;
  return r->result->type.shape == kept;
}

// p = softmax(x) along the last axis: its nodes, and x (null when p is not one).
const Value* match_softmax(const Value* p, std::set<const Node*>& nodes) {
  std::vector<const Node*> casts;
  const Value* y = through_casts(p, casts);
  nodes.insert(casts.begin(), casts.end());
  // online-softmax: exp(x - logsumexp(x)), x widened to f32 first for f16 / bf16.
  if (const Node* e = producer(y, OpKind::Exp)) {
    const Node* sub = producer(e->operands[0], OpKind::Sub);
    if (!sub) return nullptr;
    const Value* xw = sub->operands[0];
    const Node* lse = sub->operands[1]->producer;
    if (!reduces_keys(lse, OpKind::ReduceLogSumExp, xw) || sub->result->type != xw->type) return nullptr;
    nodes.insert({e, sub, lse});
    std::vector<const Node*> widen;
    const Value* x = through_casts(xw, widen);
    nodes.insert(widen.begin(), widen.end());
    return x;
  }
  // exp(x - max(x)) / sum(exp(x - max(x)))
  const Node* div = producer(y, OpKind::Div);
  if (!div) return nullptr;
  const Node* e = producer(div->operands[0], OpKind::Exp);
  const Node* sum = div->operands[1]->producer;
  if (!e || !reduces_keys(sum, OpKind::ReduceSum, e->result)) return nullptr;
  const Node* sub = producer(e->operands[0], OpKind::Sub);
  if (!sub) return nullptr;
  const Value* x = sub->operands[0];
  const Node* max = sub->operands[1]->producer;
  if (!reduces_keys(max, OpKind::ReduceMax, x) || sub->result->type != x->type) return nullptr;
  nodes.insert({div, e, sum, sub, max});
  return x;
}

// Whether `v` needs no memory: constants, iota, views and element-wise ops of those.
bool memory_free(const Value* v, std::set<const Node*>& nodes) {
  std::vector<const Value*> stack{v};
  std::set<const Node*> seen;
  while (!stack.empty()) {
    const Value* u = stack.back();
    stack.pop_back();
    const Node* n = u->producer;
    if (!n) return false;  // a graph input
    if (!seen.insert(n).second) continue;
    if (!is_source(*n) && !is_view(*n) && !ir::is_elementwise(n->op)) return false;
    if (touches_storage_type(*n)) return false;
    for (const Value* w : n->operands) stack.push_back(w);
  }
  nodes.insert(seen.begin(), seen.end());
  return true;
}

// Whether `v` is computed from a matmul of shape `shape` through element-wise ops of
// that shape alone: the score chain, as opposed to a bias that another kernel writes.
bool reaches_matmul(const Value* v, const Shape& shape) {
  std::vector<const Value*> stack{v};
  std::set<const Node*> seen;
  while (!stack.empty()) {
    const Node* n = stack.back()->producer;
    stack.pop_back();
    if (!n || n->result->type.shape != shape || !seen.insert(n).second) continue;
    if (n->op == OpKind::Matmul) return true;
    if (!ir::is_elementwise(n->op)) continue;
    for (const Value* u : n->operands) stack.push_back(u);
  }
  return false;
}

// A q or k widened from f16 / bf16 to f32 before the first matmul: the kernel reads the
// narrow value and multiplies it in fp32 all the same. The cast joins `nodes`.
const Value* before_widening(const Value* v, std::set<const Node*>& nodes) {
  const Node* c = producer(v, OpKind::Cast);
  if (!c || v->type.dtype != DType::f32) return v;
  const DType from = c->operands[0]->type.dtype;
  if (from != DType::f16 && from != DType::bf16) return v;
  nodes.insert(c);
  return c->operands[0];
}

// The views from a matmul operand down to the tensor it reads.
void operand_views(const Value* v, std::set<const Node*>& nodes) {
  while (v->producer && is_view(*v->producer)) {
    nodes.insert(v->producer);
    v = v->producer->operands[0];
  }
}

}  // namespace

std::optional<AttentionPattern> match_attention(const Node& pv) {
  if (pv.op != OpKind::Matmul || pv.attrs.get_bool("transpose_a")) return std::nullopt;
  AttentionPattern p;
  p.pv = &pv;
  p.nodes.insert(&pv);
  const Value* x = match_softmax(pv.operands[0], p.nodes);
  if (!x) return std::nullopt;
  p.scores = x;
  // The score ops: element-wise, from x back to the first matmul along the one operand
  // that depends on it; their other operands need no memory or are loaded (a bias).
  const Value* s = x;
  while (s->producer && s->producer->op != OpKind::Matmul) {
    const Node* n = s->producer;
    if (!ir::is_elementwise(n->op) || n->result->type.shape != x->type.shape) return std::nullopt;
    p.nodes.insert(n);
    const Value* chain = nullptr;  // the one operand computed by a matmul or an element-wise op
    for (const Value* u : n->operands) {
      std::set<const Node*> side;
      if (memory_free(u, side)) {
        p.nodes.insert(side.begin(), side.end());
        for (const Node* m : side)
          if (ir::is_elementwise(m->op)) p.mask_nodes.insert(m);
        continue;
      }
      if (!reaches_matmul(u, x->type.shape)) {  // a bias: loaded, through its views
        operand_views(u, p.nodes);
        continue;
      }
      if (chain) return std::nullopt;  // both operands come from products
      chain = u;
    }
    if (!chain) return std::nullopt;
    s = chain;
  }
  const Node* qk = s->producer;
  if (!qk || qk->op != OpKind::Matmul || qk->attrs.get_bool("transpose_a") || s->type.shape != x->type.shape)
    return std::nullopt;
  p.qk = qk;
  p.nodes.insert(qk);
  p.q = before_widening(qk->operands[0], p.nodes);
  p.k = before_widening(qk->operands[1], p.nodes);
  operand_views(p.q, p.nodes);
  operand_views(p.k, p.nodes);
  operand_views(pv.operands[1], p.nodes);
  return p;
}

}  // namespace kiln::passes
