// The reference interpreter's element-wise ops, sources and per-op rounding,
// checked against values worked out by hand.
#include <gtest/gtest.h>

#include "interpreter_test_util.h"

namespace kiln {
namespace {

using ir::OpKind;
using testing::attrs;
using testing::expect_values;
using testing::f32;
using testing::kInf;
using testing::kNaN;
using testing::run_op;
using testing::tensor;

HostTensor i32(Shape s, std::vector<double> v) { return tensor(DType::i32, std::move(s), std::move(v)); }
HostTensor i1(Shape s, std::vector<double> v) { return tensor(DType::i1, std::move(s), std::move(v)); }

TEST(InterpreterUnary, NegAndAbs) {
  expect_values(run_op(OpKind::Neg, {f32({3}, {-1.5, 0, 2})}), {1.5, 0, -2});
  expect_values(run_op(OpKind::Abs, {f32({3}, {-1.5, 0, 2})}), {1.5, 0, 2});
}

TEST(InterpreterUnary, NegAndAbsOnI32) {
  HostTensor out = run_op(OpKind::Neg, {i32({2}, {7, -3})});
  EXPECT_EQ(out.type.dtype, DType::i32);
  expect_values(out, {-7, 3});
  expect_values(run_op(OpKind::Abs, {i32({2}, {7, -3})}), {7, 3});
}

TEST(InterpreterUnary, ExpAndLogFamily) {
  expect_values(run_op(OpKind::Exp, {f32({2}, {1, 0})}), {2.718281828459045, 1});
  expect_values(run_op(OpKind::Exp2, {f32({2}, {3, -1})}), {8, 0.5});
  expect_values(run_op(OpKind::Log, {f32({3}, {10, 1, 0})}), {2.302585092994046, 0, -kInf});
  expect_values(run_op(OpKind::Sqrt, {f32({2}, {2, 9})}), {1.4142135623730951, 3});
  expect_values(run_op(OpKind::Rsqrt, {f32({2}, {4, 0.25})}), {0.5, 2});
  expect_values(run_op(OpKind::Tanh, {f32({2}, {0.5, 0})}), {0.46211715726000974, 0});
}

TEST(InterpreterUnary, LogOfNegativeIsNaN) {
  expect_values(run_op(OpKind::Log, {f32({1}, {-1})}), {kNaN});
}

TEST(InterpreterUnary, SigmoidReluSilu) {
  expect_values(run_op(OpKind::Sigmoid, {f32({2}, {0, 2})}), {0.5, 0.8807970779778823});
  expect_values(run_op(OpKind::Relu, {f32({3}, {-1, 0, 2.5})}), {0, 0, 2.5});
  expect_values(run_op(OpKind::Silu, {f32({2}, {1, -2})}), {0.7310585786300049, -0.2384058440442351});
}

TEST(InterpreterUnary, GeluErf) {
  expect_values(run_op(OpKind::Gelu, {f32({3}, {1, -1, 0})}), {0.8413447460685429, -0.15865525393145707, 0});
}

TEST(InterpreterUnary, GeluErfKeepsItsTailWhereOnePlusErfCancels) {
  // 1 + erf(-10 / sqrt 2) is 0 in double; the result is -10 Phi(-10) = -7.6e-23.
  expect_values(run_op(OpKind::Gelu, {f32({2}, {-10, -8.375})}), {-7.619853024160593e-23, -2.3124996322324106e-16});
}

TEST(InterpreterUnary, GeluTanh) {
  // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) at x = 1 and 2.
  HostTensor out = run_op(OpKind::Gelu, {f32({2}, {1, 2})}, attrs({{"approximate", std::string("tanh")}}));
  expect_values(out, {0.8411919906082768, 1.954597694087775});
}

TEST(InterpreterUnary, GeluTanhKeepsItsTailWhereOnePlusTanhCancels) {
  // 1 + tanh(u) at x = -8 is 0 in double; x sigmoid(2 u) is -3.1e-21.
  HostTensor out = run_op(OpKind::Gelu, {f32({1}, {-8})}, attrs({{"approximate", std::string("tanh")}}));
  expect_values(out, {-3.107782937501113e-21});
}

TEST(InterpreterCast, FloatToI32TruncatesAndSaturates) {
  HostTensor out = run_op(OpKind::Cast, {f32({5}, {-2.7, 2.7, 0.5, 3e10, -3e10})}, {}, TensorType{DType::i32, {5}});
  EXPECT_EQ(out.type.dtype, DType::i32);
  EXPECT_EQ(out.values, (std::vector<double>{-2, 2, 0, 2147483647, -2147483648.0}));
}

TEST(InterpreterCast, ToI1IsNonZero) {
  HostTensor out = run_op(OpKind::Cast, {f32({3}, {-0.5, 0, 2})}, {}, TensorType{DType::i1, {3}});
  EXPECT_EQ(out.values, (std::vector<double>{1, 0, 1}));
  HostTensor from_int = run_op(OpKind::Cast, {i32({2}, {0, -4})}, {}, TensorType{DType::i1, {2}});
  EXPECT_EQ(from_int.values, (std::vector<double>{0, 1}));
}

TEST(InterpreterCast, I1ToNumbersIsZeroOrOne) {
  HostTensor as_f16 = run_op(OpKind::Cast, {i1({2}, {1, 0})}, {}, TensorType{DType::f16, {2}});
  EXPECT_EQ(as_f16.values, (std::vector<double>{1, 0}));
  HostTensor as_i32 = run_op(OpKind::Cast, {i1({2}, {0, 1})}, {}, TensorType{DType::i32, {2}});
  EXPECT_EQ(as_i32.values, (std::vector<double>{0, 1}));
}

TEST(InterpreterCast, RoundsToNarrowerFloats) {
  HostTensor to_f16 = run_op(OpKind::Cast, {f32({1}, {0.1})}, {}, TensorType{DType::f16, {1}});
  EXPECT_EQ(to_f16.values[0], 0.0999755859375);
  // 2^24 + 1 is an i32 but not an f32: it rounds to the even neighbour 2^24.
  HostTensor to_f32 = run_op(OpKind::Cast, {i32({1}, {16777217})}, {}, TensorType{DType::f32, {1}});
  EXPECT_EQ(to_f32.values[0], 16777216.0);
}

TEST(InterpreterBinary, ArithmeticOnSameShapes) {
  HostTensor a = f32({3}, {1, -2, 3}), b = f32({3}, {4, 5, -0.5});
  expect_values(run_op(OpKind::Add, {a, b}), {5, 3, 2.5});
  expect_values(run_op(OpKind::Sub, {a, b}), {-3, -7, 3.5});
  expect_values(run_op(OpKind::Mul, {a, b}), {4, -10, -1.5});
  expect_values(run_op(OpKind::Div, {a, b}), {0.25, -0.4, -6});
}

TEST(InterpreterBinary, BroadcastsAlongTheLastAxis) {
  HostTensor out = run_op(OpKind::Add, {f32({2, 3}, {1, 2, 3, 4, 5, 6}), f32({3}, {10, 20, 30})});
  EXPECT_EQ(out.type.shape, (Shape{2, 3}));
  expect_values(out, {11, 22, 33, 14, 25, 36});
}

TEST(InterpreterBinary, BroadcastsAlongTheFirstAxis) {
  HostTensor out = run_op(OpKind::Sub, {f32({2, 3}, {1, 2, 3, 4, 5, 6}), f32({2, 1}, {1, 10})});
  expect_values(out, {0, 1, 2, -6, -5, -4});
}

TEST(InterpreterBinary, BroadcastsTheLeftOperand) {
  HostTensor out = run_op(OpKind::Sub, {f32({3}, {10, 20, 30}), f32({2, 3}, {1, 2, 3, 4, 5, 6})});
  expect_values(out, {9, 18, 27, 6, 15, 24});
}

TEST(InterpreterBinary, BroadcastsBothOperandsIntoAnOuterProduct) {
  HostTensor out = run_op(OpKind::Mul, {f32({2, 1}, {2, 3}), f32({1, 3}, {1, 10, 100})});
  EXPECT_EQ(out.type.shape, (Shape{2, 3}));
  expect_values(out, {2, 20, 200, 3, 30, 300});
}

TEST(InterpreterBinary, BroadcastsAScalar) {
  expect_values(run_op(OpKind::Div, {f32({}, {12}), f32({2, 2}, {1, 2, 3, 4})}), {12, 6, 4, 3});
}

TEST(InterpreterBinary, BroadcastsAcrossRanks) {
  // [2,1,3] + [4,1] -> [2,4,3]: out[i,j,k] = a[i,0,k] + b[j,0].
  std::vector<double> av = {0, 1, 2, 3, 4, 5}, bv = {100, 200, 300, 400};
  HostTensor out = run_op(OpKind::Add, {f32({2, 1, 3}, av), f32({4, 1}, bv)});
  ASSERT_EQ(out.type.shape, (Shape{2, 4, 3}));
  std::vector<double> want;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 4; ++j)
      for (int k = 0; k < 3; ++k) want.push_back(av[i * 3 + k] + bv[j]);
  expect_values(out, want);
}

TEST(InterpreterBinary, I32DivisionTruncatesTowardZero) {
  HostTensor out = run_op(OpKind::Div, {i32({4}, {7, -7, 7, -7}), i32({4}, {2, 2, -2, -2})});
  EXPECT_EQ(out.values, (std::vector<double>{3, -3, -3, 3}));
}

TEST(InterpreterBinary, I32DivisionByZeroGivesZero) {
  HostTensor out = run_op(OpKind::Div, {i32({2}, {5, -5}), i32({2}, {0, 0})});
  EXPECT_EQ(out.values, (std::vector<double>{0, 0}));
}

TEST(InterpreterBinary, FloatDivisionByZeroFollowsIeee) {
  expect_values(run_op(OpKind::Div, {f32({3}, {1, -1, 0}), f32({3}, {0, 0, 0})}), {kInf, -kInf, kNaN});
}

TEST(InterpreterBinary, MaxAndMin) {
  HostTensor a = f32({3}, {1, 5, -2}), b = f32({3}, {3, 4, -2});
  expect_values(run_op(OpKind::Max, {a, b}), {3, 5, -2});
  expect_values(run_op(OpKind::Min, {a, b}), {1, 4, -2});
}

TEST(InterpreterBinary, MaxAndMinPropagateNaN) {
  HostTensor a = f32({2}, {kNaN, 1}), b = f32({2}, {1, kNaN});
  expect_values(run_op(OpKind::Max, {a, b}), {kNaN, kNaN});
  expect_values(run_op(OpKind::Min, {a, b}), {kNaN, kNaN});
}

TEST(InterpreterBinary, Pow) {
  expect_values(run_op(OpKind::Pow, {f32({3}, {2, 9, 4}), f32({3}, {10, 0.5, -1})}), {1024, 3, 0.25});
}

TEST(InterpreterBinary, I32ArithmeticStaysInteger) {
  HostTensor out = run_op(OpKind::Mul, {i32({2}, {-3, 4}), i32({2}, {5, 6})});
  EXPECT_EQ(out.type.dtype, DType::i32);
  EXPECT_EQ(out.values, (std::vector<double>{-15, 24}));
}

TEST(InterpreterCompare, AllComparisons) {
  HostTensor a = f32({3}, {1, 2, 3}), b = f32({3}, {2, 2, 2});
  HostTensor lt = run_op(OpKind::Lt, {a, b});
  EXPECT_EQ(lt.type, (TensorType{DType::i1, {3}}));
  EXPECT_EQ(lt.values, (std::vector<double>{1, 0, 0}));
  EXPECT_EQ(run_op(OpKind::Le, {a, b}).values, (std::vector<double>{1, 1, 0}));
  EXPECT_EQ(run_op(OpKind::Gt, {a, b}).values, (std::vector<double>{0, 0, 1}));
  EXPECT_EQ(run_op(OpKind::Ge, {a, b}).values, (std::vector<double>{0, 1, 1}));
  EXPECT_EQ(run_op(OpKind::Eq, {a, b}).values, (std::vector<double>{0, 1, 0}));
  EXPECT_EQ(run_op(OpKind::Ne, {a, b}).values, (std::vector<double>{1, 0, 1}));
}

TEST(InterpreterCompare, NaNComparesUnequal) {
  HostTensor a = f32({2}, {kNaN, kNaN}), b = f32({2}, {kNaN, 1});
  EXPECT_EQ(run_op(OpKind::Eq, {a, b}).values, (std::vector<double>{0, 0}));
  EXPECT_EQ(run_op(OpKind::Ne, {a, b}).values, (std::vector<double>{1, 1}));
  EXPECT_EQ(run_op(OpKind::Lt, {a, b}).values, (std::vector<double>{0, 0}));
  EXPECT_EQ(run_op(OpKind::Ge, {a, b}).values, (std::vector<double>{0, 0}));
}

TEST(InterpreterCompare, I32AndI1Operands) {
  EXPECT_EQ(run_op(OpKind::Gt, {i32({3}, {-1, 0, 5}), i32({}, {0})}).values, (std::vector<double>{0, 0, 1}));
  EXPECT_EQ(run_op(OpKind::Eq, {i1({4}, {0, 0, 1, 1}), i1({4}, {0, 1, 0, 1})}).values,
            (std::vector<double>{1, 0, 0, 1}));
}

TEST(InterpreterSelect, PicksByConditionWithBroadcasting) {
  // cond [2,1] picks a whole row of a [2,3] or the scalar b.
  HostTensor out = run_op(OpKind::Select, {i1({2, 1}, {1, 0}), f32({2, 3}, {1, 2, 3, 4, 5, 6}), f32({}, {-1})});
  EXPECT_EQ(out.type, (TensorType{DType::f32, {2, 3}}));
  expect_values(out, {1, 2, 3, -1, -1, -1});
}

TEST(InterpreterSelect, ConditionPerColumn) {
  HostTensor out = run_op(OpKind::Select, {i1({3}, {0, 1, 0}), i32({2, 3}, {1, 2, 3, 4, 5, 6}), i32({2, 1}, {7, 8})});
  EXPECT_EQ(out.values, (std::vector<double>{7, 2, 7, 8, 5, 8}));
}

TEST(InterpreterRounding, F16AddRoundsItsResult) {
  // 1 + 3 * 2^-12 lies between the f16 neighbours 1 and 1 + 2^-10, nearer the upper one.
  HostTensor out = run_op(OpKind::Add, {tensor(DType::f16, {1}, {1}), tensor(DType::f16, {1}, {0.000732421875})});
  EXPECT_EQ(out.type.dtype, DType::f16);
  EXPECT_EQ(out.values[0], 1.0009765625);
}

TEST(InterpreterRounding, Bf16MulRoundsTiesToEven) {
  // 1.5 * 1.0078125 = 1.51171875, halfway between 1.5078125 (odd) and 1.515625 (even).
  HostTensor out = run_op(OpKind::Mul, {tensor(DType::bf16, {1}, {1.5}), tensor(DType::bf16, {1}, {1.0078125})});
  EXPECT_EQ(out.values[0], 1.515625);
}

TEST(InterpreterRounding, F16OverflowGivesInfinity) {
  HostTensor out = run_op(OpKind::Add, {tensor(DType::f16, {1}, {60000}), tensor(DType::f16, {1}, {10000})});
  EXPECT_EQ(out.values[0], kInf);
}

TEST(InterpreterRounding, EachOpOfAChainRoundsItsOwnResult) {
  // (a + b) - a in f16: the add stores 1 + 2^-10, so the sub gives 2^-10, not b.
  ir::Graph g("chain");
  TensorType t{DType::f16, {1}};
  ir::Value* a = g.add_input("a", t);
  ir::Value* b = g.add_input("b", t);
  g.add_output(g.add(OpKind::Sub, {g.add(OpKind::Add, {a, b}), a}));
  auto outs = ir::evaluate(g, {tensor(DType::f16, {1}, {1}), tensor(DType::f16, {1}, {0.000732421875})});
  EXPECT_EQ(outs[0].values[0], 0.0009765625);
}

TEST(InterpreterSource, ConstSplatsRoundedValue) {
  HostTensor out = run_op(OpKind::Const, {}, attrs({{"value", 0.1}}), TensorType{DType::f16, {2, 2}});
  EXPECT_EQ(out.type, (TensorType{DType::f16, {2, 2}}));
  EXPECT_EQ(out.values, (std::vector<double>(4, 0.0999755859375)));
}

TEST(InterpreterSource, ConstScalarAndI32) {
  EXPECT_EQ(run_op(OpKind::Const, {}, attrs({{"value", 0.5}}), TensorType{DType::f32, {}}).values,
            (std::vector<double>{0.5}));
  EXPECT_EQ(run_op(OpKind::Const, {}, attrs({{"value", -2.9}}), TensorType{DType::i32, {3}}).values,
            (std::vector<double>{-2, -2, -2}));
}

TEST(InterpreterSource, IotaAlongEachAxis) {
  HostTensor cols = run_op(OpKind::Iota, {}, attrs({{"axis", int64_t{1}}}), TensorType{DType::i32, {2, 3}});
  EXPECT_EQ(cols.values, (std::vector<double>{0, 1, 2, 0, 1, 2}));
  HostTensor rows = run_op(OpKind::Iota, {}, attrs({{"axis", int64_t{0}}}), TensorType{DType::i32, {2, 3}});
  EXPECT_EQ(rows.values, (std::vector<double>{0, 0, 0, 1, 1, 1}));
}

TEST(InterpreterSource, IotaMiddleAxisAsFloat) {
  HostTensor out = run_op(OpKind::Iota, {}, attrs({{"axis", int64_t{-2}}}), TensorType{DType::f32, {2, 3, 2}});
  EXPECT_EQ(out.values, (std::vector<double>{0, 0, 1, 1, 2, 2, 0, 0, 1, 1, 2, 2}));
}

TEST(InterpreterSource, IotaRoundsToTheDtype) {
  // 2049 is not an f16: it rounds to the even neighbour 2048.
  HostTensor out = run_op(OpKind::Iota, {}, attrs({{"axis", int64_t{0}}}), TensorType{DType::f16, {2050}});
  EXPECT_EQ(out.values[2047], 2047.0);
  EXPECT_EQ(out.values[2049], 2048.0);
}

}  // namespace
}  // namespace kiln
