// The reference interpreter's logsumexp and var, against values worked out by hand
// (including inputs where a naive exp overflows or underflows), their type rule, and
// their round trip through the text form.
#include <gtest/gtest.h>

#include <cmath>

#include "interpreter_test_util.h"
#include "ir/error.h"
#include "ir/parser.h"
#include "ir/printer.h"

namespace kiln {
namespace {

using ir::OpKind;
using testing::attrs;
using testing::expect_values;
using testing::f32;
using testing::kInf;
using testing::kNaN;
using testing::over;
using testing::run_op;
using testing::tensor;


TEST(InterpreterLogSumExp, SmallRowsMatchTheDefinition) {
  // log(e + e^2 + e^3) = 3 + log(1 + e^-1 + e^-2); log(1 + 1) = log 2.
  HostTensor out = run_op(OpKind::ReduceLogSumExp, {f32({2, 3}, {1, 2, 3, 0, 0, -kInf})}, over({1}));
  EXPECT_EQ(out.type.shape, (Shape{2}));
  ASSERT_EQ(out.values.size(), 2u);
  EXPECT_NEAR(out.values[0], 3.40760596444438, 1e-6);
  EXPECT_NEAR(out.values[1], 0.69314718055994531, 1e-7);
}

TEST(InterpreterLogSumExp, LargeInputsDoNotOverflow) {
  // exp(1000) overflows a double; the answer is 1000 + log 3.
  HostTensor out = run_op(OpKind::ReduceLogSumExp, {f32({1, 3}, {1000, 1000, 1000})}, over({1}));
  ASSERT_EQ(out.values.size(), 1u);
  EXPECT_NEAR(out.values[0], 1001.0986122886681, 1e-4);
  EXPECT_TRUE(std::isfinite(out.values[0]));
}

TEST(InterpreterLogSumExp, VeryNegativeInputsDoNotUnderflow) {
  // exp(-1000) is 0 in a double; the answer is -1000 + log 2.
  HostTensor out = run_op(OpKind::ReduceLogSumExp, {f32({2}, {-1000, -1000})}, over({0}));
  ASSERT_EQ(out.values.size(), 1u);
  EXPECT_NEAR(out.values[0], -999.30685281944005, 1e-4);
}

TEST(InterpreterLogSumExp, InfinitiesAndNaN) {
  // All -inf: -inf (no NaN from -inf - -inf); a +inf: +inf; a NaN: NaN.
  HostTensor x = f32({3, 2}, {-kInf, -kInf, 1, kInf, kNaN, 1});
  expect_values(run_op(OpKind::ReduceLogSumExp, {x}, over({1})), {-kInf, kInf, kNaN});
}

TEST(InterpreterLogSumExp, OverColumnsWithKeepdim) {
  // Columns {0, 0} and {5, 5}: log 2 and 5 + log 2.
  HostTensor out = run_op(OpKind::ReduceLogSumExp, {f32({2, 2}, {0, 5, 0, 5})}, over({0}, true));
  EXPECT_EQ(out.type.shape, (Shape{1, 2}));
  ASSERT_EQ(out.values.size(), 2u);
  EXPECT_NEAR(out.values[0], 0.69314718055994531, 1e-7);
  EXPECT_NEAR(out.values[1], 5.69314718055994531, 1e-6);
}

TEST(InterpreterLogSumExp, F16RoundsOnceAtTheEnd) {
  // 1000 + log 2 = 1000.69...; f16 holds multiples of 0.5 there: 1000.5.
  HostTensor x = tensor(DType::f16, {2}, {1000, 1000});
  HostTensor out = run_op(OpKind::ReduceLogSumExp, {x}, over({0}));
  EXPECT_EQ(out.type.dtype, DType::f16);
  expect_values(out, {1000.5});
}

TEST(InterpreterVar, PopulationVarianceOfRows) {
  // {1, 2, 3, 4}: mean 2.5, squared deviations 2.25 + 0.25 + 0.25 + 2.25 = 5, / 4.
  // {7, 7, 7, 7}: 0.
  HostTensor out = run_op(OpKind::ReduceVar, {f32({2, 4}, {1, 2, 3, 4, 7, 7, 7, 7})}, over({1}));
  EXPECT_EQ(out.type.shape, (Shape{2}));
  expect_values(out, {1.25, 0});
}

TEST(InterpreterVar, LargeOffsetDoesNotCancel) {
  // 1e4 + {1, 2, 3, 4}: the same variance as {1, 2, 3, 4}, exactly.
  HostTensor out = run_op(OpKind::ReduceVar, {f32({4}, {10001, 10002, 10003, 10004})}, over({0}));
  expect_values(out, {1.25});
}

TEST(InterpreterVar, OverColumnsWithKeepdim) {
  // Columns {1, 3} (mean 2, var 1) and {2, 6} (mean 4, var 4).
  HostTensor out = run_op(OpKind::ReduceVar, {f32({2, 2}, {1, 2, 3, 6})}, over({0}, true));
  EXPECT_EQ(out.type.shape, (Shape{1, 2}));
  expect_values(out, {1, 4});
}

TEST(InterpreterVar, OverSeveralAxes) {
  // All six values {1..6}: mean 3.5, squared deviations 2 * (6.25 + 2.25 + 0.25) = 17.5, / 6.
  HostTensor out = run_op(OpKind::ReduceVar, {f32({2, 3}, {1, 2, 3, 4, 5, 6})}, over({0, 1}));
  EXPECT_EQ(out.type.shape, (Shape{}));
  ASSERT_EQ(out.values.size(), 1u);
  EXPECT_NEAR(out.values[0], 17.5 / 6, 1e-6);
}

TEST(OnlineReduceTypes, IntegersAreRejected) {
  ir::Graph g("f");
  ir::Value* x = g.add_input("x", TensorType{DType::i32, {4, 8}});
  for (OpKind op : {OpKind::ReduceLogSumExp, OpKind::ReduceVar}) {
    try {
      g.add(op, {x}, over({1}));
      ADD_FAILURE() << ir::op_name(op) << " accepted i32";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("floating point"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(std::string(ir::op_name(op))), std::string::npos) << e.what();
    }
  }
}

TEST(OnlineReduceTypes, ResultShapeFollowsAxesAndKeepdim) {
  ir::Graph g("f");
  ir::Value* x = g.add_input("x", TensorType{DType::bf16, {4, 8}});
  EXPECT_EQ(g.add(OpKind::ReduceLogSumExp, {x}, over({-1}, true))->type, (TensorType{DType::bf16, {4, 1}}));
  EXPECT_EQ(g.add(OpKind::ReduceVar, {x}, over({0}))->type, (TensorType{DType::bf16, {8}}));
  EXPECT_THROW(g.add(OpKind::ReduceVar, {x}, over({2})), Error);
}

TEST(OnlineReduceText, PrintsAndParsesBack) {
  const std::string text =
      "func @f(%x: f32[4,8]) -> (f32[4,1], f32[8]) {\n"
      "  %l = logsumexp %x {axis = [1], keepdim = true} : f32[4,1]\n"
      "  %v = var %x {axis = [0], keepdim = false} : f32[8]\n"
      "  return %l, %v\n"
      "}\n";
  ir::Graph g = ir::parse(text, "online_reduce_text");
  EXPECT_EQ(g.nodes().at(0)->op, OpKind::ReduceLogSumExp);
  EXPECT_EQ(g.nodes().at(1)->op, OpKind::ReduceVar);
  EXPECT_EQ(ir::print(g), text);
}

}  // namespace
}  // namespace kiln
