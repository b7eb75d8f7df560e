// The fuse pass: which nodes share a kernel group, what gets copied or written to
// memory, and that the reordered graph stays valid.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "ir/error.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "passes/lower.h"
#include "passes/pass.h"

namespace kiln {
namespace {

ir::Graph fused(const std::string& text) {
  ir::Graph g = ir::parse(text, "fuse_test");
  passes::create_pass("fuse")->run(g);
  ir::verify(g);
  return g;
}

// Group name -> the printed names of its nodes' results, in node order; "-" holds
// the nodes outside every group.
std::map<std::string, std::vector<std::string>> groups_of(const ir::Graph& g) {
  auto names = ir::value_names(g);
  std::map<std::string, std::vector<std::string>> out;
  for (const ir::Node* n : g.nodes())
    out[n->group >= 0 ? g.groups()[n->group].name : "-"].push_back(names.at(n->result->id));
  return out;
}

std::vector<std::string> ops_in(const ir::Graph& g, const std::string& group) {
  std::vector<std::string> ops;
  for (const ir::Node* n : g.nodes())
    if (n->group >= 0 && g.groups()[n->group].name == group) ops.emplace_back(ir::op_name(n->op));
  return ops;
}

using Names = std::vector<std::string>;

// One group's kernel (lowering the whole graph stops at its reductions).
ir::Kernel kernel_of(const ir::Graph& g, int group) { return passes::lower_group(g, group, ir::value_names(g)); }

Names args_of(const ir::Kernel& k, bool outputs) {
  Names names;
  for (const ir::KernelArg& a : k.args)
    if (a.is_output == outputs) names.push_back(a.name);
  return names;
}

TEST(Fuse, ChainWithBroadcastOperandsIsOneGroup) {
  ir::Graph g = fused(R"(func @chain(%x: f16[64,256], %s: f16[256], %b: f16[256], %r: f16[64,256]) -> (f16[64,256]) {
  %m = mul %x, %s : f16[64,256]
  %a = add %m, %b : f16[64,256]
  %g = gelu %a {approximate = "tanh"} : f16[64,256]
  %y = add %g, %r : f16[64,256]
  return %y
})");
  ASSERT_EQ(g.groups().size(), 1u);
  EXPECT_EQ(g.groups()[0].name, "k0");
  EXPECT_EQ(g.groups()[0].kind, "pointwise");
  EXPECT_EQ(groups_of(g)["k0"], (Names{"m", "a", "g", "y"}));
}

TEST(Fuse, ValueUsedByTwoLaterChainsIsComputedOnce) {
  ir::Graph g = fused(R"(func @two(%x: f32[8,128], %y: f32[8,128]) -> (f32[8,128], f32[8,128]) {
  %h = add %x, %y : f32[8,128]
  %e = exp %h : f32[8,128]
  %c = const 2.0 : f32[]
  %a = mul %e, %c : f32[8,128]
  %b = tanh %e : f32[8,128]
  return %a, %b
})");
  ASSERT_EQ(g.groups().size(), 1u);
  EXPECT_EQ(g.num_nodes(), 5u);  // nothing copied
  EXPECT_EQ(args_of(kernel_of(g, 0), true), (Names{"a", "b"}));  // %h and %e stay in registers
}

TEST(Fuse, ColumnReductionSplitsChains) {
  ir::Graph g = fused(R"(func @red(%x: f32[64,128], %y: f32[64,128]) -> (f32[64,128]) {
  %h = add %x, %y : f32[64,128]
  %s = sum %h {axis = [0], keepdim = true} : f32[1,128]
  %z = div %h, %s : f32[64,128]
  return %z
})");
  auto groups = groups_of(g);
  EXPECT_EQ(groups["k0"], (Names{"h"}));
  EXPECT_EQ(groups["k1"], (Names{"s"}));  // a col_reduce kernel
  EXPECT_EQ(groups["k2"], (Names{"z"}));
  EXPECT_EQ(g.groups().size(), 3u);
}

TEST(Fuse, ValuesReadOutsideAndReturnedAreOutputsOfOneKernel) {
  ir::Graph g = fused(R"(func @outs(%x: f32[16,32], %y: f32[16,32]) -> (f32[16,32], f32[16,32]) {
  %h = add %x, %y : f32[16,32]
  %z = exp %h : f32[16,32]
  %s = sum %h {axis = [0]} : f32[32]
  %t = neg %z : f32[16,32]
  return %t, %z
})");
  EXPECT_EQ(groups_of(g)["k0"], (Names{"h", "z", "t"}));
  EXPECT_EQ(args_of(kernel_of(g, 0), true), (Names{"h", "z", "t"}));
}

