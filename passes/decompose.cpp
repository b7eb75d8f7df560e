// decompose: expands the composite ops (softmax, log_softmax, layer_norm,
// rms_norm, attention) into primitive ops of the op table, so that later passes
// see only primitives; fusion finds the patterns again. Everything stays in the
// composite's dtype (a fused kernel computes in fp32 inside), except a low-precision
// softmax or norm over a leading axis, computed in f32 (computes_in_f32). A dequant that
// does not fold into a matmul's operand load (passes/dequant_fold.h) is expanded too.
#include <limits>

#include "ir/ops.h"
#include "passes/dequant_fold.h"
#include "passes/pass.h"
#include "passes/rewrite.h"

namespace kiln::passes {

namespace {

using ir::Attrs;
using ir::OpKind;
using ir::Value;

// Appends primitive nodes for one composite; they take its source location.
class Builder {
public:
  Builder(ir::Graph& g, const ir::Node& composite) : g_(g), loc_(composite.loc) {}

  Value* op(OpKind k, std::vector<Value*> operands, const Attrs& attrs = {}) {
    return g_.add(k, std::move(operands), attrs, std::nullopt, loc_);
  }
  Value* typed(OpKind k, std::vector<Value*> operands, const Attrs& attrs, TensorType type) {
    return g_.add(k, std::move(operands), attrs, std::move(type), loc_);
  }
  Value* constant(double value, DType dt) {
    Attrs a;
    a.set("value", value);
    return typed(OpKind::Const, {}, a, TensorType{dt, {}});
  }
  // A reduction over one axis that keeps it (size 1), so the result broadcasts back.
  Value* reduce(OpKind k, Value* x, int axis) {
    Attrs a;
    a.set("axis", std::vector<int64_t>{axis});
    a.set("keepdim", true);
    return op(k, {x}, a);
  }

private:
  ir::Graph& g_;
  std::string loc_;
};

int axis_of(const ir::Node& n) { return ir::single_axis(n.attrs, n.operands[0]->type.rank()); }

// x - max(x) and its exp, shared by softmax and log_softmax.
struct ShiftedExp {
  Value* shifted;
  Value* exp;
};

ShiftedExp shifted_exp(Builder& b, Value* x, int axis) {
  Value* shifted = b.op(OpKind::Sub, {x, b.reduce(OpKind::ReduceMax, x, axis)});
  return {shifted, b.op(OpKind::Exp, {shifted})};
}

Value* softmax(Builder& b, Value* x, int axis) {
  Value* e = shifted_exp(b, x, axis).exp;
  return b.op(OpKind::Div, {e, b.reduce(OpKind::ReduceSum, e, axis)});
}

Value* log_softmax(Builder& b, Value* x, int axis) {
  ShiftedExp s = shifted_exp(b, x, axis);
  return b.op(OpKind::Sub, {s.shifted, b.op(OpKind::Log, {b.reduce(OpKind::ReduceSum, s.exp, axis)})});
}

// A per-axis weight [N] of a rank-r tensor normalised along `axis`: reshaped to
// [N,1,...,1] when the axis is not the last, so numpy broadcasting lines it up.
Value* along_axis(Builder& b, Value* w, int axis, int rank) {
  if (axis == rank - 1) return w;
  Shape shape(rank - axis, 1);
  shape[0] = w->type.shape[0];
  return b.typed(OpKind::Reshape, {w}, {}, TensorType{w->type.dtype, shape});
}

// rsqrt(mean(t, axis) + eps)
Value* inverse_rms(Builder& b, Value* t, int axis, double eps) {
  Value* squares = b.op(OpKind::Mul, {t, t});
  Value* mean = b.reduce(OpKind::ReduceMean, squares, axis);
  return b.op(OpKind::Rsqrt, {b.op(OpKind::Add, {mean, b.constant(eps, t->type.dtype)})});
}

Value* layer_norm(Builder& b, const ir::Node& n, const std::vector<Value*>& in) {
  Value *x = in[0], *w = in[1], *bias = in[2];
  int axis = axis_of(n), rank = x->type.rank();
  Value* centered = b.op(OpKind::Sub, {x, b.reduce(OpKind::ReduceMean, x, axis)});
  Value* normed = b.op(OpKind::Mul, {centered, inverse_rms(b, centered, axis, n.attrs.get_float("eps"))});
  Value* scaled = b.op(OpKind::Mul, {normed, along_axis(b, w, axis, rank)});
  return b.op(OpKind::Add, {scaled, along_axis(b, bias, axis, rank)});
}

Value* rms_norm(Builder& b, const ir::Node& n, const std::vector<Value*>& in) {
  Value *x = in[0], *w = in[1];
  int axis = axis_of(n), rank = x->type.rank();
  Value* normed = b.op(OpKind::Mul, {x, inverse_rms(b, x, axis, n.attrs.get_float("eps"))});
  return b.op(OpKind::Mul, {normed, along_axis(b, w, axis, rank)});
}

// x as f32 (itself when it is f32 already).
Value* widened(Builder& b, Value* x) {
  if (x->type.dtype == DType::f32) return x;
  return b.typed(OpKind::Cast, {x}, {}, TensorType{DType::f32, x->type.shape});
}

// softmax(q k^T * scale [masked above the diagonal]) v. The scores and their softmax are
// f32, as attention defines them and a flash kernel holds them (products of f16 or bf16
// values are exact in f32; an f16 q k^T would overflow past 65504); the probabilities
// meet v rounded to its dtype, as tensor cores take them.
Value* attention(Builder& b, const ir::Node& n) {
  Value *q = n.operands[0], *k = n.operands[1], *v = n.operands[2];
  const DType dt = DType::f32;
  Attrs qk;
  qk.set("transpose_b", true);
  Value* product = b.op(OpKind::Matmul, {widened(b, q), widened(b, k)}, qk);
  Value* scores = b.op(OpKind::Mul, {product, b.constant(n.attrs.get_float("scale"), dt)});
  int rank = scores->type.rank();
  if (n.attrs.get_bool("causal")) {
    // Query i sees keys j <= i: mask where column > row, counted from the top left.
    TensorType grid{DType::i32, {scores->type.shape[rank - 2], scores->type.shape[rank - 1]}};
    Attrs rows, cols;
    rows.set("axis", int64_t{0});
    cols.set("axis", int64_t{1});
    Value* above = b.op(OpKind::Gt, {b.typed(OpKind::Iota, {}, cols, grid), b.typed(OpKind::Iota, {}, rows, grid)});
    Value* minus_inf = b.constant(-std::numeric_limits<double>::infinity(), dt);
    scores = b.op(OpKind::Select, {above, minus_inf, scores});
  }
  Value* p = softmax(b, scores, rank - 1);
  if (v->type.dtype != dt) p = b.typed(OpKind::Cast, {p}, {}, TensorType{v->type.dtype, p->type.shape});
  return b.op(OpKind::Matmul, {p, v});
}

// The composite over operands `in` (the node's own, or their f32 casts).
Value* expand_on(Builder& b, const ir::Node& n, const std::vector<Value*>& in) {
  switch (n.op) {
    case OpKind::Softmax: return softmax(b, in[0], axis_of(n));
    case OpKind::LogSoftmax: return log_softmax(b, in[0], axis_of(n));
    case OpKind::LayerNorm: return layer_norm(b, n, in);
    case OpKind::RmsNorm: return rms_norm(b, n, in);
    case OpKind::Attention: return attention(b, n);
    default: return nullptr;
  }
}

// A softmax or norm of f16 / bf16 over an axis other than the last runs on column
// kernels, which hand their maxima, sums and means to the next kernel through memory:
// rounded to f16 there, a mean loses the digits that x - mean keeps. So it is computed
// in f32 and only its result rounds to the dtype, as the reference computes the
// composite in one piece (the casts of the operands are recomputed by each kernel that
// reads them, see is_free_node). Over the last axis one row kernel keeps every
// intermediate in fp32 registers, and the composite stays in its dtype.
bool computes_in_f32(const ir::Node& n) {
  if (n.op == OpKind::Attention || ir::op_info(n.op).category != ir::OpCategory::Composite) return false;
  const TensorType& x = n.operands[0]->type;
  return (x.dtype == DType::f16 || x.dtype == DType::bf16) && axis_of(n) != x.rank() - 1;
}

Value* expand(Builder& b, const ir::Node& n) {
  if (!computes_in_f32(n)) return expand_on(b, n, n.operands);
  std::vector<Value*> wide;
  for (Value* v : n.operands) wide.push_back(b.typed(OpKind::Cast, {v}, {}, TensorType{DType::f32, v->type.shape}));
  Value* r = expand_on(b, n, wide);
  return r ? b.typed(OpKind::Cast, {r}, {}, n.result->type) : nullptr;
}

// (w - z) * s over [..., K / group, group], where each scale is one value of a row of
// `group` weights (numpy broadcasting lines it up), in f32 (exact for small integer
// weights and zero points) and rounded once to the result dtype; reshaped back to w's
// shape at the end.
Value* expand_dequant(Builder& b, const ir::Node& n) {
  const TensorType& w = n.operands[0]->type;
  const int64_t group = n.attrs.get_int("group");
  Shape split(w.shape.begin(), w.shape.end() - 1), per_group = split;
  split.push_back(w.shape.back() / group);
  split.push_back(group);
  per_group.push_back(w.shape.back() / group);
  per_group.push_back(1);
  auto as_f32 = [&](Value* v, const Shape& shape) {
    Value* r = b.typed(OpKind::Reshape, {v}, {}, TensorType{v->type.dtype, shape});
    return b.typed(OpKind::Cast, {r}, {}, TensorType{DType::f32, shape});
  };
  Value* x = as_f32(n.operands[0], split);
  if (n.operands.size() > 2) x = b.op(OpKind::Sub, {x, as_f32(n.operands[2], per_group)});
  x = b.op(OpKind::Mul, {x, as_f32(n.operands[1], per_group)});
  x = b.typed(OpKind::Cast, {x}, {}, TensorType{n.result->type.dtype, split});
  return b.typed(OpKind::Reshape, {x}, {}, n.result->type);
}

class Decompose : public Pass {
public:
  std::string_view name() const override { return "decompose"; }

  bool run(ir::Graph& g) override {
    return rewrite_nodes(g, [&](ir::Node& n) -> Value* {
      if (n.op == OpKind::Dequant) {
        if (dequant_folds_into_matmul(g, n)) return nullptr;
        Builder b(g, n);
        return expand_dequant(b, n);
      }
      if (ir::op_info(n.op).category != ir::OpCategory::Composite) return nullptr;
      Builder b(g, n);
      return expand(b, n);  // null: a composite this pass does not know yet
    });
  }
};

}  // namespace

std::unique_ptr<Pass> make_Decompose() { return std::make_unique<Decompose>(); }

}  // namespace kiln::passes
