// Shared by the quantised-weight tests (unit and GPU): a decoder's projection
// y = silu(x @ dequant(w, s[, z])^T + bias) in the weight format and shape asked for.
#pragma once
#include <gtest/gtest.h>

#include "frontend/kiln.h"
#include "ir/kernel_gemm.h"
#include "passes/lower.h"
#include "passes/pass_manager.h"

namespace kiln::test {

struct Quant {
  DType weights = DType::i4;
  DType act = DType::f16;
  int64_t m = 1, n = 96, k = 256, group = 128;
  int zeros = 0;  // 0: none, 1: of the scales' type, 2: of the weights' type
  bool epilogue = true;
  // The weight as `wp` in the interleaved layout [N / 8, K / E, 8, E] (E = 32 for i4, 16
  // for i8), made [N, K] by a transpose and a reshape (passes/dequant_fold.h).
  bool interleaved = false;
};

inline kiln::Graph quant_linear(const Quant& q) {
  kiln::Graph g("q");
  auto x = g.input("x", q.act, {q.m, q.k});
  kiln::Tensor w;
  if (q.interleaved) {
    const int64_t e = ir::gemm_piece_elems(q.weights);
    auto wp = g.input("wp", q.weights, {q.n / 8, q.k / e, 8, e});
    w = kiln::reshape(kiln::transpose(wp, {0, 2, 1, 3}), {q.n, q.k});
  } else {
    w = g.input("w", q.weights, {q.n, q.k});
  }
  auto s = g.input("s", q.act, {q.n, q.k / q.group});
  kiln::Tensor wd =
      q.zeros ? kiln::dequant(w, s, g.input("z", q.zeros == 1 ? q.act : q.weights, {q.n, q.k / q.group}), q.group)
              : kiln::dequant(w, s, q.group);
  auto y = kiln::matmul(x, wd, false, true);
  if (q.epilogue) y = kiln::silu(y + g.input("bias", q.act, {q.n}));
  g.output(y);
  return g;
}

// The one gemm kernel that the product lowers to, with the default config.
inline ir::Kernel quant_gemm_kernel(const Quant& q) {
  ir::Graph g = quant_linear(q).ir().clone();
  passes::PassManager("decompose,simplify,cse,dce,fuse", {}).run(g);
  const passes::Plan p = passes::lower(g);
  EXPECT_EQ(p.kernels.size(), 1u);
  return p.kernels.at(0);
}

}  // namespace kiln::test
