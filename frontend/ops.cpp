// The DSL's functions and operators: each checks its operands' graph, turns
// scalars into constants and appends one op-table node (see frontend/ops.h).
#include "frontend/ops.h"

#include <fmt/format.h>

#include <cmath>

#include "ir/error.h"

namespace kiln {

namespace {

using ir::OpKind;

// The graph that owns every tensor operand; throws at the call site when a handle is
// empty or when the operands come from two different graphs.
std::shared_ptr<ir::Graph> common_graph(OpKind op, const std::vector<const Tensor*>& tensors, const Loc& loc) {
  std::shared_ptr<ir::Graph> graph;
  for (const Tensor* t : tensors) {
    if (!t->valid())
      throw Error(fmt::format("{}: {}: an operand is an empty tensor handle", detail::where(loc), ir::op_name(op)));
    if (!graph) graph = t->graph();
    if (t->graph() != graph)
      throw Error(fmt::format("{}: {}: operands belong to different graphs ('{}' and '{}')", detail::where(loc),
                              ir::op_name(op), graph->name(), t->graph()->name()));
  }
  return graph;
}

std::vector<ir::Value*> values_of(const std::vector<const Tensor*>& tensors) {
  std::vector<ir::Value*> out;
  for (const Tensor* t : tensors) out.push_back(t->value());
  return out;
}

Tensor node(OpKind op, const std::vector<const Tensor*>& operands, const Loc& loc, const ir::Attrs& attrs = {},
            std::optional<TensorType> annotated = std::nullopt) {
  auto graph = common_graph(op, operands, loc);
  return detail::append(graph, op, values_of(operands), attrs, std::move(annotated), loc);
}

ir::Attrs attrs_of(std::initializer_list<std::pair<const char*, ir::AttrValue>> items) {
  ir::Attrs a;
  for (const auto& [name, value] : items) a.set(name, value);
  return a;
}

// An element-wise op over tensors and scalars: the scalars become `const` nodes of
// the dtype of the first tensor among operands[typed_from..] (select's values, not
// its i1 condition). The types are checked first, so a failing call adds nothing.
Tensor elementwise(OpKind op, const std::vector<const Operand*>& operands, const Loc& loc, size_t typed_from = 0) {
  std::vector<const Tensor*> tensors;
  const Tensor* typed = nullptr;
  for (size_t i = 0; i < operands.size(); ++i) {
    const Tensor* t = operands[i]->tensor();
    if (!t) continue;
    tensors.push_back(t);
    if (i >= typed_from && !typed) typed = t;
  }
  if (!typed) {
    throw Error(fmt::format("{}: {}: {} must be a tensor", detail::where(loc), ir::op_name(op),
                            typed_from == 0 ? "at least one operand" : "one of the two values"));
  }
  auto graph = common_graph(op, tensors, loc);
  DType scalar_dtype = typed->dtype();

  std::vector<TensorType> types;
  for (const Operand* o : operands) types.push_back(o->tensor() ? o->tensor()->type() : TensorType{scalar_dtype, {}});
  try {
    ir::infer_type(op, types, ir::complete_attrs(op, {}), std::nullopt);
  } catch (const Error& e) {
    throw Error(detail::where(loc) + ": " + e.what());
  }

  std::vector<ir::Value*> values;
  for (const Operand* o : operands) {
    if (o->tensor()) {
      values.push_back(o->tensor()->value());
    } else {
      ir::Attrs value = attrs_of({{"value", o->scalar()}});
      values.push_back(detail::append(graph, OpKind::Const, {}, value, TensorType{scalar_dtype, {}}, loc).value());
    }
  }
  return detail::append(graph, op, std::move(values), {}, std::nullopt, loc);
}

Tensor binary(OpKind op, const Operand& a, const Operand& b, const Loc& loc) { return elementwise(op, {&a, &b}, loc); }

Tensor reduce(OpKind op, const Tensor& x, const Axes& axes, bool keepdim, const Loc& loc) {
  return node(op, {&x}, loc, attrs_of({{"axis", axes}, {"keepdim", keepdim}}));
}

}  // namespace

// ---- element-wise unary ----
Tensor neg(const Tensor& x, Loc loc) { return node(OpKind::Neg, {&x}, loc); }
Tensor abs(const Tensor& x, Loc loc) { return node(OpKind::Abs, {&x}, loc); }
Tensor exp(const Tensor& x, Loc loc) { return node(OpKind::Exp, {&x}, loc); }
Tensor exp2(const Tensor& x, Loc loc) { return node(OpKind::Exp2, {&x}, loc); }
Tensor log(const Tensor& x, Loc loc) { return node(OpKind::Log, {&x}, loc); }
Tensor sqrt(const Tensor& x, Loc loc) { return node(OpKind::Sqrt, {&x}, loc); }
Tensor rsqrt(const Tensor& x, Loc loc) { return node(OpKind::Rsqrt, {&x}, loc); }
Tensor tanh(const Tensor& x, Loc loc) { return node(OpKind::Tanh, {&x}, loc); }
Tensor sigmoid(const Tensor& x, Loc loc) { return node(OpKind::Sigmoid, {&x}, loc); }
Tensor relu(const Tensor& x, Loc loc) { return node(OpKind::Relu, {&x}, loc); }
Tensor gelu(const Tensor& x, const std::string& approximate, Loc loc) {
  return node(OpKind::Gelu, {&x}, loc, attrs_of({{"approximate", approximate}}));
}
Tensor silu(const Tensor& x, Loc loc) { return node(OpKind::Silu, {&x}, loc); }
Tensor cast(const Tensor& x, DType to, Loc loc) {
  common_graph(OpKind::Cast, {&x}, loc);  // x.shape() below needs a valid handle
  return node(OpKind::Cast, {&x}, loc, {}, TensorType{to, x.shape()});
}

// ---- element-wise binary ----
Tensor add(const Operand& a, const Operand& b, Loc loc) { return binary(OpKind::Add, a, b, loc); }
Tensor sub(const Operand& a, const Operand& b, Loc loc) { return binary(OpKind::Sub, a, b, loc); }
Tensor mul(const Operand& a, const Operand& b, Loc loc) { return binary(OpKind::Mul, a, b, loc); }
Tensor div(const Operand& a, const Operand& b, Loc loc) { return binary(OpKind::Div, a, b, loc); }
Tensor maximum(const Operand& a, const Operand& b, Loc loc) { return binary(OpKind::Max, a, b, loc); }
Tensor minimum(const Operand& a, const Operand& b, Loc loc) { return binary(OpKind::Min, a, b, loc); }
Tensor pow(const Operand& a, const Operand& b, Loc loc) { return binary(OpKind::Pow, a, b, loc); }
Tensor max(const Tensor& a, const Tensor& b, Loc loc) { return binary(OpKind::Max, a, b, loc); }
Tensor min(const Tensor& a, const Tensor& b, Loc loc) { return binary(OpKind::Min, a, b, loc); }

// ---- comparisons and select ----
Tensor lt(const Operand& a, const Operand& b, Loc loc) { return binary(OpKind::Lt, a, b, loc); }
Tensor le(const Operand& a, const Operand& b, Loc loc) { return binary(OpKind::Le, a, b, loc); }
Tensor gt(const Operand& a, const Operand& b, Loc loc) { return binary(OpKind::Gt, a, b, loc); }
Tensor ge(const Operand& a, const Operand& b, Loc loc) { return binary(OpKind::Ge, a, b, loc); }
Tensor eq(const Operand& a, const Operand& b, Loc loc) { return binary(OpKind::Eq, a, b, loc); }
Tensor ne(const Operand& a, const Operand& b, Loc loc) { return binary(OpKind::Ne, a, b, loc); }

Tensor select(const Tensor& cond, const Operand& a, const Operand& b, Loc loc) {
  const Operand condition(cond);
  return elementwise(OpKind::Select, {&condition, &a, &b}, loc, 1);
}

// ---- sources ----
Tensor constant(Graph& g, double value, DType dtype, Shape shape, Loc loc) {
  return detail::append(detail::graph_of(g), OpKind::Const, {}, attrs_of({{"value", value}}),
                        TensorType{dtype, std::move(shape)}, loc);
}

Tensor iota(Graph& g, DType dtype, Shape shape, int64_t axis, Loc loc) {
  return detail::append(detail::graph_of(g), OpKind::Iota, {}, attrs_of({{"axis", axis}}),
                        TensorType{dtype, std::move(shape)}, loc);
}

// ---- reductions ----
Tensor sum(const Tensor& x, const Axes& axes, bool keepdim, Loc loc) {
  return reduce(OpKind::ReduceSum, x, axes, keepdim, loc);
}
Tensor max(const Tensor& x, const Axes& axes, bool keepdim, Loc loc) {
  return reduce(OpKind::ReduceMax, x, axes, keepdim, loc);
}
Tensor min(const Tensor& x, const Axes& axes, bool keepdim, Loc loc) {
  return reduce(OpKind::ReduceMin, x, axes, keepdim, loc);
}
Tensor mean(const Tensor& x, const Axes& axes, bool keepdim, Loc loc) {
  return reduce(OpKind::ReduceMean, x, axes, keepdim, loc);
}
Tensor logsumexp(const Tensor& x, const Axes& axes, bool keepdim, Loc loc) {
  return reduce(OpKind::ReduceLogSumExp, x, axes, keepdim, loc);
}
Tensor var(const Tensor& x, const Axes& axes, bool keepdim, Loc loc) {
  return reduce(OpKind::ReduceVar, x, axes, keepdim, loc);
}

// ---- views ----
Tensor broadcast_to(const Tensor& x, Shape shape, Loc loc) {
  common_graph(OpKind::Broadcast, {&x}, loc);
  return node(OpKind::Broadcast, {&x}, loc, {}, TensorType{x.dtype(), std::move(shape)});
}
Tensor reshape(const Tensor& x, Shape shape, Loc loc) {
  common_graph(OpKind::Reshape, {&x}, loc);
  return node(OpKind::Reshape, {&x}, loc, {}, TensorType{x.dtype(), std::move(shape)});
}
Tensor transpose(const Tensor& x, const Axes& perm, Loc loc) {
  return node(OpKind::Transpose, {&x}, loc, attrs_of({{"perm", perm}}));
}

// ---- quantised weights ----
Tensor dequant(const Tensor& w, const Tensor& scales, int64_t group, Loc loc) {
  return node(OpKind::Dequant, {&w, &scales}, loc, attrs_of({{"group", group}}));
}
Tensor dequant(const Tensor& w, const Tensor& scales, const Tensor& zeros, int64_t group, Loc loc) {
  return node(OpKind::Dequant, {&w, &scales, &zeros}, loc, attrs_of({{"group", group}}));
}

// ---- matmul ----
Tensor matmul(const Tensor& a, const Tensor& b, bool transpose_a, bool transpose_b, Loc loc) {
  return node(OpKind::Matmul, {&a, &b}, loc, attrs_of({{"transpose_a", transpose_a}, {"transpose_b", transpose_b}}));
}

// ---- composites ----
Tensor softmax(const Tensor& x, int64_t axis, Loc loc) {
  return node(OpKind::Softmax, {&x}, loc, attrs_of({{"axis", axis}}));
}
Tensor log_softmax(const Tensor& x, int64_t axis, Loc loc) {
  return node(OpKind::LogSoftmax, {&x}, loc, attrs_of({{"axis", axis}}));
}
Tensor layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps, int64_t axis, Loc loc) {
  return node(OpKind::LayerNorm, {&x, &weight, &bias}, loc, attrs_of({{"axis", axis}, {"eps", eps}}));
}
Tensor rms_norm(const Tensor& x, const Tensor& weight, double eps, int64_t axis, Loc loc) {
  return node(OpKind::RmsNorm, {&x, &weight}, loc, attrs_of({{"axis", axis}, {"eps", eps}}));
}
Tensor attention(const Tensor& q, const Tensor& k, const Tensor& v, std::optional<double> scale, bool causal,
                 Loc loc) {
  common_graph(OpKind::Attention, {&q, &k, &v}, loc);
  if (!scale) {
    if (q.rank() < 2)
      throw Error(fmt::format("{}: attention: q must have rank >= 2, got {}", detail::where(loc), q.str()));
    scale = 1.0 / std::sqrt(static_cast<double>(q.shape().back()));
  }
  return node(OpKind::Attention, {&q, &k, &v}, loc, attrs_of({{"scale", *scale}, {"causal", causal}}));
}

