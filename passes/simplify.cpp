// simplify: local rewrites from a small rule table (pattern -> replacement), in
// the manner of MLIR's canonicalisation patterns and tinygrad's symbolic rules:
// constant folding of scalar element-wise ops, algebraic identities, view and cast
// chains, and reductions of one element. Rules run over the graph until none fires.
//
// A rule only fires when its replacement has exactly the replaced node's type:
// `x + zeros` where the zeros broadcast x to a larger shape must stay.
#include <fmt/format.h>

#include <cmath>
#include <optional>

#include "ir/error.h"
#include "ir/interpreter.h"
#include "passes/pass.h"
#include "passes/rewrite.h"

namespace kiln::passes {

namespace {

using ir::Graph;
using ir::Node;
using ir::OpKind;
using ir::Value;

// ---- matchers ----

// The value of a constant as the graph computes it (rounded to its dtype).
std::optional<double> const_value(const Value* v) {
  const Node* c = producer_of(v, OpKind::Const);
  if (!c) return std::nullopt;
  return round_to(v->type.dtype, c->attrs.get_float("value"));
}

bool is_const(const Value* v, double expected) {
  auto c = const_value(v);
  return c && *c == expected;
}

const std::vector<int64_t>& perm_of(const Node& n) { return n.attrs.get_ints("perm"); }

bool is_identity(const std::vector<int64_t>& perm) {
  for (size_t i = 0; i < perm.size(); ++i)
    if (perm[i] != static_cast<int64_t>(i)) return false;
  return true;
}

// A cast that keeps every value of its operand: widening floats, and booleans (0 or 1).
bool is_exact_cast(const Node& cast) {
  DType from = cast.operands[0]->type.dtype, to = cast.result->type.dtype;
  return from == to || from == DType::i1 || ((from == DType::f16 || from == DType::bf16) && to == DType::f32);
}

// Numbers are what the printer gives unnamed values (and what parsing them back
// leaves as names): a user's name is anything else.
bool has_user_name(const Value* v) { return v->name.find_first_not_of("0123456789") != std::string::npos; }

// ---- rewrites: each returns the replacement of `n`, or null when it does not apply ----

// An element-wise op on constants becomes a constant; the reference interpreter
// computes it (on one element: a constant of any shape holds one value), so folding
// means exactly what running would. NaN results fold too: left as, say, `div 0, 0` in
// the kernel, NVRTC 13 folds a compare of that quotient as if it were a number (0 / 0
// != 0 / 0 gave false), while a NaN constant keeps its meaning.
Value* fold_constants(Graph& g, const Node& n) {
  if (!ir::is_elementwise(n.op)) return nullptr;
  Graph scratch("fold");
  std::vector<Value*> args;
  for (const Value* v : n.operands) {
    const Node* c = producer_of(v, OpKind::Const);
    if (!c) return nullptr;
    args.push_back(scratch.add(OpKind::Const, {}, c->attrs, TensorType{v->type.dtype, {}}));
  }
  std::optional<TensorType> annotated;
  if (ir::op_info(n.op).type_from_annotation) annotated = TensorType{n.result->type.dtype, {}};
  scratch.add_output(scratch.add(n.op, args, n.attrs, annotated));
  double value = round_to(n.result->type.dtype, ir::evaluate(scratch, {}).at(0).values.at(0));
  ir::Attrs a;
  a.set("value", value);
  return g.add(OpKind::Const, {}, a, n.result->type, n.loc);
}

// A broadcast, reshape or transpose of a constant is the constant in the new shape,
// so that a fold above can see through it.
Value* view_of_constant(Graph& g, const Node& n) {
  const Node* c = producer_of(n.operands[0], OpKind::Const);
  return c ? g.add(OpKind::Const, {}, c->attrs, n.result->type, n.loc) : nullptr;
}

Value* operand_if_other_is(const Node& n, double c, bool either_side) {
  if (is_const(n.operands[1], c)) return n.operands[0];
  if (either_side && is_const(n.operands[0], c)) return n.operands[1];
  return nullptr;
}

// x * 1, 1 * x -> x. (x * 0 is not 0: inf * 0 and NaN * 0 are NaN, so it stays.)
Value* mul_one(Graph&, const Node& n) { return operand_if_other_is(n, 1.0, true); }
// x + 0, 0 + x -> x (only the sign of a zero x can differ: -0 + 0 is +0, equal to -0).
Value* add_zero(Graph&, const Node& n) { return operand_if_other_is(n, 0.0, true); }
Value* sub_zero(Graph&, const Node& n) { return operand_if_other_is(n, 0.0, false); }
Value* div_one(Graph&, const Node& n) { return operand_if_other_is(n, 1.0, false); }

Value* neg_neg(Graph&, const Node& n) {
  const Node* inner = producer_of(n.operands[0], OpKind::Neg);
  return inner ? inner->operands[0] : nullptr;
}

// Casts, reshapes and broadcasts to the operand's own type do nothing.
Value* same_type(Graph&, const Node& n) {
  return n.operands[0]->type == n.result->type ? n.operands[0] : nullptr;
}

// x itself when it already has the type, else a new `k` of x to the type.
Value* retyped(Graph& g, const Node& n, OpKind k, Value* x) {
  if (x->type == n.result->type) return x;
  return g.add(k, {x}, {}, n.result->type, n.loc);
}

// cast(cast(x)) -> cast(x) when the inner cast loses nothing; a narrowing one must stay.
Value* cast_cast(Graph& g, const Node& n) {
  const Node* inner = producer_of(n.operands[0], OpKind::Cast);
  if (!inner || !is_exact_cast(*inner)) return nullptr;
  return retyped(g, n, OpKind::Cast, inner->operands[0]);
}

// Reshapes keep the row-major order, so only the last one matters.
Value* reshape_reshape(Graph& g, const Node& n) {
  const Node* inner = producer_of(n.operands[0], OpKind::Reshape);
  return inner ? retyped(g, n, OpKind::Reshape, inner->operands[0]) : nullptr;
}

Value* transpose_identity(Graph&, const Node& n) { return is_identity(perm_of(n)) ? n.operands[0] : nullptr; }

// transpose(transpose(x, p1), p2) = transpose(x, p) with p[i] = p1[p2[i]].
Value* transpose_transpose(Graph& g, const Node& n) {
  const Node* inner = producer_of(n.operands[0], OpKind::Transpose);
  if (!inner) return nullptr;
  const auto &p1 = perm_of(*inner), &p2 = perm_of(n);
  std::vector<int64_t> perm(p2.size());
  for (size_t i = 0; i < p2.size(); ++i) perm[i] = p1[static_cast<size_t>(p2[i])];
  Value* x = inner->operands[0];
  if (is_identity(perm)) return x;
  ir::Attrs a;
  a.set("perm", perm);
  return g.add(OpKind::Transpose, {x}, a, std::nullopt, n.loc);
}

// A reduction over axes of size 1 only reduces one element: sum, max, min, mean and
// logsumexp of it are the element itself (logsumexp: x + log(exp(x - x)), and an
// infinite x is its own answer), so it needs no reduce kernel, only a reshape when the
// axes are dropped. var stays: of +-inf or NaN it is NaN, not 0.
Value* reduce_size_one(Graph& g, const Node& n) {
  if (ir::op_info(n.op).category != ir::OpCategory::Reduce || n.op == OpKind::ReduceVar) return nullptr;
  const Value* x = n.operands[0];
  for (int a : ir::reduce_axes(n.attrs, x->type.rank()))
    if (x->type.shape[static_cast<size_t>(a)] != 1) return nullptr;
  return retyped(g, n, OpKind::Reshape, n.operands[0]);
}

struct Rule {
  std::string_view name;
  std::optional<OpKind> root;  // the op the pattern starts at; nullopt: any element-wise op
  Value* (*rewrite)(Graph&, const Node&);
};

const Rule kRules[] = {
    {"fold constants", std::nullopt, fold_constants},
    {"view of a constant -> constant", OpKind::Broadcast, view_of_constant},
    {"view of a constant -> constant", OpKind::Reshape, view_of_constant},
    {"view of a constant -> constant", OpKind::Transpose, view_of_constant},
    {"x * 1 -> x", OpKind::Mul, mul_one},
    {"x + 0 -> x", OpKind::Add, add_zero},
    {"x - 0 -> x", OpKind::Sub, sub_zero},
    {"x / 1 -> x", OpKind::Div, div_one},
    {"neg(neg(x)) -> x", OpKind::Neg, neg_neg},
    {"cast to its own type -> x", OpKind::Cast, same_type},
    {"cast(exact cast(x)) -> cast(x)", OpKind::Cast, cast_cast},
    {"reshape to its own shape -> x", OpKind::Reshape, same_type},
    {"reshape(reshape(x)) -> reshape(x)", OpKind::Reshape, reshape_reshape},
    {"broadcast to its own shape -> x", OpKind::Broadcast, same_type},
    {"transpose by the identity -> x", OpKind::Transpose, transpose_identity},
    {"transpose(transpose(x)) -> transpose(x)", OpKind::Transpose, transpose_transpose},
    {"sum / max / min / mean / logsumexp over size-1 axes -> x", OpKind::ReduceSum, reduce_size_one},
    {"sum / max / min / mean / logsumexp over size-1 axes -> x", OpKind::ReduceMax, reduce_size_one},
    {"sum / max / min / mean / logsumexp over size-1 axes -> x", OpKind::ReduceMin, reduce_size_one},
    {"sum / max / min / mean / logsumexp over size-1 axes -> x", OpKind::ReduceMean, reduce_size_one},
    {"sum / max / min / mean / logsumexp over size-1 axes -> x", OpKind::ReduceLogSumExp, reduce_size_one},
};

bool applies(const Rule& rule, OpKind op) { return rule.root ? *rule.root == op : ir::is_elementwise(op); }

// Every rule makes the graph smaller or moves a node closer to the inputs, so a
// fixed point comes quickly; this bound only turns a broken rule into an error.
constexpr int kMaxSweeps = 1000;

class Simplify : public Pass {
public:
  std::string_view name() const override { return "simplify"; }

