// Reductions over any set of axes: each lowers to one col_reduce kernel that reads its
// operand in place (no transpose, no copy), whose collapsed form is the canonical one
// (size-1 dims dropped, neighbours of a class merged, reduced dims first), and whose
// blocks read along the kept or the reduced dims as the innermost dim says. Composites
// over such axes (logsumexp, softmax, log_softmax, norms) lower too; reductions of one
// element simplify away.
#include <gtest/gtest.h>

#include <sstream>

#include "ir/kernel.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "passes/lower.h"
#include "passes/pass_manager.h"
#include "reduce_axes_test_graphs.h"

namespace kiln {
namespace {

using reduce_axes_test::kFusedMiddleAxis;
using reduce_axes_test::reduce_graph;

ir::Graph compiled(const std::string& text) {
  ir::Graph g = ir::parse(text, "reduce_axes_lower_test");
  std::ostringstream quiet;
  passes::PassManager("decompose,simplify,cse,dce,online-softmax,welford,fuse,tile", {}, quiet).run(g);
  return g;
}

std::vector<ir::Kernel> kernels_of(const std::string& text) { return passes::lower(compiled(text)).kernels; }

ir::Kernel only_kernel(const std::string& text) {
  std::vector<ir::Kernel> ks = kernels_of(text);
  EXPECT_EQ(ks.size(), 1u) << text;
  return ks.empty() ? ir::Kernel{} : ks[0];
}

// Every input is read with the row-major strides of its own shape: in place.
void expect_reads_in_place(const ir::Kernel& k) {
  for (const ir::KernelArg& a : k.args)
    if (!a.is_output) {
      EXPECT_TRUE(ir::is_contiguous(a, k.space())) << ir::print(k);
    }
}

TEST(ReduceAxesLower, MiddleAxisIsAColumnReductionBatchedOverTheOuterDim) {
  ir::Kernel k = only_kernel(reduce_graph("sum", "f32", {16, 64, 256}, {1}, false));
  EXPECT_EQ(k.kind, ir::KernelKind::ColReduce);
  EXPECT_EQ(k.reduced_axes, (std::vector<int64_t>{1}));
  EXPECT_FALSE(ir::col_reads_along_reduced(k));
  expect_reads_in_place(k);
  ir::CollapsedSpace c = ir::collapse(k);
  EXPECT_EQ(c.dims, (Shape{64, 16, 256}));  // [R | K1, K2]
  EXPECT_EQ(c.reduced_dims, 1);
  EXPECT_EQ(c.arg_strides[0], (std::vector<int64_t>{256, 64 * 256, 1}));
  EXPECT_EQ(ir::col_count(k), 16 * 256);
  EXPECT_EQ(ir::col_reduced_count(k), 64);
}

TEST(ReduceAxesLower, OuterAndInnerAxesReadAlongTheReducedDims) {
  ir::Kernel k = only_kernel(reduce_graph("max", "f16", {3, 1000, 7}, {0, 2}, true));
  EXPECT_EQ(k.kind, ir::KernelKind::ColReduce);
  EXPECT_TRUE(ir::col_reads_along_reduced(k));
  expect_reads_in_place(k);
  ir::CollapsedSpace c = ir::collapse(k);
  EXPECT_EQ(c.dims, (Shape{3, 7, 1000}));  // [R1, R2 | K]: R1 and R2 are not neighbours in memory
  EXPECT_EQ(c.reduced_dims, 2);
  EXPECT_EQ(c.arg_strides[0], (std::vector<int64_t>{7000, 1, 7}));
  EXPECT_EQ(k.args.back().type.shape, (Shape{1, 1000, 1}));
}

TEST(ReduceAxesLower, NeighbouringAxesOfAClassMergeIntoOne) {
  ir::Kernel k = only_kernel(reduce_graph("mean", "f32", {5, 33, 17, 9}, {2, 3}, false));
  EXPECT_EQ(k.kind, ir::KernelKind::ColReduce);
  EXPECT_TRUE(ir::col_reads_along_reduced(k));
  ir::CollapsedSpace c = ir::collapse(k);
  EXPECT_EQ(c.dims, (Shape{17 * 9, 5 * 33}));  // [R | K]: a row-like reduction
  EXPECT_EQ(c.arg_strides[0], (std::vector<int64_t>{1, 17 * 9}));
}

TEST(ReduceAxesLower, TwoAxesApartOfARankFourTensor) {
  ir::Kernel k = only_kernel(reduce_graph("sum", "bf16", {5, 33, 17, 9}, {1, 3}, false));
  EXPECT_EQ(k.kind, ir::KernelKind::ColReduce);
  EXPECT_TRUE(ir::col_reads_along_reduced(k));
  ir::CollapsedSpace c = ir::collapse(k);
  EXPECT_EQ(c.dims, (Shape{33, 9, 5, 17}));
  EXPECT_EQ(c.reduced_dims, 2);
  EXPECT_EQ(k.args.back().type.shape, (Shape{5, 17}));
}

TEST(ReduceAxesLower, FirstAndThirdOfFourKeepTheColumnsInnermost) {
  ir::Kernel k = only_kernel(reduce_graph("sum", "f32", {4, 96, 8, 128}, {0, 2}, true));
  EXPECT_EQ(k.kind, ir::KernelKind::ColReduce);
  EXPECT_FALSE(ir::col_reads_along_reduced(k));
  ir::CollapsedSpace c = ir::collapse(k);
  EXPECT_EQ(c.dims, (Shape{4, 8, 96, 128}));  // [R1, R2 | K1, K2]
  EXPECT_EQ(ir::heuristic(k).vec, 4);         // 16-byte vectors along K2
}

TEST(ReduceAxesLower, AllAxesIsOneColumn) {
  ir::Kernel k = only_kernel(reduce_graph("min", "f32", {5, 33, 17, 9}, {0, 1, 2, 3}, true));
  EXPECT_EQ(k.kind, ir::KernelKind::ColReduce);
  EXPECT_EQ(ir::col_count(k), 1);
  EXPECT_EQ(ir::collapse(k).dims, (Shape{5 * 33 * 17 * 9, 1}));
}

TEST(ReduceAxesLower, SizeOneDimsAreDroppedFromTheForm) {
  ir::Kernel k = only_kernel(reduce_graph("sum", "f32", {33, 1, 50, 4}, {2}, true));
  EXPECT_EQ(k.kind, ir::KernelKind::ColReduce);
  ir::CollapsedSpace c = ir::collapse(k);
  EXPECT_EQ(c.dims, (Shape{50, 33, 4}));
  EXPECT_FALSE(ir::col_reads_along_reduced(k));
  ir::Kernel row_like = only_kernel(reduce_graph("sum", "f32", {128, 40, 1, 1}, {1}, true));
  EXPECT_EQ(row_like.kind, ir::KernelKind::ColReduce);
  EXPECT_TRUE(ir::col_reads_along_reduced(row_like));
  EXPECT_EQ(ir::collapse(row_like).dims, (Shape{40, 128}));
}

TEST(ReduceAxesLower, EveryOpAndCaseIsOneKernelThatReadsInPlace) {
  for (const char* op : reduce_axes_test::kOps)
    for (const auto& c : reduce_axes_test::kCases)
      for (bool keepdim : {false, true}) {
        const std::string text = reduce_graph(op, "f32", c.shape, c.axes, keepdim);
        SCOPED_TRACE(text);
        ir::Kernel k = only_kernel(text);
        EXPECT_TRUE(k.kind == ir::KernelKind::ColReduce || k.kind == ir::KernelKind::RowReduce);
        expect_reads_in_place(k);
      }
}

TEST(ReduceAxesLower, LogSumExpOverANonInnermostAxisIsOneKernel) {
  // Both found by the random-graph differential tester.
  ir::Kernel a = only_kernel(R"(func @f(%x: f32[33,1,7,4]) -> (f32[33,1,1,4]) {
  %0 = logsumexp %x {axis = [2], keepdim = true} : f32[33,1,1,4]
  return %0
})");
  EXPECT_EQ(a.kind, ir::KernelKind::ColReduce);
  ir::Kernel b = only_kernel(R"(func @f(%x: f32[128,9,1,1]) -> (f32[128,1,1,1]) {
  %2 = logsumexp %x {axis = [1], keepdim = true} : f32[128,1,1,1]
  return %2
})");
  EXPECT_EQ(b.kind, ir::KernelKind::ColReduce);
}

