// The reference interpreter's driver: input checking, several outputs, long chains
// whose intermediates are freed as they go, and a few ops on million-element tensors.
#include <gtest/gtest.h>

#include <string>

#include "interpreter_test_util.h"
#include "ir/error.h"

namespace kiln {
namespace {

using ir::OpKind;
using testing::tensor;

const TensorType kF32x23{DType::f32, {2, 3}};

// %x + %y on two f32[2,3] inputs.
ir::Graph add_graph() {
  ir::Graph g("adder");
  ir::Value* x = g.add_input("x", kF32x23);
  ir::Value* y = g.add_input("y", kF32x23);
  g.add_output(g.add(OpKind::Add, {x, y}));
  return g;
}

HostTensor ones(const TensorType& t) { return HostTensor(t, std::vector<double>(t.numel(), 1.0)); }

std::string error_of(const ir::Graph& g, const std::vector<HostTensor>& inputs) {
  try {
    ir::evaluate(g, inputs);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(InterpreterInputs, WrongCountIsAnError) {
  std::string msg = error_of(add_graph(), {ones(kF32x23)});
  EXPECT_NE(msg.find("takes 2 inputs, got 1"), std::string::npos) << msg;
}

TEST(InterpreterInputs, WrongDtypeNamesInputAndTypes) {
  std::string msg = error_of(add_graph(), {ones(kF32x23), ones({DType::f16, {2, 3}})});
  EXPECT_NE(msg.find("%y"), std::string::npos) << msg;
  EXPECT_NE(msg.find("expects f32[2,3]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("got f16[2,3]"), std::string::npos) << msg;
}

TEST(InterpreterInputs, WrongShapeNamesInputAndTypes) {
  std::string msg = error_of(add_graph(), {ones({DType::f32, {3, 2}}), ones(kF32x23)});
  EXPECT_NE(msg.find("%x"), std::string::npos) << msg;
  EXPECT_NE(msg.find("expects f32[2,3], got f32[3,2]"), std::string::npos) << msg;
}

TEST(InterpreterInputs, WrongValueCountIsAnError) {
  HostTensor short_one = ones(kF32x23);
  short_one.values.pop_back();
  std::string msg = error_of(add_graph(), {ones(kF32x23), short_one});
  EXPECT_NE(msg.find("holds 5 values"), std::string::npos) << msg;
}

TEST(InterpreterOutputs, SeveralOutputsInTheirOrder) {
  // Outputs: x * 2, the input x itself, and x * 2 again.
  ir::Graph g("multi");
  ir::Value* x = g.add_input("x", {DType::f32, {2}});
  ir::Value* doubled = g.add(OpKind::Mul, {x, g.constant(2, DType::f32)});
  g.set_outputs({doubled, x, doubled});
  auto outs = ir::evaluate(g, {tensor(DType::f32, {2}, {1.5, -3})});
  ASSERT_EQ(outs.size(), 3u);
  EXPECT_EQ(outs[0].values, (std::vector<double>{3, -6}));
  EXPECT_EQ(outs[1].values, (std::vector<double>{1.5, -3}));
  EXPECT_EQ(outs[2].values, (std::vector<double>{3, -6}));
}

TEST(InterpreterOutputs, IntermediateReadAfterLaterNodes) {
  // a = x + 1; b = a * a; c = b - a: a stays alive until c has run.
  ir::Graph g("reuse");
  ir::Value* x = g.add_input("x", {DType::f32, {3}});
  ir::Value* a = g.add(OpKind::Add, {x, g.constant(1, DType::f32)});
  ir::Value* b = g.add(OpKind::Mul, {a, a});
  g.add_output(g.add(OpKind::Sub, {b, a}));
  auto outs = ir::evaluate(g, {tensor(DType::f32, {3}, {0, 1, 2})});
  EXPECT_EQ(outs[0].values, (std::vector<double>{0, 2, 6}));
}

TEST(InterpreterOutputs, DeadNodesDoNotDisturbTheResult) {
  ir::Graph g("dead");
  ir::Value* x = g.add_input("x", {DType::f32, {2}});
  g.add(OpKind::Exp, {x});  // nothing reads it
  g.add_output(g.add(OpKind::Neg, {x}));
  auto outs = ir::evaluate(g, {tensor(DType::f32, {2}, {1, 2})});
  EXPECT_EQ(outs[0].values, (std::vector<double>{-1, -2}));
}

TEST(InterpreterOutputs, LongChainOfAdds) {
  ir::Graph g("chain");
  ir::Value* v = g.add_input("x", {DType::i32, {4}});
  ir::Value* one = g.constant(1, DType::i32);
  for (int i = 0; i < 200; ++i) v = g.add(OpKind::Add, {v, one});
  g.add_output(v);
  auto outs = ir::evaluate(g, {tensor(DType::i32, {4}, {0, 1, -5, 7})});
  EXPECT_EQ(outs[0].values, (std::vector<double>{200, 201, 195, 207}));
}

TEST(InterpreterLarge, MillionElementChain) {
  // relu(x * 2 - 1) on 1000003 elements, x[i] = i mod 7, checked at a few points.
  const int64_t n = 1000003;
  ir::Graph g("big_chain");
  ir::Value* x = g.add_input("x", {DType::f32, {n}});
  ir::Value* y = g.add(OpKind::Sub, {g.add(OpKind::Mul, {x, g.constant(2, DType::f32)}), g.constant(1, DType::f32)});
  g.add_output(g.add(OpKind::Relu, {y}));
  std::vector<double> xs(n);
  for (int64_t i = 0; i < n; ++i) xs[i] = static_cast<double>(i % 7);
  auto outs = ir::evaluate(g, {tensor(DType::f32, {n}, std::move(xs))});
  ASSERT_EQ(outs[0].values.size(), static_cast<size_t>(n));
  EXPECT_EQ(outs[0].values[0], 0.0);       // relu(-1)
  EXPECT_EQ(outs[0].values[1], 1.0);
  EXPECT_EQ(outs[0].values[n - 1], 5.0);  // (n - 1) mod 7 = 3
}

TEST(InterpreterLarge, WideSoftmaxRowsSumToOne) {
  // 64 rows of 65537 equal values: every probability is 1 / 65537.
  ir::Graph g("wide_softmax");
  ir::Value* x = g.add_input("x", {DType::f32, {64, 65537}});
  g.add_output(g.add(OpKind::Softmax, {x}));
  auto outs = ir::evaluate(g, {HostTensor(TensorType{DType::f32, {64, 65537}}, std::vector<double>(64 * 65537, 0.5))});
  EXPECT_EQ(outs[0].values.front(), round_to(DType::f32, 1.0 / 65537));
  EXPECT_EQ(outs[0].values.back(), round_to(DType::f32, 1.0 / 65537));
}

}  // namespace
}  // namespace kiln
