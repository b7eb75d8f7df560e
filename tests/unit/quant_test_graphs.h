// Shared by the quantised-weight tests (unit and GPU): a decoder's projection
// y = silu(x @ dequant(w, s[, z])^T + bias) in the weight format and shape asked for.
#pragma once
#include "frontend/kiln.h"

namespace kiln::test {

struct Quant {
  DType weights = DType::i4;
  DType act = DType::f16;
  int64_t m = 1, n = 96, k = 256, group = 128;
  int zeros = 0;  // 0: none, 1: of the scales' type, 2: of the weights' type
  bool epilogue = true;
};

inline kiln::Graph quant_linear(const Quant& q) {
  kiln::Graph g("q");
  auto x = g.input("x", q.act, {q.m, q.k});
  auto w = g.input("w", q.weights, {q.n, q.k});
  auto s = g.input("s", q.act, {q.n, q.k / q.group});
  kiln::Tensor wd =
      q.zeros ? kiln::dequant(w, s, g.input("z", q.zeros == 1 ? q.act : q.weights, {q.n, q.k / q.group}), q.group)
              : kiln::dequant(w, s, q.group);
  auto y = kiln::matmul(x, wd, false, true);
  if (q.epilogue) y = kiln::silu(y + g.input("bias", q.act, {q.n}));
  g.output(y);
  return g;
}

}  // namespace kiln::test
