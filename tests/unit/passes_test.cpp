// cse and dce on small graphs built in C++, and the default pipeline end to end
// (decompose and simplify have their own files).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/interpreter.h"
#include "ir/printer.h"
#include "ir/tensor.h"
#include "passes/pass.h"
#include "passes/pass_manager.h"

using namespace kiln;
using ir::OpKind;
using ir::Value;

namespace {

bool run_pass(const char* name, ir::Graph& g) {
  bool changed = passes::create_pass(name)->run(g);
  ir::verify(g);
  return changed;
}

ir::Attrs attrs(std::initializer_list<std::pair<std::string, ir::AttrValue>> items) {
  ir::Attrs a;
  for (const auto& [name, value] : items) a.set(name, value);
  return a;
}

std::vector<OpKind> ops_of(const ir::Graph& g) {
  std::vector<OpKind> ops;
  for (const ir::Node* n : g.nodes()) ops.push_back(n->op);
  return ops;
}

const TensorType f32_8{DType::f32, {8}};
const TensorType f32_4x8{DType::f32, {4, 8}};

}  // namespace

TEST(CSE, MergesIdenticalNodesKeepingTheFirst) {
  ir::Graph g("f");
  Value* x = g.add_input("x", f32_8);
  Value* a = g.add(OpKind::Exp, {x});
  a->name = "a";
  Value* b = g.add(OpKind::Exp, {x});
  b->name = "b";
  Value* y = g.add(OpKind::Add, {a, b});
  y->name = "y";
  g.add_output(y);
  EXPECT_TRUE(run_pass("cse", g));
  EXPECT_EQ(ir::print(g),
            "func @f(%x: f32[8]) -> (f32[8]) {\n"
            "  %a = exp %x : f32[8]\n"
            "  %y = add %a, %a : f32[8]\n"
            "  return %y\n"
            "}\n");
}

TEST(CSE, NameMovesToAnUnnamedSurvivor) {
  ir::Graph g("f");
  Value* x = g.add_input("x", f32_8);
  Value* a = g.add(OpKind::Neg, {x});
  Value* b = g.add(OpKind::Neg, {x});
  b->name = "b";
  g.add_output(a);
  g.add_output(b);
  EXPECT_TRUE(run_pass("cse", g));
  ASSERT_EQ(g.num_nodes(), 1u);
  EXPECT_EQ(g.outputs()[0], g.outputs()[1]);
  EXPECT_EQ(g.outputs()[0]->name, "b");
}

TEST(CSE, ChainsCollapseInOneRun) {
  ir::Graph g("f");
  Value* x = g.add_input("x", f32_8);
  Value* a = g.add(OpKind::Neg, {g.add(OpKind::Exp, {x})});
  Value* b = g.add(OpKind::Neg, {g.add(OpKind::Exp, {x})});
  g.add_output(g.add(OpKind::Mul, {a, b}));
  EXPECT_TRUE(run_pass("cse", g));
  EXPECT_EQ(ops_of(g), (std::vector<OpKind>{OpKind::Exp, OpKind::Neg, OpKind::Mul}));
}

TEST(CSE, EqualConstantsMerge) {
  ir::Graph g("f");
  Value* x = g.add_input("x", f32_8);
  Value* a = g.add(OpKind::Mul, {x, g.constant(0.5, DType::f32)});
  g.add_output(g.add(OpKind::Add, {a, g.constant(0.5, DType::f32)}));
  EXPECT_TRUE(run_pass("cse", g));
  EXPECT_EQ(ops_of(g), (std::vector<OpKind>{OpKind::Const, OpKind::Mul, OpKind::Add}));
}

TEST(CSE, ConstantsOfOtherValueOrTypeStay) {
  ir::Graph g("f");
  Value* x = g.add_input("x", f32_8);
  Value* a = g.add(OpKind::Add, {x, g.constant(0.0, DType::f32)});
  Value* b = g.add(OpKind::Add, {a, g.constant(-0.0, DType::f32)});      // 1 / -0 is -inf: not the same
  Value* c = g.add(OpKind::Add, {b, g.constant(0.0, DType::f32, {8})});  // another shape
  Value* h = g.add(OpKind::Cast, {c}, {}, TensorType{DType::f16, {8}});
  g.add_output(g.add(OpKind::Add, {h, g.constant(0.0, DType::f16)}));    // another dtype
  EXPECT_FALSE(run_pass("cse", g));
}

