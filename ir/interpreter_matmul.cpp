// Reference semantics of matmul: [..., M, K] x [..., K, N] with optional transposes of
// either operand's last two dims and numpy broadcasting of the batch dims. Products
// are summed in double over k in ascending order; the result is rounded once. Output
// rows are split over threads.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <vector>

#include "ir/error.h"
#include "ir/interpreter_kernels.h"

namespace kiln::ir::interp {

namespace {

// Where element (row, col) of one matrix operand lives: offset row * rows + col * cols.
struct MatrixLayout {
  int64_t rows, cols;
};

// Rows [m_begin, m_end) of C[M, N] += A[M, K] B[K, N] for one batch entry; `c` starts at zero.
void multiply_rows(const double* a, MatrixLayout la, const double* b, MatrixLayout lb, double* c, int64_t m_begin,
                   int64_t m_end, int64_t n_size, int64_t k_size) {
  if (lb.cols != 1) {
    // B is stored transposed ([N, K]): a dot product per output keeps B's reads contiguous.
    for (int64_t m = m_begin; m < m_end; ++m)
      for (int64_t n = 0; n < n_size; ++n) {
        double acc = 0;
        const double *pa = a + m * la.rows, *pb = b + n * lb.cols;
        for (int64_t k = 0; k < k_size; ++k) acc += pa[k * la.cols] * pb[k * lb.rows];
        c[m * n_size + n] = acc;
      }
    return;
  }
  // B is row-major [K, N]: add a[m, k] times row k of B into row m of C.
  for (int64_t m = m_begin; m < m_end; ++m) {
    double* row = c + m * n_size;
    for (int64_t k = 0; k < k_size; ++k) {
      const double av = a[m * la.rows + k * la.cols];
      const double* pb = b + k * lb.rows;
      for (int64_t n = 0; n < n_size; ++n) row[n] += av * pb[n];
    }
  }
}

Shape batch_of(const Shape& s) { return Shape(s.begin(), s.end() - 2); }

}  // namespace

HostTensor eval_matmul(const Node& n, const HostTensor& a, const HostTensor& b) {
  if (n.op != OpKind::Matmul) throw Error(fmt::format("evaluate: {} is not a matmul", op_name(n.op)));
  const TensorType& type = n.result->type;
  const bool ta = n.attrs.get_bool("transpose_a"), tb = n.attrs.get_bool("transpose_b");
  const int rank = type.rank();
  const int64_t m_size = type.shape[rank - 2], n_size = type.shape[rank - 1];
  const int64_t k_size = a.type.shape[a.type.rank() - (ta ? 2 : 1)];
  // A stored [M, K] (or [K, M] when transposed), B stored [K, N] (or [N, K]).
  const MatrixLayout la = ta ? MatrixLayout{1, m_size} : MatrixLayout{k_size, 1};
  const MatrixLayout lb = tb ? MatrixLayout{1, k_size} : MatrixLayout{n_size, 1};

  // Batch strides in units of whole matrices, 0 where an operand is broadcast.
  const Shape batch = batch_of(type.shape);
  std::array<Shape, 2> strides{broadcast_strides(batch_of(a.type.shape), batch),
                               broadcast_strides(batch_of(b.type.shape), batch)};
  for (int64_t& s : strides[0]) s *= m_size * k_size;
  for (int64_t& s : strides[1]) s *= k_size * n_size;

  // Where each batch entry's A and B start, in the order of the result's matrices.
  std::vector<std::array<int64_t, 2>> entries;
  for_each_row<2>(batch, strides, [&](const auto& base, int64_t len, const auto& step) {
    for (int64_t j = 0; j < len; ++j) entries.push_back({base[0] + j * step[0], base[1] + j * step[1]});
  });

  // Every output row is its own sum over k, so rows split over threads freely.
  std::vector<double> out(static_cast<size_t>(type.numel()), 0.0);
  double* c = out.data();
  const double *pa = a.values.data(), *pb = b.values.data();
  const int64_t rows = static_cast<int64_t>(entries.size()) * m_size;
  parallel_for(rows, n_size * k_size, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end;) {
      const int64_t entry = row / m_size, m = row % m_size;
      const int64_t m_end = std::min(m_size, m + (end - row));
      const auto& [a_at, b_at] = entries[static_cast<size_t>(entry)];
      multiply_rows(pa + a_at, la, pb + b_at, lb, c + entry * m_size * n_size, m, m_end, n_size, k_size);
      row += m_end - m;
    }
  });
  return HostTensor(type, std::move(out));
}

}  // namespace kiln::ir::interp
