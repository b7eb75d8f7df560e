// decompose: each composite becomes primitives that compute the same numbers
// as the composite does in the reference interpreter.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/interpreter.h"
#include "ir/printer.h"
#include "ir/tensor.h"
#include "passes/pass.h"

using namespace kiln;
using ir::OpKind;

namespace {

ir::Attrs attrs(std::initializer_list<std::pair<std::string, ir::AttrValue>> items) {
  ir::Attrs a;
  for (const auto& [name, value] : items) a.set(name, value);
  return a;
}

// A graph of one composite applied to inputs of the given types.
ir::Graph composite(OpKind op, const std::vector<TensorType>& inputs, const ir::Attrs& a) {
  ir::Graph g("f");
  std::vector<ir::Value*> operands;
  for (size_t i = 0; i < inputs.size(); ++i) operands.push_back(g.add_input("x" + std::to_string(i), inputs[i]));
  ir::Value* y = g.add(op, operands, a);
  y->name = "y";
  g.add_output(y);
  return g;
}

bool decompose(ir::Graph& g) {
  bool changed = passes::create_pass("decompose")->run(g);
  ir::verify(g);
  return changed;
}

double relative_l2(const HostTensor& got, const HostTensor& want) {
  double diff = 0, norm = 0;
  for (size_t i = 0; i < want.values.size(); ++i) {
    diff += (got.values[i] - want.values[i]) * (got.values[i] - want.values[i]);
    norm += want.values[i] * want.values[i];
  }
  return std::sqrt(diff / norm);
}

// Decomposes a copy of `g` and compares both graphs on random inputs.
void expect_same_numbers(const ir::Graph& g, double tolerance = 1e-6) {
  ir::Graph d = g.clone();
  ASSERT_TRUE(decompose(d));
  for (const ir::Node* n : d.nodes())
    EXPECT_NE(ir::op_info(n->op).category, ir::OpCategory::Composite) << ir::print(d);
  std::vector<HostTensor> inputs;
  for (size_t i = 0; i < g.inputs().size(); ++i) inputs.push_back(random_tensor(g.inputs()[i]->type, 17 + i));
  HostTensor want = ir::evaluate(g, inputs).at(0), got = ir::evaluate(d, inputs).at(0);
  ASSERT_EQ(got.type, want.type);
  for (double v : got.values) ASSERT_FALSE(std::isnan(v)) << ir::print(d);
  EXPECT_LT(relative_l2(got, want), tolerance) << ir::print(d);
}

std::vector<OpKind> ops_of(const ir::Graph& g) {
  std::vector<OpKind> ops;
  for (const ir::Node* n : g.nodes()) ops.push_back(n->op);
  return ops;
}

const TensorType f32_4x33{DType::f32, {4, 33}};

}  // namespace

TEST(Decompose, SoftmaxMatchesTheComposite) {
  expect_same_numbers(composite(OpKind::Softmax, {f32_4x33}, attrs({{"axis", int64_t{-1}}})));
}

TEST(Decompose, SoftmaxAlongTheFirstAxisMatches) {
  expect_same_numbers(composite(OpKind::Softmax, {{DType::f32, {5, 3, 7}}}, attrs({{"axis", int64_t{0}}})));
}

TEST(Decompose, LogSoftmaxMatchesTheComposite) {
  expect_same_numbers(composite(OpKind::LogSoftmax, {f32_4x33}, attrs({{"axis", int64_t{-1}}})));
  expect_same_numbers(composite(OpKind::LogSoftmax, {{DType::f32, {5, 3, 7}}}, attrs({{"axis", int64_t{1}}})));
}

TEST(Decompose, LayerNormMatchesTheComposite) {
  TensorType w{DType::f32, {33}};
  expect_same_numbers(composite(OpKind::LayerNorm, {f32_4x33, w, w}, attrs({{"eps", 1e-5}})));
}

