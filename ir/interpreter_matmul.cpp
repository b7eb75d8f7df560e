// Reference semantics of matmul: [..., M, K] x [..., K, N] with optional transposes of
// either operand's last two dims and numpy broadcasting of the batch dims. Products
// are summed in double over k in ascending order; the result is rounded once.
#include <fmt/format.h>

#include "ir/error.h"
#include "ir/interpreter_kernels.h"

namespace kiln::ir::interp {

namespace {

// Where element (row, col) of one matrix operand lives: offset row * rows + col * cols.
struct MatrixLayout {
  int64_t rows, cols;
};

// C[M, N] += A[M, K] B[K, N] for one batch entry; `c` starts at zero.
void multiply_one(const double* a, MatrixLayout la, const double* b, MatrixLayout lb, double* c, int64_t m_size,
                  int64_t n_size, int64_t k_size) {
  if (lb.cols != 1) {
    // B is stored transposed ([N, K]): a dot product per output keeps B's reads contiguous.
    for (int64_t m = 0; m < m_size; ++m)
      for (int64_t n = 0; n < n_size; ++n) {
        double acc = 0;
        const double *pa = a + m * la.rows, *pb = b + n * lb.cols;
        for (int64_t k = 0; k < k_size; ++k) acc += pa[k * la.cols] * pb[k * lb.rows];
        c[m * n_size + n] = acc;
      }
    return;
  }
  // B is row-major [K, N]: add a[m, k] times row k of B into row m of C.
  for (int64_t m = 0; m < m_size; ++m) {
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

  std::vector<double> out(static_cast<size_t>(type.numel()), 0.0);
  double* c = out.data();
  const double *pa = a.values.data(), *pb = b.values.data();
  for_each_row<2>(batch, strides, [&](const auto& base, int64_t len, const auto& step) {
    for (int64_t j = 0; j < len; ++j) {
      multiply_one(pa + base[0] + j * step[0], la, pb + base[1] + j * step[1], lb, c, m_size, n_size, k_size);
      c += m_size * n_size;
    }
  });
  return HostTensor(type, std::move(out));
}

}  // namespace kiln::ir::interp