TEST(Fuse, ReorderMakesGroupsContiguousAndKeepsTopologicalOrder) {
  // %s sits between %a and %b; the group {%a, %b} must become contiguous.
  ir::Graph g = fused(R"(func @order(%x: f32[4,8]) -> (f32[4,8], f32[8]) {
  %a = exp %x : f32[4,8]
  %s = sum %x {axis = [0]} : f32[8]
  %c = const 1.0 : f32[]
  %b = add %a, %c : f32[4,8]
  %t = mul %s, %s : f32[8]
  return %b, %t
})");
  Names order;
  auto names = ir::value_names(g);
  for (const ir::Node* n : g.nodes()) order.push_back(names.at(n->result->id));
  EXPECT_EQ(order, (Names{"a", "c", "b", "s", "t"}));
  auto groups = groups_of(g);
  EXPECT_EQ(groups["k0"], (Names{"a", "c", "b"}));
  EXPECT_EQ(groups["k1"], (Names{"s", "t"}));  // the column sum with its epilogue
}

TEST(Fuse, GroupMovesAfterTheReductionItReads) {
  // %a comes first, but its group also computes %b, which needs the sum.
  ir::Graph g = fused(R"(func @after(%x: f32[4,8]) -> (f32[4,8]) {
  %a = exp %x : f32[4,8]
  %s = sum %x {axis = [0], keepdim = true} : f32[1,8]
  %b = add %a, %s : f32[4,8]
  return %b
})");
  Names order;
  auto names = ir::value_names(g);
  for (const ir::Node* n : g.nodes()) order.push_back(names.at(n->result->id));
  EXPECT_EQ(order, (Names{"s", "a", "b"}));
  EXPECT_EQ(groups_of(g)["k1"], (Names{"a", "b"}));
}

TEST(Fuse, CheapSharedProducerIsRecomputedInEachKernel) {
  // %a is written (the sum reads it), so %b cannot join its kernel (the sum sits in
  // between); recomputing exp(%x) re-reads %x, cheaper than writing %h and reading it.
  ir::Graph g = fused(R"(func @cheap(%x: f32[64,128]) -> (f32[64,128], f32[64,128]) {
  %h = exp %x : f32[64,128]
  %c = const 2.0 : f32[]
  %a = mul %h, %c : f32[64,128]
  %s = sum %a {axis = [0], keepdim = true} : f32[1,128]
  %b = add %h, %s : f32[64,128]
  return %a, %b
})");
  EXPECT_EQ(ops_in(g, "k0"), (Names{"exp", "const", "mul"}));
  EXPECT_EQ(ops_in(g, "k2"), (Names{"exp", "add"}));  // k1: the column sum
  EXPECT_EQ(args_of(kernel_of(g, 0), false), (Names{"x"}));  // %h never reaches memory
  EXPECT_EQ(args_of(kernel_of(g, 0), true), (Names{"a"}));
  EXPECT_EQ(args_of(kernel_of(g, 2), false), (Names{"x", "s"}));
}

TEST(Fuse, ExpensiveSharedProducerIsWrittenOnceNotRecomputed) {
  // Same shape of graph, but %h is a chain of 20 ops: it is written once and read.
  std::string text = "func @costly(%x: f32[64,128]) -> (f32[64,128], f32[64,128]) {\n  %h0 = exp %x : f32[64,128]\n";
  for (int i = 1; i < 20; ++i)
    text += "  %h" + std::to_string(i) + " = tanh %h" + std::to_string(i - 1) + " : f32[64,128]\n";
  text += R"(  %c = const 2.0 : f32[]
  %a = mul %h19, %c : f32[64,128]
  %s = sum %a {axis = [0], keepdim = true} : f32[1,128]
  %b = add %h19, %s : f32[64,128]
  return %a, %b
})";
  ir::Graph g = fused(text);
  EXPECT_EQ(g.num_nodes(), 24u);  // no copies
  EXPECT_EQ(ops_in(g, "k2"), (Names{"add"}));  // k1: the column sum
  EXPECT_EQ(args_of(kernel_of(g, 0), true), (Names{"h19", "a"}));
  EXPECT_EQ(args_of(kernel_of(g, 2), false), (Names{"h19", "s"}));
}

TEST(Fuse, ConstantsAndViewsAreCopiedIntoEachKernelThatNeedsThem) {
  ir::Graph g = fused(R"(func @copies(%x: f32[4,8], %w: f32[8]) -> (f32[4,8]) {
  %c = const 3.0 : f32[]
  %bw = broadcast %w : f32[4,8]
  %a = mul %x, %c : f32[4,8]
  %a2 = add %a, %bw : f32[4,8]
  %s = sum %a2 {axis = [0], keepdim = true} : f32[1,8]
  %b = mul %s, %c : f32[1,8]
  %d = add %b, %bw : f32[4,8]
  return %d
})");
  // k0 is the column sum with its prologue and epilogue; k1 gets its own broadcast.
  EXPECT_EQ(ops_in(g, "k0"), (Names{"const", "broadcast", "mul", "add", "sum", "mul"}));
  EXPECT_EQ(ops_in(g, "k1"), (Names{"broadcast", "add"}));
}