TEST(Decompose, LayerNormAlongAMiddleAxisMatches) {
  TensorType w{DType::f32, {6}};
  expect_same_numbers(
      composite(OpKind::LayerNorm, {{DType::f32, {3, 6, 5}}, w, w}, attrs({{"axis", int64_t{1}}, {"eps", 0.5}})));
}

TEST(Decompose, RmsNormMatchesTheComposite) {
  expect_same_numbers(composite(OpKind::RmsNorm, {f32_4x33, {DType::f32, {33}}}, {}));
  expect_same_numbers(
      composite(OpKind::RmsNorm, {{DType::f32, {4, 9, 2}}, {DType::f32, {4}}}, attrs({{"axis", int64_t{0}}})));
}

TEST(Decompose, AttentionMatchesTheComposite) {
  TensorType qkv{DType::f32, {2, 3, 10, 16}};
  expect_same_numbers(composite(OpKind::Attention, {qkv, qkv, qkv}, attrs({{"scale", 0.25}})));
}

TEST(Decompose, CausalAttentionMatchesTheComposite) {
  TensorType q{DType::f32, {2, 7, 16}}, k{DType::f32, {2, 11, 16}}, v{DType::f32, {2, 11, 5}};
  expect_same_numbers(composite(OpKind::Attention, {q, k, v}, attrs({{"scale", 0.25}, {"causal", true}})));
}

TEST(Decompose, SoftmaxBecomesMaxSubExpSumDiv) {
  ir::Graph g = composite(OpKind::Softmax, {{DType::f32, {2, 8}}}, {});
  decompose(g);
  EXPECT_EQ(ir::print(g),
            "func @f(%x0: f32[2,8]) -> (f32[2,8]) {\n"
            "  %0 = max %x0 {axis = [1], keepdim = true} : f32[2,1]\n"
            "  %1 = sub %x0, %0 : f32[2,8]\n"
            "  %2 = exp %1 : f32[2,8]\n"
            "  %3 = sum %2 {axis = [1], keepdim = true} : f32[2,1]\n"
            "  %y = div %2, %3 : f32[2,8]\n"
            "  return %y\n"
            "}\n");
}

TEST(Decompose, RmsNormUsesEpsAndTheWeight) {
  ir::Graph g = composite(OpKind::RmsNorm, {{DType::f32, {2, 8}}, {DType::f32, {8}}}, attrs({{"eps", 0.25}}));
  decompose(g);
  EXPECT_EQ(ir::print(g),
            "func @f(%x0: f32[2,8], %x1: f32[8]) -> (f32[2,8]) {\n"
            "  %0 = mul %x0, %x0 : f32[2,8]\n"
            "  %1 = mean %0 {axis = [1], keepdim = true} : f32[2,1]\n"
            "  %2 = const 0.25 : f32[]\n"
            "  %3 = add %1, %2 : f32[2,1]\n"
            "  %4 = rsqrt %3 : f32[2,1]\n"
            "  %5 = mul %x0, %4 : f32[2,8]\n"
            "  %y = mul %5, %x1 : f32[2,8]\n"
            "  return %y\n"
            "}\n");
}

TEST(Decompose, NormWeightAlongAnEarlierAxisIsReshaped) {
  TensorType w{DType::f32, {6}};
  ir::Graph g = composite(OpKind::LayerNorm, {{DType::f32, {3, 6, 5}}, w, w}, attrs({{"axis", int64_t{1}}}));
  decompose(g);
  int reshapes = 0;
  for (const ir::Node* n : g.nodes())
    if (n->op == OpKind::Reshape) {
      ++reshapes;
      EXPECT_EQ(n->result->type, (TensorType{DType::f32, {6, 1}}));
    }
  EXPECT_EQ(reshapes, 2);  // the weight and the bias
}

