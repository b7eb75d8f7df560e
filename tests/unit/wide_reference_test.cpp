// kiln-difftest's wide reference: f16 / bf16 intermediates held in fp32 as a fused
// kernel holds them, rounded where a kernel rounds (stores, casts, compares, products),
// and the very graph when there is nothing to widen.
#include <gtest/gtest.h>

#include <cmath>

#include "ir/interpreter.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "tests/fuzz/random_graph.h"
#include "tests/fuzz/wide_reference.h"

namespace kiln {
namespace {

// Equal values, NaN equal to NaN.
bool same_values(const HostTensor& a, const HostTensor& b) {
  if (a.type != b.type) return false;
  for (size_t e = 0; e < a.values.size(); ++e)
    if (a.values[e] != b.values[e] && !(std::isnan(a.values[e]) && std::isnan(b.values[e]))) return false;
  return true;
}

TEST(WideReference, HoldsAnF16IntermediateThatOverflowsPerOp) {
  // |x| >= 0.1, so x * 1e6 is past f16's 65504: inf per op, x again in fp32.
  ir::Graph g = ir::parse(R"(func @f(%x: f16[64]) -> (f16[64]) {
  %k = const 1000.0 : f16[]
  %a = mul %x, %k : f16[64]
  %b = mul %a, %k : f16[64]
  %c = div %b, %k : f16[64]
  %y = div %c, %k : f16[64]
  return %y
}
)",
                          "wide_reference_test");
  const std::vector<HostTensor> inputs = ir::random_inputs(g, 11);
  const HostTensor per_op = ir::evaluate(g, inputs).at(0), wide = fuzz::wide_reference(g, inputs).at(0);
  EXPECT_EQ(fuzz::wide_graph(g).widened, 4);
  ASSERT_EQ(wide.type, g.outputs()[0]->type);
  for (size_t e = 0; e < 64; ++e) {
    EXPECT_TRUE(std::isinf(per_op.values[e])) << e;
    EXPECT_NEAR(wide.values[e], inputs[0].values[e], std::fabs(inputs[0].values[e]) * 1e-3) << e;
    EXPECT_EQ(wide.values[e], round_to(DType::f16, wide.values[e])) << e;  // the output is rounded to f16
  }
}

TEST(WideReference, ACastStillReadsItsOperandRounded) {
  // The kernel rounds %b to f16 before converting it (codegen/scalar_emit.h): inf there too.
  ir::Graph g = ir::parse(R"(func @f(%x: f16[64]) -> (f32[64]) {
  %k = const 1000.0 : f16[]
  %a = mul %x, %k : f16[64]
  %b = mul %a, %k : f16[64]
  %c = cast %b : f32[64]
  %m = const 1000000.0 : f32[]
  %y = div %c, %m : f32[64]
  return %y
}
)",
                          "wide_reference_test");
  const std::vector<HostTensor> inputs = ir::random_inputs(g, 12);
  const HostTensor wide = fuzz::wide_reference(g, inputs).at(0);
  for (double v : wide.values) EXPECT_TRUE(std::isinf(v));
}

TEST(WideReference, AProductKeepsItsSum) {
  // The gemm epilogue reads the fp32 sums: a sum past 65504, inf per op, stays finite
  // in the wide reference, and the divisions after it bring it back into range.
  ir::Graph g = ir::parse(R"(func @f(%x: f16[8,64]) -> (f16[8,8]) {
  %k = const 1000.0 : f16[]
  %a = mul %x, %k : f16[8,64]
  %m = matmul %a, %a {transpose_a = false, transpose_b = true} : f16[8,8]
  %d = div %m, %k : f16[8,8]
  %y = div %d, %k : f16[8,8]
  return %y
}
)",
                          "wide_reference_test");
  const std::vector<HostTensor> inputs = ir::random_inputs(g, 13);
  const HostTensor per_op = ir::evaluate(g, inputs).at(0), wide = fuzz::wide_reference(g, inputs).at(0);
  int overflowed = 0;
  for (size_t e = 0; e < per_op.values.size(); ++e)
    if (std::isinf(per_op.values[e])) {
      ++overflowed;
      EXPECT_TRUE(std::isfinite(wide.values[e])) << e << ": " << wide.values[e];
    }
  EXPECT_GT(overflowed, 8);  // the diagonal at least: sums of squares
}

TEST(WideReference, IsTheGraphItselfWithoutF16Intermediates) {
  // f16 only at the edges: an input cast to f32, computed in f32, cast back for the output.
  ir::Graph g = ir::parse(R"(func @f(%x: f16[16,32], %w: f32[32]) -> (f16[16,32], f32[16], f16[16,32]) {
  %a = cast %x : f32[16,32]
  %e = exp %a : f32[16,32]
  %m = mul %e, %w : f32[16,32]
  %s = sum %m {axis = [1], keepdim = false} : f32[16]
  %n = softmax %m {axis = -1} : f32[16,32]
  %y = cast %n : f16[16,32]
  return %y, %s, %x
}
)",
                          "wide_reference_test");
  const fuzz::WideGraph w = fuzz::wide_graph(g);
  EXPECT_EQ(w.widened, 0);
  EXPECT_EQ(ir::print(w.graph), ir::print(g));
  const std::vector<HostTensor> inputs = ir::random_inputs(g, 14);
  const std::vector<HostTensor> per_op = ir::evaluate(g, inputs), wide = fuzz::wide_reference(g, inputs);
  for (size_t i = 0; i < per_op.size(); ++i) EXPECT_TRUE(same_values(per_op[i], wide[i])) << i;
}

TEST(WideReference, RandomGraphsRewriteToValidGraphsOfTheSameOutputs) {
  int widened = 0;
  for (uint64_t seed = 1; seed <= 200; ++seed) {
    fuzz::Decisions d = fuzz::Decisions::from_seed(seed);
    const ir::Graph g = fuzz::random_graph(d);
    const fuzz::WideGraph w = fuzz::wide_graph(g);
    EXPECT_NO_THROW(ir::verify(w.graph)) << ir::print(w.graph);
    ASSERT_EQ(w.graph.outputs().size(), g.outputs().size()) << seed;
    for (size_t i = 0; i < g.outputs().size(); ++i)
      EXPECT_EQ(w.graph.outputs()[i]->type, g.outputs()[i]->type) << seed;
    const std::vector<HostTensor> inputs = ir::random_inputs(g, seed);
    const std::vector<HostTensor> per_op = ir::evaluate(g, inputs), wide = ir::evaluate(w.graph, inputs);
    if (w.widened > 0) {
      ++widened;
      continue;
    }
    for (size_t i = 0; i < per_op.size(); ++i) EXPECT_TRUE(same_values(per_op[i], wide[i])) << seed << " " << i;
  }
  EXPECT_GT(widened, 40);  // f16 and bf16 are two of the generator's five dtypes
}

}  // namespace
}  // namespace kiln
