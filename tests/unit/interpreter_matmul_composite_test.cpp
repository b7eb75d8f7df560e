// The reference interpreter's matmul and composite ops (softmax, log_softmax,
// layer_norm, rms_norm, attention), checked against values worked out by hand.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "interpreter_test_util.h"

namespace kiln {
namespace {

using ir::OpKind;
using testing::attrs;
using testing::expect_values;
using testing::f32;
using testing::kNaN;
using testing::run_op;
using testing::tensor;


ir::Attrs transposes(bool a, bool b) { return attrs({{"transpose_a", a}, {"transpose_b", b}}); }

// [[1,2,3],[4,5,6]] x [[7,8],[9,10],[11,12]] = [[58,64],[139,154]].
const std::vector<double> kProduct = {58, 64, 139, 154};

TEST(InterpreterMatmul, TwoByThreeTimesThreeByTwo) {
  HostTensor out = run_op(OpKind::Matmul, {f32({2, 3}, {1, 2, 3, 4, 5, 6}), f32({3, 2}, {7, 8, 9, 10, 11, 12})});
  EXPECT_EQ(out.type.shape, (Shape{2, 2}));
  expect_values(out, kProduct);
}

TEST(InterpreterMatmul, TransposeA) {
  HostTensor at = f32({3, 2}, {1, 4, 2, 5, 3, 6});
  expect_values(run_op(OpKind::Matmul, {at, f32({3, 2}, {7, 8, 9, 10, 11, 12})}, transposes(true, false)), kProduct);
}

TEST(InterpreterMatmul, TransposeB) {
  HostTensor bt = f32({2, 3}, {7, 9, 11, 8, 10, 12});
  expect_values(run_op(OpKind::Matmul, {f32({2, 3}, {1, 2, 3, 4, 5, 6}), bt}, transposes(false, true)), kProduct);
}

TEST(InterpreterMatmul, TransposeBoth) {
  HostTensor at = f32({3, 2}, {1, 4, 2, 5, 3, 6}), bt = f32({2, 3}, {7, 9, 11, 8, 10, 12});
  expect_values(run_op(OpKind::Matmul, {at, bt}, transposes(true, true)), kProduct);
}

TEST(InterpreterMatmul, BatchedWithABroadcastOperand) {
  // a[0] = identity, a[1] = [[1,2],[3,4]]; b = [[5,6],[7,8]] is shared by both.
  HostTensor a = f32({2, 2, 2}, {1, 0, 0, 1, 1, 2, 3, 4}), b = f32({2, 2}, {5, 6, 7, 8});
  HostTensor out = run_op(OpKind::Matmul, {a, b});
  EXPECT_EQ(out.type.shape, (Shape{2, 2, 2}));
  expect_values(out, {5, 6, 7, 8, 19, 22, 43, 50});
}

TEST(InterpreterMatmul, BatchDimsBroadcastAgainstEachOther) {
  // a [2,1,1,2]: a[i] = [i+1, 1]; b [3,2,1]: b[j] = [j, 1]^T; out[i,j] = (i+1) j + 1.
  HostTensor a = f32({2, 1, 1, 2}, {1, 1, 2, 1}), b = f32({3, 2, 1}, {0, 1, 1, 1, 2, 1});
  HostTensor out = run_op(OpKind::Matmul, {a, b});
  EXPECT_EQ(out.type.shape, (Shape{2, 3, 1, 1}));
  expect_values(out, {1, 2, 3, 1, 3, 5});
}

TEST(InterpreterMatmul, F16RoundsOnceAtTheEnd) {
  // 1 + 2^-11 + 2^-11 = 1 + 2^-10 exactly; rounding each partial sum would give 1.
  HostTensor a = tensor(DType::f16, {1, 3}, {1, 0.00048828125, 0.00048828125});
  HostTensor b = tensor(DType::f16, {3, 1}, {1, 1, 1});
  EXPECT_EQ(run_op(OpKind::Matmul, {a, b}).values[0], 1.0009765625);
}

TEST(InterpreterSoftmax, OneTwoThree) {
  expect_values(run_op(OpKind::Softmax, {f32({3}, {1, 2, 3})}),
                {0.09003057317038046, 0.24472847105479767, 0.6652409557748219});
}

TEST(InterpreterSoftmax, AlongTheFirstAxis) {
  // Columns [1,2,3] and [0,0,0].
  HostTensor out = run_op(OpKind::Softmax, {f32({3, 2}, {1, 0, 2, 0, 3, 0})}, attrs({{"axis", int64_t{0}}}));
  expect_values(out, {0.09003057317038046, 1.0 / 3, 0.24472847105479767, 1.0 / 3, 0.6652409557748219, 1.0 / 3});
}

TEST(InterpreterSoftmax, LargeValuesDoNotOverflow) {
  expect_values(run_op(OpKind::Softmax, {f32({2, 2}, {1000, 1000, 1000, 0})}), {0.5, 0.5, 1, 0});
}

TEST(InterpreterSoftmax, NaNPropagates) {
  expect_values(run_op(OpKind::Softmax, {f32({2, 2}, {kNaN, 1, 0, 0})}), {kNaN, kNaN, 0.5, 0.5});
}

TEST(InterpreterSoftmax, LogSoftmax) {
  expect_values(run_op(OpKind::LogSoftmax, {f32({3}, {1, 2, 3})}),
                {-2.40760596444438, -1.4076059644443801, -0.40760596444438013});
}

TEST(InterpreterSoftmax, ALogSumExpOfAnInfiniteMaxIsThatMax) {
  // log_softmax is x - logsumexp(x) and softmax exp(x - logsumexp(x)), whose infinite
  // max is its answer (the kernels' too): beside a +inf, finite values come out -inf
  // (0 for softmax), the +inf itself NaN; an all -inf row is NaN.
  const double inf = std::numeric_limits<double>::infinity();
  expect_values(run_op(OpKind::LogSoftmax, {f32({2, 3}, {inf, 1, 2, -inf, -inf, -inf})}),
                {kNaN, -inf, -inf, kNaN, kNaN, kNaN});
  HostTensor column = run_op(OpKind::LogSoftmax, {f32({3, 1}, {1, inf, 1})}, attrs({{"axis", int64_t{0}}}));
  expect_values(column, {-inf, kNaN, -inf});
  expect_values(run_op(OpKind::Softmax, {f32({3}, {1, inf, 2})}), {0, kNaN, 0});
}

TEST(InterpreterLayerNorm, TwoByThree) {
  // Row [1,2,3]: mean 2, var 2/3 -> [-1.2247, 0, 1.2247]; row [0,0,3]: mean 1, var 2 -> [-0.7071, -0.7071, 1.4142].
  // Then * w [1, 2, 0.5] + b [0, 1, -1].
  HostTensor x = f32({2, 3}, {1, 2, 3, 0, 0, 3});
  HostTensor out = run_op(OpKind::LayerNorm, {x, f32({3}, {1, 2, 0.5}), f32({3}, {0, 1, -1})}, attrs({{"eps", 0.0}}));
  expect_values(out, {-1.224744871391589, 1, -0.38762756430420553, -0.7071067811865475, -0.41421356237309515,
                      -0.2928932188134524});
}

TEST(InterpreterLayerNorm, EpsIsAddedToTheVariance) {
  // [1, -1]: mean 0, var 1; with eps 3 the scale is 1 / sqrt(4).
  HostTensor out = run_op(OpKind::LayerNorm, {f32({2}, {1, -1}), f32({2}, {1, 1}), f32({2}, {0, 0})},
                          attrs({{"eps", 3.0}}));
  expect_values(out, {0.5, -0.5});
}

TEST(InterpreterLayerNorm, AlongTheFirstAxis) {
  // Each column is [c, c + 2]: mean c + 1, var 1 -> [-1, 1], times w = [1, 2].
  HostTensor out = run_op(OpKind::LayerNorm, {f32({2, 3}, {1, 4, 0, 3, 6, 2}), f32({2}, {1, 2}), f32({2}, {0, 0})},
                          attrs({{"axis", int64_t{0}}, {"eps", 0.0}}));
  expect_values(out, {-1, -1, -1, 2, 2, 2});
}

TEST(InterpreterRmsNorm, ScalesByRootMeanSquare) {
  // [3, 4]: mean of squares 12.5; x / sqrt(12.5) * [1, 2].
  HostTensor out = run_op(OpKind::RmsNorm, {f32({2}, {3, 4}), f32({2}, {1, 2})}, attrs({{"eps", 0.0}}));
  expect_values(out, {0.848528137423857, 2.262741699796952});
}

TEST(InterpreterRmsNorm, EpsAndRows) {
  // Rows [1, 1] and [2, 2] with eps 3: 1 / sqrt(4) and 2 / sqrt(7).
  HostTensor out = run_op(OpKind::RmsNorm, {f32({2, 2}, {1, 1, 2, 2}), f32({2}, {1, 1})}, attrs({{"eps", 3.0}}));
  expect_values(out, {0.5, 0.5, 0.7559289460184544, 0.7559289460184544});
}

TEST(InterpreterRmsNorm, F16RoundsOnlyTheResult) {
  // Exact results 0.848528... and 2.262741... round to the f16 values 1738 * 2^-11 and
  // 1159 * 2^-9. Rounding 1 / sqrt(12.5) to f16 first would give 0.84814453125 and 2.26171875.
  HostTensor out = run_op(OpKind::RmsNorm, {tensor(DType::f16, {2}, {3, 4}), tensor(DType::f16, {2}, {1, 2})},
                          attrs({{"eps", 0.0}}));
  EXPECT_EQ(out.values, (std::vector<double>{0.8486328125, 2.263671875}));
}

TEST(InterpreterAttention, CausalOneByThreeByTwo) {
  // q = k = [[1,0],[0,1],[1,1]], v = [[1,2],[3,4],[5,6]], scale 1.
  // Row 0 sees key 0 only: v0. Row 1: scores [0, 1] -> p = [1, e] / (1 + e).
  // Row 2: scores [1, 1, 2] -> p = [1, 1, e] / (2 + e).
  HostTensor qk = f32({1, 3, 2}, {1, 0, 0, 1, 1, 1});
  HostTensor v = f32({1, 3, 2}, {1, 2, 3, 4, 5, 6});
  HostTensor out = run_op(OpKind::Attention, {qk, qk, v}, attrs({{"scale", 1.0}, {"causal", true}}));
  EXPECT_EQ(out.type.shape, (Shape{1, 3, 2}));
  expect_values(out, {1, 2, 2.4621171572600096, 3.4621171572600096, 3.728350654297488, 4.728350654297488});
}

TEST(InterpreterAttention, NonCausalWithScale) {
  // q = [1, 0], k = [[2, 0], [0, 0]], scale 0.5: scores [1, 0]; v = identity rows.
  HostTensor q = f32({1, 2}, {1, 0}), k = f32({2, 2}, {2, 0, 0, 0}), v = f32({2, 2}, {1, 0, 0, 1});
  HostTensor out = run_op(OpKind::Attention, {q, k, v}, attrs({{"scale", 0.5}}));
  expect_values(out, {0.7310585786300049, 0.2689414213699951});
}

TEST(InterpreterAttention, CausalMaskIsTopLeftAligned) {
  // Three queries, two keys, all scores 0: row 0 sees key 0, rows 1 and 2 see both.
  HostTensor q = f32({3, 1}, {0, 0, 0}), k = f32({2, 1}, {0, 0}), v = f32({2, 1}, {2, 4});
  HostTensor out = run_op(OpKind::Attention, {q, k, v}, attrs({{"scale", 1.0}, {"causal", true}}));
  expect_values(out, {2, 3, 3});
}

TEST(InterpreterAttention, BatchesAreIndependent) {
  // Batch 0: one key; batch 1: equal scores over values 1 and 3, head dim Dv = 1.
  HostTensor q = f32({2, 1, 1}, {1, 1}), k = f32({2, 2, 1}, {0, 0, 0, 0}), v = f32({2, 2, 1}, {5, 7, 1, 3});
  HostTensor out = run_op(OpKind::Attention, {q, k, v}, attrs({{"scale", 1.0}}));
  EXPECT_EQ(out.type.shape, (Shape{2, 1, 1}));
  expect_values(out, {6, 2});
}

}  // namespace
}  // namespace kiln