TEST(ReduceAxesLower, MeanAndVarianceOverAMiddleAxisShareOneKernel) {
  std::vector<ir::Kernel> ks = kernels_of(R"(func @f(%x: f32[8,300,64]) -> (f32[8,1,64], f32[8,1,64]) {
  %m = mean %x {axis = [1], keepdim = true} : f32[8,1,64]
  %v = var %x {axis = [1], keepdim = true} : f32[8,1,64]
  return %m, %v
})");
  ASSERT_EQ(ks.size(), 1u);
  EXPECT_EQ(ks[0].kind, ir::KernelKind::ColReduce);
}

TEST(ReduceAxesLower, CompositesOverAMiddleAxisLower) {
  for (const std::string& body : {
           std::string("%y = softmax %x {axis = 1} : f32[4,300,24]"),
           std::string("%y = log_softmax %x {axis = 0} : f32[4,300,24]"),
       }) {
    SCOPED_TRACE(body);
    std::vector<ir::Kernel> ks =
        kernels_of("func @f(%x: f32[4,300,24]) -> (f32[4,300,24]) {\n  " + body + "\n  return %y\n}\n");
    ASSERT_FALSE(ks.empty());
    // The max, then the logsumexp of x - max (an online max and sum whose max is 0), then
    // the element-wise output: three reads of x, where a logsumexp of x itself took two
    // but rounded max + log(sum) to fp32 (online_softmax.cpp).
    EXPECT_EQ(ks[0].kind, ir::KernelKind::ColReduce);
    ASSERT_EQ(ks.size(), 3u);
    EXPECT_EQ(ks[1].kind, ir::KernelKind::ColReduce);
  }
  std::vector<ir::Kernel> norm = kernels_of(R"(func @f(%x: f32[4,300,24], %w: f32[300], %b: f32[300]) -> (f32[4,300,24]) {
  %y = layer_norm %x, %w, %b {axis = 1, eps = 1e-05} : f32[4,300,24]
  return %y
})");
  ASSERT_FALSE(norm.empty());
  EXPECT_EQ(norm[0].kind, ir::KernelKind::ColReduce);
  EXPECT_LE(norm.size(), 2u);
}

