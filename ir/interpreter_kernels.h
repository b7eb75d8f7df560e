// Internal to the reference interpreter: the evaluation of each family of ops (one
// .cpp per theme) and the strided walks they share, serial and split over threads.
// Kiln code outside ir/interpreter*.cpp uses ir/interpreter.h instead.
#pragma once
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "ir/graph.h"
#include "ir/parallel.h"
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

// `shape` with its operands' strides, simplified for walking: size-1 dims are dropped
// and dims that are contiguous for every operand are merged, so a same-shape
// element-wise op is one row.
template <size_t N>
struct RowWalk {
  Shape dims;
  std::array<Shape, N> strides;
};

template <size_t N>
RowWalk<N> merge_dims(const Shape& shape, const std::array<Shape, N>& strides) {
  RowWalk<N> w;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    bool merge = !w.dims.empty();
    for (size_t k = 0; k < N && merge; ++k) merge = w.strides[k].back() == strides[k][d] * shape[d];
    if (merge) {
      w.dims.back() *= shape[d];
      for (size_t k = 0; k < N; ++k) w.strides[k].back() = strides[k][d];
    } else {
      w.dims.push_back(shape[d]);
      for (size_t k = 0; k < N; ++k) w.strides[k].push_back(strides[k][d]);
    }
  }
  return w;
}

// Walks the elements [begin, end) of `w` in row-major order, a row (or the part of one
// inside the range) at a time: row(base offsets, length, per-operand step within the
// row, row-major index of the first element).
template <size_t N, class RowFn>
void walk_rows(const RowWalk<N>& w, int64_t begin, int64_t end, RowFn&& row) {
  std::array<int64_t, N> base{}, step{};
  if (begin >= end) return;
  if (w.dims.empty()) {  // a scalar, or only size-1 dims
    row(base, int64_t{1}, step, int64_t{0});
    return;
  }
  const int inner = static_cast<int>(w.dims.size()) - 1;
  const int64_t row_len = w.dims[inner];
  for (size_t k = 0; k < N; ++k) step[k] = w.strides[k][inner];
  // The multi-index of `begin`'s row over the outer dims, and its base offsets.
  std::vector<int64_t> index(inner, 0);
  int64_t rest = begin / row_len;
  for (int d = inner - 1; d >= 0; --d) {
    index[d] = rest % w.dims[d];
    rest /= w.dims[d];
    for (size_t k = 0; k < N; ++k) base[k] += index[d] * w.strides[k][d];
  }
  int64_t at = begin, skip = begin % row_len;
  while (true) {
    std::array<int64_t, N> start = base;
    for (size_t k = 0; k < N; ++k) start[k] += skip * step[k];
    const int64_t len = std::min(row_len - skip, end - at);
    row(start, len, step, at);
    at += len;
    skip = 0;
    if (at >= end) return;
    for (int d = inner - 1; d >= 0; --d) {  // odometer over the outer dims
      for (size_t k = 0; k < N; ++k) base[k] += w.strides[k][d];
      if (++index[d] < w.dims[d]) break;
      for (size_t k = 0; k < N; ++k) base[k] -= w.strides[k][d] * w.dims[d];
      index[d] = 0;
    }
  }
}

// Walks `shape` in row-major order on the calling thread, reading N operands through
// their own strides: row(base offsets, row length, per-operand step within the row).
template <size_t N, class RowFn>
void for_each_row(const Shape& shape, const std::array<Shape, N>& strides, RowFn&& row) {
  walk_rows(merge_dims(shape, strides), 0, numel(shape), [&](const auto& base, int64_t len, const auto& step, int64_t) {
    row(base, len, step);
  });
}

// The same walk split over threads by ranges of elements: row(base offsets, length,
// step, row-major index of the row's first element), so a caller writes a contiguous
// output at that index. Rows of different ranges may run at the same time.
template <size_t N, class RowFn>
void parallel_for_each_row(const Shape& shape, const std::array<Shape, N>& strides, RowFn&& row) {
  const RowWalk<N> w = merge_dims(shape, strides);
  ir::parallel_for(numel(shape), 1, [&](int64_t begin, int64_t end) { walk_rows(w, begin, end, row); });
}

// One function per family; each returns the node's result, rounded to its dtype.
HostTensor eval_unary(const Node& n, const HostTensor& x);  // unary math and cast
HostTensor eval_binary(const Node& n, const HostTensor& a, const HostTensor& b);  // arithmetic, comparisons
HostTensor eval_select(const Node& n, const HostTensor& cond, const HostTensor& a, const HostTensor& b);
HostTensor eval_source(const Node& n);  // const, iota
HostTensor eval_reduce(const Node& n, const HostTensor& x);
HostTensor eval_view(const Node& n, const HostTensor& x);  // broadcast, reshape, transpose
HostTensor eval_matmul(const Node& n, const HostTensor& a, const HostTensor& b);
HostTensor eval_dequant(const Node& n, const Args& args);  // integer weights times group scales
HostTensor eval_composite(const Node& n, const Args& args);  // softmax, log_softmax, norms, attention

}  // namespace kiln::ir::interp
