// Internal to the reference interpreter: the evaluation of each family of ops (one
// .cpp per theme) and the strided walk they share. Kiln code outside ir/interpreter*.cpp
// uses ir/interpreter.h instead.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "ir/graph.h"
#include "ir/tensor.h"

namespace kiln::ir::interp {

using Args = std::vector<const HostTensor*>;

// Strides that read a row-major tensor of shape `from` as if broadcast to `to`
// (numpy rule): 0 on size-1 dims that grow and on missing leading dims.
Shape broadcast_strides(const Shape& from, const Shape& to);

// A tensor whose values are already representable in its dtype (views, copies):
// no rounding pass.
inline HostTensor exact_tensor(TensorType type, std::vector<double> values) {
  HostTensor t;
  t.type = std::move(type);
  t.values = std::move(values);
  return t;
}

// Walks `shape` in row-major order, reading N operands through their own strides.
// Size-1 dims are dropped and dims that are contiguous for every operand are merged,
// so a same-shape element-wise op is one row. For each innermost row it calls
// row(base offsets, row length, per-operand step within the row).
template <size_t N, class RowFn>
void for_each_row(const Shape& shape, const std::array<Shape, N>& strides, RowFn&& row) {
  Shape dims;
  std::array<Shape, N> st;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    bool merge = !dims.empty();
    for (size_t k = 0; k < N && merge; ++k) merge = st[k].back() == strides[k][d] * shape[d];
    if (merge) {
      dims.back() *= shape[d];
      for (size_t k = 0; k < N; ++k) st[k].back() = strides[k][d];
    } else {
      dims.push_back(shape[d]);
      for (size_t k = 0; k < N; ++k) st[k].push_back(strides[k][d]);
    }
  }
  std::array<int64_t, N> base{}, step{};
  if (dims.empty()) {  // a scalar, or only size-1 dims
    row(base, int64_t{1}, step);
    return;
  }
  const int inner = static_cast<int>(dims.size()) - 1;
  for (size_t k = 0; k < N; ++k) step[k] = st[k][inner];
  std::vector<int64_t> index(inner, 0);
  while (true) {
    row(base, dims[inner], step);
    int d = inner - 1;
    for (; d >= 0; --d) {  // odometer over the outer dims
      for (size_t k = 0; k < N; ++k) base[k] += st[k][d];
      if (++index[d] < dims[d]) break;
      for (size_t k = 0; k < N; ++k) base[k] -= st[k][d] * dims[d];
      index[d] = 0;
    }
    if (d < 0) return;
  }
}

// One function per family; each returns the node's result, rounded to its dtype.
HostTensor eval_unary(const Node& n, const HostTensor& x);  // unary math and cast
HostTensor eval_binary(const Node& n, const HostTensor& a, const HostTensor& b);  // arithmetic, comparisons
HostTensor eval_select(const Node& n, const HostTensor& cond, const HostTensor& a, const HostTensor& b);
HostTensor eval_source(const Node& n);  // const, iota
HostTensor eval_reduce(const Node& n, const HostTensor& x);
HostTensor eval_view(const Node& n, const HostTensor& x);  // broadcast, reshape, transpose
HostTensor eval_matmul(const Node& n, const HostTensor& a, const HostTensor& b);
HostTensor eval_composite(const Node& n, const Args& args);  // softmax, log_softmax, norms, attention

}  // namespace kiln::ir::interp