TEST(ReduceAxesLower, MiddleAxisTakesItsElementWiseProducersAndConsumers) {
  std::vector<ir::Kernel> ks = kernels_of(kFusedMiddleAxis);
  ASSERT_EQ(ks.size(), 1u);
  EXPECT_EQ(ks[0].kind, ir::KernelKind::ColReduce);
  EXPECT_EQ(ks[0].fused_nodes.size(), 7u) << ir::print(ks[0]);
  ASSERT_EQ(ks[0].args[0].name, "x");
  EXPECT_TRUE(ir::is_contiguous(ks[0].args[0], ks[0].space())) << ir::print(ks[0]);  // x in place
}

TEST(ReduceAxesLower, AReductionOverSizeOneAxesSimplifiesAway) {
  ir::Graph g = compiled(reduce_graph("sum", "f32", {6, 1, 5}, {1}, false));
  for (const ir::Node* n : g.nodes()) {
    EXPECT_NE(ir::op_info(n->op).category, ir::OpCategory::Reduce) << ir::print(g);
  }
  ir::Graph kept = compiled(reduce_graph("logsumexp", "f16", {6, 1, 5}, {1}, true));
  for (const ir::Node* n : kept.nodes()) {
    EXPECT_NE(ir::op_info(n->op).category, ir::OpCategory::Reduce);
  }
}

}  // namespace
}  // namespace kiln