// ---- operators ----
Tensor operator-(const detail::TensorAt& x) { return neg(x.tensor, x.loc); }
Tensor operator+(const Tensor& a, const detail::OperandAt& b) { return add(a, b.operand, b.loc); }
Tensor operator-(const Tensor& a, const detail::OperandAt& b) { return sub(a, b.operand, b.loc); }
Tensor operator*(const Tensor& a, const detail::OperandAt& b) { return mul(a, b.operand, b.loc); }
Tensor operator/(const Tensor& a, const detail::OperandAt& b) { return div(a, b.operand, b.loc); }
Tensor operator+(double a, const detail::TensorAt& b) { return add(a, b.tensor, b.loc); }
Tensor operator-(double a, const detail::TensorAt& b) { return sub(a, b.tensor, b.loc); }
Tensor operator*(double a, const detail::TensorAt& b) { return mul(a, b.tensor, b.loc); }
Tensor operator/(double a, const detail::TensorAt& b) { return div(a, b.tensor, b.loc); }
Tensor operator<(const Tensor& a, const detail::OperandAt& b) { return lt(a, b.operand, b.loc); }
Tensor operator<=(const Tensor& a, const detail::OperandAt& b) { return le(a, b.operand, b.loc); }
Tensor operator>(const Tensor& a, const detail::OperandAt& b) { return gt(a, b.operand, b.loc); }
Tensor operator>=(const Tensor& a, const detail::OperandAt& b) { return ge(a, b.operand, b.loc); }
Tensor operator<(double a, const detail::TensorAt& b) { return lt(a, b.tensor, b.loc); }
Tensor operator<=(double a, const detail::TensorAt& b) { return le(a, b.tensor, b.loc); }
Tensor operator>(double a, const detail::TensorAt& b) { return gt(a, b.tensor, b.loc); }
Tensor operator>=(double a, const detail::TensorAt& b) { return ge(a, b.tensor, b.loc); }

}  // namespace kiln