TEST(Decompose, CausalMaskComparesColumnAndRowIotas) {
  TensorType t{DType::f32, {4, 8}};
  ir::Graph g = composite(OpKind::Attention, {t, t, t}, attrs({{"scale", 0.5}, {"causal", true}}));
  decompose(g);
  const ir::Node* select = nullptr;
  for (const ir::Node* n : g.nodes())
    if (n->op == OpKind::Select) select = n;
  ASSERT_NE(select, nullptr) << ir::print(g);
  const ir::Node* mask = select->operands[0]->producer;
  ASSERT_EQ(mask->op, OpKind::Gt);
  EXPECT_EQ(mask->operands[0]->producer->op, OpKind::Iota);
  EXPECT_EQ(mask->operands[0]->producer->attrs.get_int("axis"), 1);  // column index
  EXPECT_EQ(mask->operands[1]->producer->attrs.get_int("axis"), 0);  // row index
  EXPECT_EQ(mask->operands[0]->type, (TensorType{DType::i32, {4, 4}}));
  const ir::Node* fill = select->operands[1]->producer;
  ASSERT_EQ(fill->op, OpKind::Const);
  EXPECT_TRUE(std::isinf(fill->attrs.get_float("value")) && fill->attrs.get_float("value") < 0);
}

TEST(Decompose, HalfPrecisionStaysInItsDtypeWithoutCasts) {
  TensorType x{DType::f16, {4, 32}}, w{DType::f16, {32}};
  ir::Graph g = composite(OpKind::LayerNorm, {x, w, w}, {});
  decompose(g);
  for (const ir::Node* n : g.nodes()) {
    EXPECT_NE(n->op, OpKind::Cast);
    EXPECT_EQ(n->result->type.dtype, DType::f16) << ir::print_node(*n, ir::value_names(g));
  }
}

TEST(Decompose, NonCausalAttentionIsMatmulScaleSoftmaxMatmul) {
  // The scores and their softmax in f32 (q and k widened first), the probabilities
  // rounded to v's dtype for the second product.
  TensorType t{DType::bf16, {4, 8}};
  ir::Graph g = composite(OpKind::Attention, {t, t, t}, attrs({{"scale", 0.5}}));
  decompose(g);
  EXPECT_EQ(ops_of(g), (std::vector<OpKind>{OpKind::Cast, OpKind::Cast, OpKind::Matmul, OpKind::Const, OpKind::Mul,
                                            OpKind::ReduceMax, OpKind::Sub, OpKind::Exp, OpKind::ReduceSum,
                                            OpKind::Div, OpKind::Cast, OpKind::Matmul}));
  const ir::Node* qk = g.nodes()[2];
  EXPECT_TRUE(qk->attrs.get_bool("transpose_b"));
  EXPECT_EQ(qk->result->type, (TensorType{DType::f32, {4, 4}}));
  EXPECT_EQ(g.outputs()[0]->type, t);
  EXPECT_EQ(g.outputs()[0]->name, "y");
}

TEST(Decompose, F32AttentionNeedsNoCasts) {
  TensorType t{DType::f32, {4, 8}};
  ir::Graph g = composite(OpKind::Attention, {t, t, t}, attrs({{"scale", 0.5}}));
  decompose(g);
  for (const ir::Node* n : g.nodes()) EXPECT_NE(n->op, OpKind::Cast);
}

TEST(Decompose, PrimitivesTakeThePlaceOfTheComposite) {
  ir::Graph g("f");
  ir::Value* x = g.add_input("x", {DType::f32, {2, 8}});
  ir::Value* s = g.add(OpKind::Softmax, {g.add(OpKind::Exp, {x})});
  ir::Value* y = g.add(OpKind::Neg, {s});
  g.add_output(y);
  decompose(g);  // verifies the order
  EXPECT_EQ(g.nodes().front()->op, OpKind::Exp);
  EXPECT_EQ(g.nodes().back()->op, OpKind::Neg);
  EXPECT_EQ(g.nodes().back()->operands[0]->producer->op, OpKind::Div);
}

TEST(Decompose, GraphWithoutCompositesIsUnchanged) {
  ir::Graph g("f");
  ir::Value* x = g.add_input("x", {DType::f32, {8}});
  g.add_output(g.add(OpKind::Exp, {x}));
  std::string before = ir::print(g);
  EXPECT_FALSE(decompose(g));
  EXPECT_EQ(ir::print(g), before);
}
