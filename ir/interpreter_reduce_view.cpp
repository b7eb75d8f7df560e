// Reference semantics of the source ops (const, iota), the reductions (sum, max, min,
// mean, logsumexp, var over a list of axes, keepdim) and the views (broadcast, reshape,
// transpose). Reductions accumulate in double in row-major order and round once at the
// end; logsumexp and var take two passes (max, then the shifted sum; mean, then the
// squared deviations), the stable formulas. An i32 sum is exact: it accumulates in
// int64 and saturates to the i32 range once at the end, as all i32 arithmetic in Kiln
// saturates (so the order of the additions never matters).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "ir/error.h"
#include "ir/interpreter_kernels.h"

namespace kiln::ir::interp {

namespace {

// Accumulates x into out through `shape`, the operand's shape: output strides are 0 on
// the reduced dims, so every element lands in the slot of its reduced row. `combine`
// takes (accumulator, element, slot index). The work splits over threads along the
// largest kept dim: a slot's elements all lie in one part, and each part is walked in
// row-major order, so every slot combines its elements in the same order as a serial
// walk and the result does not depend on the number of threads. `Acc` is the
// accumulator's type: double, or int64_t for an exact integer sum.
template <class Acc, class Combine>
void reduce_into(const HostTensor& x, const std::vector<bool>& reduced, std::vector<Acc>& out, Combine combine) {
  const Shape& shape = x.type.shape;
  Shape kept = shape;
  for (size_t d = 0; d < shape.size(); ++d)
    if (reduced[d]) kept[d] = 1;
  Shape out_strides = row_major_strides(kept);
  for (size_t d = 0; d < shape.size(); ++d)
    if (reduced[d]) out_strides[d] = 0;
  const std::array<Shape, 2> strides{row_major_strides(shape), out_strides};
  int split = -1;
  for (size_t d = 0; d < shape.size(); ++d)
    if (!reduced[d] && shape[d] > 1 && (split < 0 || shape[d] > shape[static_cast<size_t>(split)]))
      split = static_cast<int>(d);

  // Reduces the part of x whose index along `split` is in [lo, hi) (all of x without a split).
  auto reduce_part = [&](int64_t lo, int64_t hi) {
    Shape part = shape;
    const double* in = x.values.data();
    int64_t out_offset = 0;
    if (split >= 0) {
      const auto d = static_cast<size_t>(split);
      part[d] = hi - lo;
      in += lo * strides[0][d];
      out_offset = lo * strides[1][d];
    }
    Acc* acc = out.data() + out_offset;
    for_each_row<2>(part, strides, [&](const auto& base, int64_t len, const auto& step) {
      const double* src = in + base[0];
      const int64_t sx = step[0];
      const int64_t slot = out_offset + base[1];
      if (step[1] == 0) {  // the whole row folds into one slot: keep it in a register
        Acc a = acc[base[1]];
        for (int64_t j = 0; j < len; ++j) a = combine(a, src[j * sx], slot);
        acc[base[1]] = a;
      } else {
        Acc* dst = acc + base[1];
        const int64_t so = step[1];
        for (int64_t j = 0; j < len; ++j) dst[j * so] = combine(dst[j * so], src[j * sx], slot + j * so);
      }
    });
  };
  if (split < 0) {
    reduce_part(0, 1);  // everything folds into one slot: one walk, in order
    return;
  }
  const int64_t length = shape[static_cast<size_t>(split)];
  parallel_for(length, x.type.numel() / length, reduce_part);
}

// The exact sum of an i32 tensor's reduced rows. Every element has |x| <= 2^31, so
// int64 holds any sum of fewer than 2^32 of them; the result's rounding to i32
// (HostTensor's) then saturates it. Beyond 2^53 the double is inexact, but such a sum
// saturates either way.
std::vector<double> exact_integer_sum(const HostTensor& x, const std::vector<bool>& reduced, size_t size) {
  std::vector<int64_t> wide(size, 0);
  reduce_into(x, reduced, wide, [](int64_t a, double v, int64_t) { return a + static_cast<int64_t>(v); });
  return std::vector<double>(wide.begin(), wide.end());
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
  parallel_for(outer * size, inner, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row)
      std::fill(o + row * inner, o + (row + 1) * inner, static_cast<double>(row % size));
  });
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
  auto sum = [](double a, double v, int64_t) { return a + v; };
  auto max = [](double a, double v, int64_t) { return v > a || std::isnan(v) ? v : a; };
  switch (n.op) {
    case OpKind::ReduceSum:
      if (x.type.dtype == DType::i32) {
        out = exact_integer_sum(x, reduced, size);
        break;
      }
      [[fallthrough]];
    case OpKind::ReduceMean:
      out.assign(size, 0.0);
      reduce_into(x, reduced, out, sum);
      break;
    case OpKind::ReduceMax:
      out.assign(size, -inf);
      reduce_into(x, reduced, out, max);
      break;
    case OpKind::ReduceMin:
      out.assign(size, inf);
      reduce_into(x, reduced, out, [](double a, double v, int64_t) { return v < a || std::isnan(v) ? v : a; });
      break;
    case OpKind::ReduceLogSumExp: {
      // m + log(sum(exp(x - m))) with m the max: no exp overflows. An infinite max is
      // the answer itself (all -inf, or some +inf); NaN stays NaN.
      std::vector<double> top(size, -inf);
      reduce_into(x, reduced, top, max);
      out.assign(size, 0.0);
      reduce_into(x, reduced, out, [&](double a, double v, int64_t slot) { return a + std::exp(v - top[slot]); });
      for (size_t i = 0; i < size; ++i) out[i] = std::isinf(top[i]) ? top[i] : top[i] + std::log(out[i]);
      break;
    }
    case OpKind::ReduceVar: {
      // The mean first, then the mean squared deviation from it (no cancellation).
      std::vector<double> mean(size, 0.0);
      reduce_into(x, reduced, mean, sum);
      for (double& v : mean) v /= static_cast<double>(count);
      out.assign(size, 0.0);
      reduce_into(x, reduced, out, [&](double a, double v, int64_t slot) {
        const double d = v - mean[slot];
        return a + d * d;
      });
      for (double& v : out) v /= static_cast<double>(count);
      break;
    }
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
  double* out_data = out.data();
  const double* in = x.values.data();
  parallel_for_each_row<1>(type.shape, {source_strides}, [&](const auto& base, int64_t len, const auto& step,
                                                            int64_t first) {
    const double* src = in + base[0];
    const int64_t s = step[0];
    double* o = out_data + first;
    for (int64_t j = 0; j < len; ++j) o[j] = src[j * s];
  });
  return exact_tensor(type, std::move(out));
}

}  // namespace kiln::ir::interp
