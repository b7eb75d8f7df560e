// Reference semantics of the source ops (const, iota), the reductions (sum, max, min,
// mean over a list of axes, keepdim) and the views (broadcast, reshape, transpose).
// Reductions accumulate in double in row-major order and round once at the end.
#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "ir/error.h"
#include "ir/interpreter_kernels.h"

namespace kiln::ir::interp {

namespace {

// Accumulates x into out through `shape`, the operand's shape: output strides are 0 on
// the reduced dims, so every element lands in the slot of its reduced row.
template <class Combine>
void reduce_into(const HostTensor& x, const std::vector<bool>& reduced, std::vector<double>& out, Combine combine) {
  const Shape& shape = x.type.shape;
  Shape kept = shape;
  for (size_t d = 0; d < shape.size(); ++d)
    if (reduced[d]) kept[d] = 1;
  Shape out_strides = row_major_strides(kept);
  for (size_t d = 0; d < shape.size(); ++d)
    if (reduced[d]) out_strides[d] = 0;
  std::array<Shape, 2> strides{row_major_strides(shape), out_strides};
  const double* in = x.values.data();
  double* acc = out.data();
  for_each_row<2>(shape, strides, [&](const auto& base, int64_t len, const auto& step) {
    const double* src = in + base[0];
    const int64_t sx = step[0];
    if (step[1] == 0) {  // the whole row folds into one slot: keep it in a register
      double a = acc[base[1]];
      for (int64_t j = 0; j < len; ++j) a = combine(a, src[j * sx]);
      acc[base[1]] = a;
    } else {
      double* dst = acc + base[1];
      const int64_t so = step[1];
      for (int64_t j = 0; j < len; ++j) dst[j * so] = combine(dst[j * so], src[j * sx]);
    }
  });
}

}  // namespace

HostTensor eval_source(const Node& n) {
  const TensorType& type = n.result->type;
  if (n.op == OpKind::Const) {
    const double v = round_to(type.dtype, n.attrs.get_float("value"));
    return exact_tensor(type, std::vector<double>(static_cast<size_t>(type.numel()), v));
  }
  if (n.op != OpKind::Iota) throw Error(fmt::format("evaluate: {} is not a source op", op_name(n.op)));
  // Each element is its index along `axis`: [outer, size, inner] around the axis.
  const int axis = single_axis(n.attrs, type.rank());
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= type.shape[d];
  for (int d = axis + 1; d < type.rank(); ++d) inner *= type.shape[d];
  const int64_t size = type.shape[axis];
  std::vector<double> out(static_cast<size_t>(type.numel()));
  double* o = out.data();
  for (int64_t i = 0; i < outer; ++i)
    for (int64_t k = 0; k < size; ++k)
      for (int64_t j = 0; j < inner; ++j) *o++ = static_cast<double>(k);
  return HostTensor(type, std::move(out));  // rounds big indices in f16 / bf16
}

HostTensor eval_reduce(const Node& n, const HostTensor& x) {
  const TensorType& type = n.result->type;
  std::vector<bool> reduced(x.type.rank(), false);
  int64_t count = 1;
  for (int d : reduce_axes(n.attrs, x.type.rank())) {
    reduced[d] = true;
    count *= x.type.shape[d];
  }
  const double inf = std::numeric_limits<double>::infinity();
  const size_t size = static_cast<size_t>(type.numel());
  std::vector<double> out;
  // max and min propagate NaN: once a slot holds NaN, comparisons keep it.
  switch (n.op) {
    case OpKind::ReduceSum:
    case OpKind::ReduceMean:
      out.assign(size, 0.0);
      reduce_into(x, reduced, out, [](double a, double v) { return a + v; });
      break;
    case OpKind::ReduceMax:
      out.assign(size, -inf);
      reduce_into(x, reduced, out, [](double a, double v) { return v > a || std::isnan(v) ? v : a; });
      break;
    case OpKind::ReduceMin:
      out.assign(size, inf);
      reduce_into(x, reduced, out, [](double a, double v) { return v < a || std::isnan(v) ? v : a; });
      break;
    default: throw Error(fmt::format("evaluate: {} is not a reduction", op_name(n.op)));
  }
  if (n.op == OpKind::ReduceMean)
    for (double& v : out) v /= static_cast<double>(count);
  return HostTensor(type, std::move(out));
}

HostTensor eval_view(const Node& n, const HostTensor& x) {
  const TensorType& type = n.result->type;
  if (n.op == OpKind::Reshape) return exact_tensor(type, x.values);  // row-major order is unchanged
  Shape source_strides;
  if (n.op == OpKind::Broadcast) {
    source_strides = broadcast_strides(x.type.shape, type.shape);
  } else if (n.op == OpKind::Transpose) {
    // Result dim i is operand dim perm[i]: walk the result reading the operand's strides.
    const Shape own = row_major_strides(x.type.shape);
    for (int64_t p : n.attrs.get_ints("perm")) source_strides.push_back(own[static_cast<size_t>(p)]);
  } else {
    throw Error(fmt::format("evaluate: {} is not a view", op_name(n.op)));
  }
  std::vector<double> out(static_cast<size_t>(type.numel()));
  double* o = out.data();
  const double* in = x.values.data();
  for_each_row<1>(type.shape, {source_strides}, [&](const auto& base, int64_t len, const auto& step) {
    const double* src = in + base[0];
    const int64_t s = step[0];
    for (int64_t j = 0; j < len; ++j) *o++ = src[j * s];
  });
  return exact_tensor(type, std::move(out));
}

}  // namespace kiln::ir::interp
