// The shrinker of kiln-difftest, driven by made-up failure predicates: it keeps only
// what the failure needs, makes the shapes small, never returns a graph that passes,
// and stays within its budget of checks.
#include <gtest/gtest.h>

#include "ir/parser.h"
#include "ir/printer.h"
#include "tests/fuzz/shrink.h"

namespace kiln {
namespace {

const char* kGraph = R"(func @big(%x: f32[64,32], %w: f32[32]) -> (f32[64], f32[64,32], f32[64,32]) {
  %e = exp %x : f32[64,32]
  %a = add %e, %x : f32[64,32]
  %m = mul %a, %w : f32[64,32]
  %s = sum %m {axis = [1], keepdim = false} : f32[64]
  %t = tanh %s : f32[64]
  %n = layer_norm %a, %w, %w {axis = -1, eps = 1e-05} : f32[64,32]
  return %t, %a, %n
}
)";

bool has_op(const ir::Graph& g, ir::OpKind op) {
  for (const ir::Node* n : g.nodes())
    if (n->op == op) return true;
  return false;
}

TEST(Shrink, KeepsOnlyWhatTheFailureNeedsAtSizeOne) {
  ir::Graph g = ir::parse(kGraph);
  int calls = 0;
  fuzz::ShrinkStats stats;
  ir::Graph small = fuzz::shrink_graph(
      g,
      [&](const ir::Graph& c) {
        ++calls;
        return has_op(c, ir::OpKind::Exp);  // the made-up bug: any exp fails
      },
      {}, &stats);
  EXPECT_EQ(ir::print(small),
            "func @big(%x: f32[1,1]) -> (f32[1,1]) {\n"
            "  %e = exp %x : f32[1,1]\n"
            "  return %e\n"
            "}\n");
  EXPECT_EQ(calls, stats.attempts);
  EXPECT_GT(stats.accepted, 0);
}

TEST(Shrink, KeepsAShapeTheFailureNeeds) {
  ir::Graph g = ir::parse(kGraph);
  // Fails while some reduction reads rows of 32: the row length must survive.
  auto fails = [](const ir::Graph& c) {
    for (const ir::Node* n : c.nodes())
      if (n->op == ir::OpKind::ReduceSum && n->operands[0]->type.shape.back() == 32) return true;
    return false;
  };
  ir::Graph small = fuzz::shrink_graph(g, fails);
  EXPECT_TRUE(fails(small));
  EXPECT_EQ(small.num_nodes(), 1u) << ir::print(small);
  EXPECT_EQ(small.inputs().at(0)->type.str(), "f32[1,32]");
}

TEST(Shrink, StaysWithinItsBudget) {
  ir::Graph g = ir::parse(kGraph);
  int calls = 0;
  fuzz::ShrinkOptions options;
  options.max_attempts = 3;
  ir::Graph small = fuzz::shrink_graph(
      g, [&](const ir::Graph&) { return ++calls > 0; }, options);
  EXPECT_EQ(calls, 3);
  EXPECT_LT(small.num_nodes(), g.num_nodes());
}

TEST(Shrink, AnEditThatBreaksAReshapeIsRefused) {
  ir::Graph g = ir::parse(R"(func @r(%x: f32[6,4]) -> (f32[24]) {
  %y = reshape %x : f32[24]
  return %y
}
)");
  fuzz::GraphEdit halve;
  halve.dim_from = 6;
  halve.dim_to = 3;  // [3,4] has 12 elements, not 24
  EXPECT_FALSE(fuzz::edit_graph(g, halve).has_value());
  fuzz::GraphEdit cut;
  cut.to_input = 0;
  std::optional<ir::Graph> e = fuzz::edit_graph(g, cut);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->num_nodes(), 0u);
  EXPECT_EQ(e->inputs().size(), 1u);
}

}  // namespace
}  // namespace kiln
