// The reference interpreter's reductions and views, checked against values
// worked out by hand or by an independent index formula.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>

#include "interpreter_test_util.h"

namespace kiln {
namespace {

using ir::OpKind;
using testing::attrs;
using testing::expect_values;
using testing::f32;
using testing::kNaN;
using testing::over;
using testing::run_op;
using testing::tensor;

// [[1, 2, 3], [4, 5, 6]]
HostTensor two_by_three() { return f32({2, 3}, {1, 2, 3, 4, 5, 6}); }

// x[a, b, c] = 100 a + 10 b + c, so each value names its own index.
HostTensor indexed(Shape shape) {
  std::vector<double> v;
  for (int64_t a = 0; a < shape[0]; ++a)
    for (int64_t b = 0; b < shape[1]; ++b)
      for (int64_t c = 0; c < shape[2]; ++c) v.push_back(static_cast<double>(100 * a + 10 * b + c));
  return f32(std::move(shape), std::move(v));
}


TEST(InterpreterReduce, SumOverRows) {
  HostTensor out = run_op(OpKind::ReduceSum, {two_by_three()}, over({1}));
  EXPECT_EQ(out.type.shape, (Shape{2}));
  expect_values(out, {6, 15});
}

TEST(InterpreterReduce, SumOverColumns) {
  HostTensor out = run_op(OpKind::ReduceSum, {two_by_three()}, over({0}));
  EXPECT_EQ(out.type.shape, (Shape{3}));
  expect_values(out, {5, 7, 9});
}

TEST(InterpreterReduce, KeepdimKeepsSizeOneAxes) {
  HostTensor out = run_op(OpKind::ReduceSum, {two_by_three()}, over({-1}, true));
  EXPECT_EQ(out.type.shape, (Shape{2, 1}));
  expect_values(out, {6, 15});
}

TEST(InterpreterReduce, AllAxesGiveAScalar) {
  HostTensor out = run_op(OpKind::ReduceSum, {two_by_three()}, over({0, 1}));
  EXPECT_EQ(out.type.shape, (Shape{}));
  expect_values(out, {21});
}

TEST(InterpreterReduce, OuterAndInnerAxesOf3D) {
  // sum over a and c of 100a + 10b + c with a in {0,1}, c in {0..3}: 400 + 80 b + 12.
  HostTensor out = run_op(OpKind::ReduceSum, {indexed({2, 3, 4})}, over({0, 2}, true));
  EXPECT_EQ(out.type.shape, (Shape{1, 3, 1}));
  expect_values(out, {412, 492, 572});
}

TEST(InterpreterReduce, MaxMinMean) {
  expect_values(run_op(OpKind::ReduceMax, {two_by_three()}, over({1})), {3, 6});
  expect_values(run_op(OpKind::ReduceMin, {two_by_three()}, over({0})), {1, 2, 3});
  expect_values(run_op(OpKind::ReduceMean, {two_by_three()}, over({1})), {2, 5});
  expect_values(run_op(OpKind::ReduceMax, {f32({3}, {-5, -2, -7})}, over({0})), {-2});
}

TEST(InterpreterReduce, MaxAndMinPropagateNaN) {
  // NaN first, in the middle and last; a NaN-free row stays finite.
  HostTensor x = f32({4, 3}, {kNaN, 1, 2, 1, kNaN, 2, 1, 2, kNaN, 1, 2, 3});
  expect_values(run_op(OpKind::ReduceMax, {x}, over({1})), {kNaN, kNaN, kNaN, 3});
  expect_values(run_op(OpKind::ReduceMin, {x}, over({1})), {kNaN, kNaN, kNaN, 1});
}

TEST(InterpreterReduce, I32Sum) {
  HostTensor out = run_op(OpKind::ReduceSum, {tensor(DType::i32, {2, 3}, {1, -2, 3, 4, 5, -6})}, over({1}));
  EXPECT_EQ(out.type.dtype, DType::i32);
  EXPECT_EQ(out.values, (std::vector<double>{2, 3}));
}

// The exact sum, saturated once at the end: saturating each addition in turn would
// give 2^31 - 1 - (2^31 - 1) = 0 in the first row, and an order-dependent answer.
TEST(InterpreterReduce, I32SumIsExactAndSaturatesOnce) {
  const double top = 2147483647, bottom = -2147483648.0;
  HostTensor x = tensor(DType::i32, {4, 3}, {top, top, -top, top, top, 1, bottom, bottom, 5, bottom, top, 7});
  HostTensor out = run_op(OpKind::ReduceSum, {x}, over({1}));
  EXPECT_EQ(out.type.dtype, DType::i32);
  EXPECT_EQ(out.values, (std::vector<double>{top, top, bottom, 6}));
}

// Far past 2^53 in magnitude the partial sums of a double would lose the low bits;
// int64 keeps them: 2^23 elements of 2^31 - 1, then as many of -(2^31 - 1), then 3.
TEST(InterpreterReduce, I32SumStaysExactPastDoublePrecision) {
  const int64_t half = int64_t{1} << 23;
  std::vector<double> v(static_cast<size_t>(2 * half), 2147483647.0);
  std::fill(v.begin() + half, v.end(), -2147483647.0);
  v.push_back(3);
  HostTensor out = run_op(OpKind::ReduceSum, {tensor(DType::i32, {2 * half + 1}, v)}, over({0}));
  EXPECT_EQ(out.values, (std::vector<double>{3}));
}

TEST(InterpreterReduce, I32MaxAndMinReachTheBounds) {
  const double top = 2147483647, bottom = -2147483648.0;
  HostTensor x = tensor(DType::i32, {2, 3}, {bottom, bottom, bottom, top, 0, top});
  EXPECT_EQ(run_op(OpKind::ReduceMax, {x}, over({1})).values, (std::vector<double>{bottom, top}));
  EXPECT_EQ(run_op(OpKind::ReduceMin, {x}, over({1})).values, (std::vector<double>{bottom, 0}));
  EXPECT_EQ(run_op(OpKind::ReduceMax, {x}, over({0})).values, (std::vector<double>{top, 0, top}));
}

TEST(InterpreterReduce, F16SumRoundsOnceAtTheEnd) {
  // 1 + 2^-11 + 2^-11 = 1 + 2^-10 exactly; rounding after each add would lose both halves.
  HostTensor out = run_op(OpKind::ReduceSum, {tensor(DType::f16, {3}, {1, 0.00048828125, 0.00048828125})}, over({0}));
  EXPECT_EQ(out.values[0], 1.0009765625);
}

TEST(InterpreterReduce, F16MeanRoundsItsResult) {
  // 7/3 = 2.333...; f16 has a spacing of 2^-9 there: 1195 * 2^-9 = 2.333984375.
  HostTensor out = run_op(OpKind::ReduceMean, {tensor(DType::f16, {3}, {1, 2, 4})}, over({0}));
  EXPECT_EQ(out.values[0], 2.333984375);
}

TEST(InterpreterView, BroadcastARow) {
  HostTensor out = run_op(OpKind::Broadcast, {f32({3}, {1, 2, 3})}, {}, TensorType{DType::f32, {2, 3}});
  expect_values(out, {1, 2, 3, 1, 2, 3});
}

TEST(InterpreterView, BroadcastAColumn) {
  HostTensor out = run_op(OpKind::Broadcast, {f32({2, 1}, {1, 2})}, {}, TensorType{DType::f32, {2, 3}});
  expect_values(out, {1, 1, 1, 2, 2, 2});
}

TEST(InterpreterView, BroadcastAScalarAndANewLeadingAxis) {
  expect_values(run_op(OpKind::Broadcast, {f32({}, {7})}, {}, TensorType{DType::f32, {2, 2}}), {7, 7, 7, 7});
  // [3,1] -> [2,3,4]: out[i,j,k] = x[j].
  HostTensor out = run_op(OpKind::Broadcast, {f32({3, 1}, {1, 2, 3})}, {}, TensorType{DType::f32, {2, 3, 4}});
  std::vector<double> want;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k) want.push_back(j + 1);
  expect_values(out, want);
}

TEST(InterpreterView, BroadcastKeepsI1) {
  HostTensor out = run_op(OpKind::Broadcast, {tensor(DType::i1, {2, 1}, {1, 0})}, {}, TensorType{DType::i1, {2, 2}});
  EXPECT_EQ(out.type.dtype, DType::i1);
  EXPECT_EQ(out.values, (std::vector<double>{1, 1, 0, 0}));
}

TEST(InterpreterView, ReshapeKeepsRowMajorOrder) {
  HostTensor out = run_op(OpKind::Reshape, {two_by_three()}, {}, TensorType{DType::f32, {3, 2}});
  EXPECT_EQ(out.type.shape, (Shape{3, 2}));
  expect_values(out, {1, 2, 3, 4, 5, 6});
}

TEST(InterpreterView, Transpose2D) {
  HostTensor out = run_op(OpKind::Transpose, {two_by_three()}, attrs({{"perm", std::vector<int64_t>{1, 0}}}));
  EXPECT_EQ(out.type.shape, (Shape{3, 2}));
  expect_values(out, {1, 4, 2, 5, 3, 6});
}

TEST(InterpreterView, Transpose3DFollowsPerm) {
  // Result dim i is operand dim perm[i]: out[i,j,k] = x[j,k,i] = 100 j + 10 k + i.
  HostTensor out = run_op(OpKind::Transpose, {indexed({2, 3, 4})}, attrs({{"perm", std::vector<int64_t>{2, 0, 1}}}));
  ASSERT_EQ(out.type.shape, (Shape{4, 2, 3}));
  std::vector<double> want;
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 2; ++j)
      for (int k = 0; k < 3; ++k) want.push_back(100 * j + 10 * k + i);
  expect_values(out, want);
}

}  // namespace
}  // namespace kiln