  bool run(Graph& g) override {
    bool changed = false;
    for (int sweep = 0; sweep_fires(g); ++sweep) {
      changed = true;
      g.remove_dead_nodes();  // the replaced nodes, so that no rule sees them again
      if (sweep == kMaxSweeps) throw Error(fmt::format("simplify: no fixed point after {} sweeps", kMaxSweeps));
    }
    return changed;
  }

private:
  // One walk over the nodes, replacing each node that a rule rewrites; true when any did.
  static bool sweep_fires(Graph& g) {
    bool fired = false;
    for (Node* n : g.nodes()) {
      for (const Rule& rule : kRules) {
        if (!applies(rule, n->op)) continue;
        size_t mark = g.num_nodes();
        Value* replacement = rule.rewrite(g, *n);
        if (!replacement) continue;
        if (replacement->type != n->result->type) {
          if (g.num_nodes() != mark)
            throw Error(fmt::format("simplify: rule '{}' built a {} to replace a {}", rule.name,
                                    replacement->type.str(), n->result->type.str()));
          continue;  // e.g. x + 0 where the zero broadcasts x to a larger shape
        }
        g.move_tail_before(mark, n);
        g.replace_all_uses(n->result, replacement);
        // Keep the user's name on the value that now stands for it (never rename an input).
        if (replacement->producer && !has_user_name(replacement) && has_user_name(n->result))
          replacement->name = n->result->name;
        n->result->name.clear();
        fired = true;
        break;
      }
    }
    return fired;
  }
};

}  // namespace

std::unique_ptr<Pass> make_Simplify() { return std::make_unique<Simplify>(); }

}  // namespace kiln::passes