TEST(Fuse, ViewThatAReductionReadsStaysOutsideAndKernelsGetACopy) {
  // A composite softmax (not decomposed): no kernel kind takes it, so it stays outside
  // every group.
  ir::Graph g = fused(R"(func @kept(%x: f32[4,8], %w: f32[8]) -> (f32[4,8], f32[4,8]) {
  %b = broadcast %w : f32[4,8]
  %s = softmax %b {axis = 0} : f32[4,8]
  %y = add %x, %b : f32[4,8]
  return %s, %y
})");
  auto groups = groups_of(g);
  EXPECT_EQ(groups["-"], (Names{"b", "s"}));
  EXPECT_EQ(ops_in(g, "k0"), (Names{"broadcast", "add"}));
}

TEST(Fuse, ReshapeOfATransposeWritesTheTransposeFirst) {
  // reshape(transpose(x)) regroups reordered elements: no affine index for it.
  ir::Graph g = fused(R"(func @regroup(%x: f32[6,10]) -> (f32[60]) {
  %t = transpose %x {perm = [1, 0]} : f32[10,6]
  %r = reshape %t : f32[60]
  %e = exp %r : f32[60]
  return %e
})");
  auto groups = groups_of(g);
  EXPECT_EQ(groups["k0"], (Names{"t"}));
  EXPECT_EQ(groups["k1"], (Names{"r", "e"}));
  EXPECT_NO_THROW(passes::lower(g));
}

TEST(Fuse, ReshapeOfALoadedTensorFoldsIntoTheKernel) {
  ir::Graph g = fused(R"(func @flat(%x: f32[6,10], %y: f32[60]) -> (f32[60]) {
  %r = reshape %x : f32[60]
  %a = add %r, %y : f32[60]
  return %a
})");
  EXPECT_EQ(g.groups().size(), 1u);
}

TEST(Fuse, MatmulBecomesAGemmGroupAndCompositesStayOutside) {
  ir::Graph g = fused(R"(func @opaque(%x: f32[8,16], %w: f32[16,8]) -> (f32[8,8]) {
  %m = matmul %x, %w : f32[8,8]
  %p = softmax %m : f32[8,8]
  %c = const 2.0 : f32[]
  %y = mul %p, %c : f32[8,8]
  return %y
})");
  auto groups = groups_of(g);
  EXPECT_EQ(groups["k0"], (Names{"m"}));
  EXPECT_EQ(groups["-"], (Names{"p"}));
  EXPECT_EQ(groups["k1"], (Names{"c", "y"}));
}

TEST(Fuse, ReturnedViewGetsACopyKernel) {
  ir::Graph g = fused(R"(func @view(%x: f32[3,5]) -> (f32[5,3]) {
  %t = transpose %x {perm = [1, 0]} : f32[5,3]
  return %t
})");
  EXPECT_EQ(groups_of(g)["k0"], (Names{"t"}));
}

TEST(Fuse, IndependentChainsGetTheirOwnKernelsNamedInOrder) {
  ir::Graph g = fused(R"(func @apart(%x: f32[8], %y: f32[8]) -> (f32[8], f32[8]) {
  %a = exp %x : f32[8]
  %b = exp %y : f32[8]
  return %a, %b
})");
  auto groups = groups_of(g);
  EXPECT_EQ(groups["k0"], (Names{"a"}));
  EXPECT_EQ(groups["k1"], (Names{"b"}));
}

TEST(Fuse, SiblingsReadingOneInputShareAKernel) {
  ir::Graph g = fused(R"(func @siblings(%x: f32[8]) -> (f32[8], f32[8]) {
  %a = exp %x : f32[8]
  %b = tanh %x : f32[8]
  return %a, %b
})");
  EXPECT_EQ(groups_of(g)["k0"], (Names{"a", "b"}));
}

TEST(Fuse, OutputsOfDifferentShapesGetDifferentKernels) {
  ir::Graph g = fused(R"(func @shapes(%x: f32[8], %y: f32[4,8]) -> (f32[8], f32[4,8]) {
  %a = exp %x : f32[8]
  %b = add %a, %y : f32[4,8]
  return %a, %b
})");
  auto groups = groups_of(g);
  EXPECT_EQ(groups["k0"], (Names{"a"}));
  EXPECT_EQ(groups["k1"], (Names{"b"}));
}

TEST(Fuse, RunningTwiceChangesNothing) {
  ir::Graph g = fused(R"(func @again(%x: f32[4,8]) -> (f32[4,8]) {
  %a = exp %x : f32[4,8]
  %s = sum %a {axis = [1], keepdim = true} : f32[4,1]
  %c = const 2.0 : f32[]
  %b = mul %s, %c : f32[4,1]
  %d = sub %a, %b : f32[4,8]
  return %d
})");
  std::string once = ir::print(g);
  EXPECT_FALSE(passes::create_pass("fuse")->run(g));
  EXPECT_EQ(ir::print(g), once);
}

TEST(Fuse, ReportsAChange) {
  ir::Graph g = ir::parse("func @f(%x: f32[4]) -> (f32[4]) {\n  %a = exp %x : f32[4]\n  return %a\n}\n");
  EXPECT_TRUE(passes::create_pass("fuse")->run(g));
}

}  // namespace
}  // namespace kiln