TEST(CSE, DifferentAttributesStay) {
  ir::Graph g("f");
  Value* x = g.add_input("x", f32_4x8);
  Value* rows = g.add(OpKind::ReduceSum, {x}, attrs({{"axis", std::vector<int64_t>{1}}, {"keepdim", true}}));
  Value* cols = g.add(OpKind::ReduceSum, {x}, attrs({{"axis", std::vector<int64_t>{0}}, {"keepdim", true}}));
  g.add_output(g.add(OpKind::Add, {rows, cols}));
  EXPECT_FALSE(run_pass("cse", g));
}

TEST(CSE, DifferentResultTypesStay) {
  ir::Graph g("f");
  Value* x = g.add_input("x", f32_8);
  g.add_output(g.add(OpKind::Cast, {x}, {}, TensorType{DType::f16, {8}}));
  g.add_output(g.add(OpKind::Cast, {x}, {}, TensorType{DType::bf16, {8}}));
  EXPECT_FALSE(run_pass("cse", g));
  EXPECT_EQ(g.num_nodes(), 2u);
}

TEST(CSE, OperandOrderMatters) {
  ir::Graph g("f");
  Value* x = g.add_input("x", f32_8);
  Value* w = g.add_input("w", f32_8);
  g.add_output(g.add(OpKind::Sub, {x, w}));
  g.add_output(g.add(OpKind::Sub, {w, x}));
  EXPECT_FALSE(run_pass("cse", g));
}

TEST(DCE, RemovesNodesNoOutputNeeds) {
  ir::Graph g("f");
  Value* x = g.add_input("x", f32_8);
  Value* dead = g.add(OpKind::Exp, {x});
  g.add(OpKind::Neg, {dead});
  Value* y = g.add(OpKind::Abs, {x});
  y->name = "y";
  g.add_output(y);
  EXPECT_TRUE(run_pass("dce", g));
  EXPECT_EQ(ir::print(g),
            "func @f(%x: f32[8]) -> (f32[8]) {\n"
            "  %y = abs %x : f32[8]\n"
            "  return %y\n"
            "}\n");
}

TEST(DCE, KeepsUnusedInputs) {
  ir::Graph g("f");
  Value* x = g.add_input("x", f32_8);
  g.add_input("unused", f32_4x8);
  g.add(OpKind::Exp, {x});
  g.add_output(x);
  EXPECT_TRUE(run_pass("dce", g));
  EXPECT_EQ(g.num_nodes(), 0u);
  EXPECT_EQ(g.inputs().size(), 2u);
}

TEST(DCE, NothingDeadReportsNoChange) {
  ir::Graph g("f");
  Value* x = g.add_input("x", f32_8);
  g.add_output(g.add(OpKind::Exp, {x}));
  EXPECT_FALSE(run_pass("dce", g));
  EXPECT_EQ(g.num_nodes(), 1u);
}

TEST(DefaultPipeline, KeepsTheNumbersOfAMixedGraph) {
  auto build = [](ir::Graph& g) {
    Value* x = g.add_input("x", f32_4x8);
    Value* w = g.add_input("w", f32_8);
    Value* one = g.add(OpKind::Add, {g.constant(0.25, DType::f32), g.constant(0.75, DType::f32)});
    Value* h = g.add(OpKind::Mul, {g.add(OpKind::Neg, {g.add(OpKind::Neg, {x})}), one});
    Value* n1 = g.add(OpKind::RmsNorm, {h, w});
    Value* n2 = g.add(OpKind::RmsNorm, {h, w});
    Value* s = g.add(OpKind::Softmax, {g.add(OpKind::Add, {n1, n2})});
    g.add(OpKind::Exp, {s});  // unused
    g.add_output(g.add(OpKind::LogSoftmax, {s}, attrs({{"axis", int64_t{0}}})));
  };
  ir::Graph original("f"), lowered("f");
  build(original);
  build(lowered);
  auto pipeline = passes::split_pipeline(passes::kDefaultPipeline);
  for (const std::string& name : pipeline) run_pass(name.c_str(), lowered);
  for (const ir::Node* n : lowered.nodes()) {
    EXPECT_NE(ir::op_info(n->op).category, ir::OpCategory::Composite);
    EXPECT_NE(n->op, OpKind::Neg);
  }
  std::vector<HostTensor> in = {random_tensor(f32_4x8, 1), random_tensor(f32_8, 2)};
  HostTensor want = ir::evaluate(original, in)[0], got = ir::evaluate(lowered, in)[0];
  for (size_t i = 0; i < want.values.size(); ++i) EXPECT_NEAR(got.values[i], want.values[i], 1e-5) << i;
}
