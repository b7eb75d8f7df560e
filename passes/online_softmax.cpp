// online-softmax: rewrites the two-phase softmax that `decompose` (or a user writing
// it by hand) builds,
//   m = max(x); d = x - m; e = exp(d); s = sum(e); y = e / s        -> y = exp(x - logsumexp(x))
//   m = max(x); d = x - m; e = exp(d); s = sum(e); y = d - log(s)   -> y = x - logsumexp(x)
// logsumexp keeps a running max and a rescaled running sum, so a row kernel reads the
// row once for it instead of once for the max and again for the sum. The rewrite fires
// only when the intermediates (m, d, e, s, log(s)) have no readers outside the pattern:
// one that is read elsewhere would have to be computed anyway. Along axes other than the
// last it keeps the max and the sum apart (along_last_axis says why) and adds only the
// rule that an infinite max is the answer itself, so that every softmax means the same.
#include <algorithm>
#include <initializer_list>
#include <limits>
#include <string>
#include <vector>

#include "passes/pass.h"
#include "passes/rewrite.h"

namespace kiln::passes {

namespace {

using ir::Graph;
using ir::Node;
using ir::OpKind;
using ir::Value;

using Users = std::vector<std::vector<Node*>>;

// Two reductions over the same axes with the same keepdim: their results line up.
bool same_reduction(const Node& a, const Node& b) {
  const int rank = a.operands[0]->type.rank();
  return b.operands[0]->type.rank() == rank && ir::reduce_axes(a.attrs, rank) == ir::reduce_axes(b.attrs, rank) &&
         a.attrs.get_bool("keepdim") == b.attrs.get_bool("keepdim");
}

// True when every reader of `v` is one of `allowed` and no graph output is `v`.
bool private_to(const Graph& g, const Users& users, const Value* v, std::initializer_list<const Node*> allowed) {
  if (std::find(g.outputs().begin(), g.outputs().end(), v) != g.outputs().end()) return false;
  for (const Node* u : users[static_cast<size_t>(v->id)])
    if (std::find(allowed.begin(), allowed.end(), u) == allowed.end()) return false;
  return true;
}

// The shared front of both patterns: d = x - max(x), e = exp(d), s = sum(e) over the
// max's axes. Null members when `s` is not such a sum.
struct ShiftedSum {
  const Node* max = nullptr;
  const Node* shift = nullptr;
  const Node* exp = nullptr;
  const Node* sum = nullptr;
  Value* x = nullptr;
};

ShiftedSum match_shifted_sum(const Value* s) {
  ShiftedSum p;
  const Node* sum = producer_of(s, OpKind::ReduceSum);
  const Node* exp = sum ? producer_of(sum->operands[0], OpKind::Exp) : nullptr;
  const Node* shift = exp ? producer_of(exp->operands[0], OpKind::Sub) : nullptr;
  const Node* max = shift ? producer_of(shift->operands[1], OpKind::ReduceMax) : nullptr;
  if (!max || max->operands[0] != shift->operands[0] || !same_reduction(*max, *sum)) return p;
  // The shift must not broadcast x to a larger shape (then x - m is not per element of x).
  if (shift->result->type != shift->operands[0]->type) return p;
  return ShiftedSum{max, shift, exp, sum, shift->operands[0]};
}

// fp16 and bf16 rows are reduced in fp32: a logsumexp rounded to 16 bits would cost
// every output up to 0.4% (its ulp near 8 is 2^-7), where the softmax it replaces
// loses less than 0.1%. The casts cost nothing in the kernel, whose registers hold
// fp32 anyway; they keep the graph's own numbers as good as the kernel's.
Value* widened(Graph& g, Value* x, const std::string& loc) {
  if (x->type.dtype != DType::f16 && x->type.dtype != DType::bf16) return x;
  return g.add(OpKind::Cast, {x}, {}, TensorType{DType::f32, x->type.shape}, loc);
}

Value* narrowed(Graph& g, Value* v, DType to, const std::string& loc) {
  if (v->type.dtype == to) return v;
  return g.add(OpKind::Cast, {v}, {}, TensorType{to, v->type.shape}, loc);
}

// logsumexp(x) over the sum's axes, appended to the graph. The axes are written
// normalised (sorted, from 0), so softmaxes that name them differently read the same.
// The sum's axes, normalised, with `keepdim` as given.
ir::Attrs sum_axes(const ShiftedSum& p, bool keepdim) {
  std::vector<int64_t> axes;
  for (int a : ir::reduce_axes(p.sum->attrs, p.x->type.rank())) axes.push_back(a);
  ir::Attrs attrs;
  attrs.set("axis", std::move(axes));
  attrs.set("keepdim", keepdim);
  return attrs;
}

Value* logsumexp(Graph& g, const ShiftedSum& p, Value* x, const std::string& loc) {
  return g.add(OpKind::ReduceLogSumExp, {x}, sum_axes(p, p.sum->attrs.get_bool("keepdim")), std::nullopt, loc);
}

// Whether the sum reduces the last axis alone: there one row kernel computes logsumexp
// and its readers together, and subtracts the max and the log of the sum apart. Over
// other axes a logsumexp is a value of its own, rounded to fp32 as max + log(sum), and x
// - lse would lose |max| 2^-24 of every exponent (at a max of 2^24 the whole answer).
bool along_last_axis(const ShiftedSum& p) {
  const int rank = p.x->type.rank();
  return ir::reduce_axes(p.sum->attrs, rank) == std::vector<int>{rank - 1};
}

// Over other axes: x - max(x) (exact near the max) less logsumexp(x - max(x)), that is
// log(sum(exp(x - max))) of values whose max is 0, so nothing large is rounded: three
// reads of x (the max, the sum, the output) where a rounded logsumexp took two. An
// infinite max is logsumexp's answer itself as everywhere (the log of the sum then
// counts for nothing: a +inf beside finite values leaves them -inf, not NaN).
Value* shifted_less_log_sum(Graph& g, const ShiftedSum& p, Value* x, const std::string& loc) {
  auto op = [&](OpKind k, std::vector<Value*> operands, const ir::Attrs& attrs = {}) {
    return g.add(k, std::move(operands), attrs, std::nullopt, loc);
  };
  const ir::Attrs over = sum_axes(p, true);
  Value* m = op(OpKind::ReduceMax, {x}, over);
  // x - m twice, each fused into its reader (the reduction, the output) rather than one
  // value written between them: a kernel reads x again instead.
  Value* log_sum = op(OpKind::ReduceLogSumExp, {op(OpKind::Sub, {x, m})}, over);
  Value* d = op(OpKind::Sub, {x, m});
  Value* infinite =
      op(OpKind::Eq, {op(OpKind::Abs, {m}), g.constant(std::numeric_limits<double>::infinity(), DType::f32)});
  Value* counted = op(OpKind::Select, {infinite, g.constant(0.0, DType::f32), log_sum});
  return op(OpKind::Sub, {d, counted});
}

// x - logsumexp(x) along the last axis, (x - max) - log(sum) along others.
Value* less_log_sum_exp(Graph& g, const ShiftedSum& p, Value* x, const std::string& loc) {
  if (!along_last_axis(p)) return shifted_less_log_sum(g, p, x, loc);
  return g.add(OpKind::Sub, {x, logsumexp(g, p, x, loc)}, {}, std::nullopt, loc);
}

// y = e / s: softmax.
Value* rewrite_softmax(Graph& g, const Users& users, const Node& y) {
  ShiftedSum p = match_shifted_sum(y.operands[1]);
  if (!p.sum || p.exp->result != y.operands[0]) return nullptr;
  if (!private_to(g, users, p.max->result, {p.shift}) || !private_to(g, users, p.shift->result, {p.exp}) ||
      !private_to(g, users, p.exp->result, {p.sum, &y}) || !private_to(g, users, p.sum->result, {&y}))
    return nullptr;
  Value* x = widened(g, p.x, y.loc);
  Value* e = g.add(OpKind::Exp, {less_log_sum_exp(g, p, x, y.loc)}, {}, std::nullopt, y.loc);
  return narrowed(g, e, y.result->type.dtype, y.loc);
}

// y = d - log(s): log_softmax.
Value* rewrite_log_softmax(Graph& g, const Users& users, const Node& y) {
  const Node* log = producer_of(y.operands[1], OpKind::Log);
  if (!log) return nullptr;
  ShiftedSum p = match_shifted_sum(log->operands[0]);
  if (!p.sum || p.shift->result != y.operands[0]) return nullptr;
  if (!private_to(g, users, p.max->result, {p.shift}) || !private_to(g, users, p.shift->result, {p.exp, &y}) ||
      !private_to(g, users, p.exp->result, {p.sum}) || !private_to(g, users, p.sum->result, {log}) ||
      !private_to(g, users, log->result, {&y}))
    return nullptr;
  Value* x = widened(g, p.x, y.loc);
  return narrowed(g, less_log_sum_exp(g, p, x, y.loc), y.result->type.dtype, y.loc);
}

class OnlineSoftmax : public Pass {
public:
  std::string_view name() const override { return "online-softmax"; }

  bool run(Graph& g) override {
    return rewrite_nodes(g, [&](Node& y) -> Value* {
      if (y.op != OpKind::Div && y.op != OpKind::Sub) return nullptr;
      const Users users = g.users();  // fresh: an earlier rewrite moved readers
      return y.op == OpKind::Div ? rewrite_softmax(g, users, y) : rewrite_log_softmax(g, users, y);
    });
  }
};

}  // namespace

std::unique_ptr<Pass> make_OnlineSoftmax() { return std::make_unique<OnlineSoftmax>(); }

}  // namespace kiln::passes
