// Fusion of row reductions: softmax, log_softmax, LayerNorm, RMSNorm, add+RMSNorm and
// plain row sums / maxima / means each become one row_reduce kernel after the compile
// pipeline (composites are decomposed first, so fusion finds them from primitives).
#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>

#include "ir/kernel.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "passes/lower.h"
#include "passes/pass_manager.h"

namespace kiln {
namespace {

constexpr const char* kPipeline = "decompose,simplify,cse,dce,fuse,tile";

ir::Graph compiled(const std::string& text) {
  ir::Graph g = ir::parse(text, "row_reduce_fuse_test");
  std::ostringstream quiet;
  passes::PassManager(kPipeline, {}, quiet).run(g);
  return g;
}

std::vector<ir::Kernel> kernels_of(const std::string& text) { return passes::lower(compiled(text)).kernels; }

std::vector<std::string> arg_names(const ir::Kernel& k, bool outputs) {
  std::vector<std::string> names;
  for (const ir::KernelArg& a : k.args)
    if (a.is_output == outputs) names.push_back(a.name);
  return names;
}

int count_kind(const ir::Kernel& k, ir::ScalarKind kind) {
  int n = 0;
  for (const ir::ScalarOp& op : k.body) n += op.kind == kind;
  return n;
}

// The reductions of a kernel as "sum@1" (op and phase), in body order.
std::vector<std::string> reductions(const ir::Kernel& k) {
  std::vector<std::string> out;
  for (const ir::ScalarOp& op : k.body)
    if (op.kind == ir::ScalarKind::Reduce)
      out.push_back(std::string(ir::op_name(op.op)) + "@" + std::to_string(op.phase));
  return out;
}

TEST(RowReduceFuse, SoftmaxIsOneKernelWithTwoPhases) {
  auto ks = kernels_of(
      "func @f(%x: f16[64,1000]) -> (f16[64,1000]) {\n  %y = softmax %x : f16[64,1000]\n  return %y\n}\n");
  ASSERT_EQ(ks.size(), 1u);
  EXPECT_EQ(ks[0].kind, ir::KernelKind::RowReduce);
  EXPECT_EQ(reductions(ks[0]), (std::vector<std::string>{"max@0", "sum@1"}));
  EXPECT_EQ(arg_names(ks[0], false), (std::vector<std::string>{"x"}));
  EXPECT_EQ(arg_names(ks[0], true), (std::vector<std::string>{"y"}));
}

TEST(RowReduceFuse, HandWrittenSoftmaxGivesTheSameKernelAsSoftmax) {
  auto composite = kernels_of(R"(func @f(%x: f16[64,1000]) -> (f16[64,1000]) {
  %y = softmax %x {axis = -1} : f16[64,1000]
  return %y
})");
  auto by_hand = kernels_of(R"(func @f(%x: f16[64,1000]) -> (f16[64,1000]) {
  %m = max %x {axis = [1], keepdim = true} : f16[64,1]
  %d = sub %x, %m : f16[64,1000]
  %e = exp %d : f16[64,1000]
  %s = sum %e {axis = [1], keepdim = true} : f16[64,1]
  %y = div %e, %s : f16[64,1000]
  return %y
})");
  ASSERT_EQ(composite.size(), 1u);
  ASSERT_EQ(by_hand.size(), 1u);
  EXPECT_EQ(ir::print(composite[0]), ir::print(by_hand[0]));
}

TEST(RowReduceFuse, LogSoftmaxIsOneKernel) {
  auto ks = kernels_of(
      "func @f(%x: f32[8,300]) -> (f32[8,300]) {\n  %y = log_softmax %x : f32[8,300]\n  return %y\n}\n");
  ASSERT_EQ(ks.size(), 1u);
  EXPECT_EQ(reductions(ks[0]), (std::vector<std::string>{"max@0", "sum@1"}));
}

TEST(RowReduceFuse, LayerNormIsOneKernelReadingXWeightAndBias) {
  auto ks = kernels_of(R"(func @f(%x: bf16[16,768], %w: bf16[768], %b: bf16[768]) -> (bf16[16,768]) {
  %y = layer_norm %x, %w, %b : bf16[16,768]
  return %y
})");
  ASSERT_EQ(ks.size(), 1u);
  EXPECT_EQ(reductions(ks[0]), (std::vector<std::string>{"mean@0", "mean@1"}));
  EXPECT_EQ(arg_names(ks[0], false), (std::vector<std::string>{"x", "w", "b"}));
}

TEST(RowReduceFuse, RmsNormIsOneKernel) {
  auto ks = kernels_of(R"(func @f(%x: f16[4,4096], %w: f16[4096]) -> (f16[4,4096]) {
  %y = rms_norm %x, %w : f16[4,4096]
  return %y
})");
  ASSERT_EQ(ks.size(), 1u);
  EXPECT_EQ(reductions(ks[0]), (std::vector<std::string>{"mean@0"}));
}

TEST(RowReduceFuse, AddRmsNormWritesBothOutputsFromOneKernel) {
  auto ks = kernels_of(R"(func @f(%x: f16[32,4096], %r: f16[32,4096], %w: f16[4096]) -> (f16[32,4096], f16[32,4096]) {
  %h = add %x, %r : f16[32,4096]
  %y = rms_norm %h, %w {axis = -1, eps = 1e-06} : f16[32,4096]
  return %y, %h
})");
  ASSERT_EQ(ks.size(), 1u);
  EXPECT_EQ(arg_names(ks[0], false), (std::vector<std::string>{"x", "r", "w"}));
  auto outs = arg_names(ks[0], true);
  std::sort(outs.begin(), outs.end());
  EXPECT_EQ(outs, (std::vector<std::string>{"h", "y"}));
  EXPECT_EQ(count_kind(ks[0], ir::ScalarKind::Store), 2);
}

TEST(RowReduceFuse, RowSumMaxAndMeanAreOneKernelEachWithPerRowOutputs) {
  for (const char* op : {"sum", "max", "mean"}) {
    auto ks = kernels_of(std::string("func @f(%x: f32[10,77]) -> (f32[10]) {\n  %s = ") + op +
                         " %x {axis = [1]} : f32[10]\n  return %s\n}\n");
    ASSERT_EQ(ks.size(), 1u) << op;
    EXPECT_EQ(ks[0].kind, ir::KernelKind::RowReduce) << op;
    EXPECT_EQ(reductions(ks[0]), (std::vector<std::string>{std::string(op) + "@0"})) << op;
    ASSERT_EQ(ks[0].args.size(), 2u);
    EXPECT_EQ(ks[0].args[1].strides, (std::vector<int64_t>{1, 0})) << op;  // one value per row
  }
}

TEST(RowReduceFuse, ReductionsOfTheSameRowsShareOneKernel) {
  auto ks = kernels_of(R"(
func @f(%x: f16[10,77]) -> (f16[10], f16[10], f16[10,77]) {
  %s = sum %x {axis = [1]} : f16[10]
  %m = max %x {axis = [1]} : f16[10]
  %y = softmax %x {axis = -1} : f16[10,77]
  return %s, %m, %y
}
)");
  ASSERT_EQ(ks.size(), 1u);
  EXPECT_EQ(arg_names(ks[0], false), (std::vector<std::string>{"x"}));
  EXPECT_EQ(count_kind(ks[0], ir::ScalarKind::Store), 3);
  EXPECT_EQ(count_kind(ks[0], ir::ScalarKind::Load), 1);  // the row is read once for all three
}

TEST(RowReduceFuse, AReductionThatReadsAnotherKernelsOutputKeepsItsOwnKernel) {
  // %t also reads %c, which a column kernel writes: merged with %s, it would be read
  // before it exists.
  auto ks = kernels_of(R"(
func @f(%x: f32[10,77]) -> (f32[10], f32[10]) {
  %s = sum %x {axis = [1]} : f32[10]
  %c = sum %x {axis = [0], keepdim = true} : f32[1,77]
  %e = add %x, %c : f32[10,77]
  %t = sum %e {axis = [1]} : f32[10]
  return %s, %t
}
)");
  int rows = 0;
  for (const ir::Kernel& k : ks) rows += k.kind == ir::KernelKind::RowReduce;
  EXPECT_EQ(rows, 2);
  EXPECT_EQ(ks.size(), 3u);
}

TEST(RowReduceFuse, RowsOfDifferentTensorsDoNotMerge) {
  auto ks = kernels_of(R"(
func @f(%x: f32[10,77], %w: f32[10,77]) -> (f32[10], f32[10]) {
  %s = sum %x {axis = [1]} : f32[10]
  %t = sum %w {axis = [1]} : f32[10]
  return %s, %t
}
)");
  EXPECT_EQ(ks.size(), 2u);
}

TEST(RowReduceFuse, KeepdimSumAndItsConsumerShareTheKernel) {
  auto ks = kernels_of(R"(func @f(%x: f32[6,50]) -> (f32[6,1], f32[6,50]) {
  %s = sum %x {axis = [1], keepdim = true} : f32[6,1]
  %c = const 2.0 : f32[]
  %t = mul %s, %c : f32[6,1]
  %y = div %x, %t : f32[6,50]
  return %t, %y
})");
  ASSERT_EQ(ks.size(), 1u);
  EXPECT_EQ(arg_names(ks[0], true), (std::vector<std::string>{"t", "y"}));
}

TEST(RowReduceFuse, HigherRankRowsKeepTheirLeadingDims) {
  auto ks = kernels_of(
      "func @f(%x: f32[2,3,40]) -> (f32[2,3,40]) {\n  %y = softmax %x : f32[2,3,40]\n  return %y\n}\n");
  ASSERT_EQ(ks.size(), 1u);
  EXPECT_EQ(ks[0].space(), (Shape{2, 3, 40}));
  EXPECT_EQ(ir::row_count(ks[0]), 6);
  EXPECT_EQ(ir::collapse(ks[0]).dims, (Shape{6, 40}));
}

TEST(RowReduceFuse, ColumnReductionStaysOutsideRowKernels) {
  ir::Graph g = compiled(R"(func @f(%x: f32[16,32]) -> (f32[16], f32[32]) {
  %r = sum %x {axis = [1]} : f32[16]
  %c = sum %x {axis = [0]} : f32[32]
  return %r, %c
})");
  ASSERT_EQ(g.groups().size(), 2u);
  EXPECT_EQ(g.groups()[0].kind, "row_reduce");
  EXPECT_EQ(g.groups()[1].kind, "col_reduce");
  for (const ir::Node* n : g.nodes())
    if (n->attrs.has("axis") && n->attrs.get_ints("axis") == std::vector<int64_t>{0}) {
      EXPECT_EQ(n->group, 1);  // its own col_reduce kernel
    }
}

TEST(RowReduceFuse, PointwiseConsumerOfAPerRowValueWithAnotherShapeIsItsOwnKernel) {
  // %s broadcast along the rows' own axis is not a per-row value of this kernel's rows.
  auto ks = kernels_of(R"(func @f(%x: f32[8,8], %y: f32[8,8]) -> (f32[8,8]) {
  %s = sum %x {axis = [1]} : f32[8]
  %z = add %y, %s : f32[8,8]
  return %z
})");
  ASSERT_EQ(ks.size(), 2u);
  EXPECT_EQ(ks[0].kind, ir::KernelKind::RowReduce);
  EXPECT_EQ(ks[1].kind, ir::KernelKind::Pointwise);
}

TEST(RowReduceFuse, TwoSoftmaxesOfDifferentInputsAreTwoKernels) {
  auto ks = kernels_of(R"(func @f(%a: f32[4,64], %b: f32[4,64]) -> (f32[4,64], f32[4,64]) {
  %p = softmax %a : f32[4,64]
  %q = softmax %b : f32[4,64]
  return %p, %q
})");
  ASSERT_EQ(ks.size(), 2u);
  EXPECT_EQ(ks[0].kind, ir::KernelKind::RowReduce);
  EXPECT_EQ(ks[1].kind, ir::KernelKind::RowReduce);
}

TEST(RowReduceFuse, FusingTwiceChangesNothing) {
  ir::Graph g = ir::parse(R"(func @f(%x: f16[32,512], %r: f16[32,512], %w: f16[512]) -> (f16[32,512], f16[32,512]) {
  %h = add %x, %r : f16[32,512]
  %y = rms_norm %h, %w : f16[32,512]
  return %y, %h
})");
  std::ostringstream quiet;
  passes::PassManager("decompose,simplify,cse,dce,fuse", {}, quiet).run(g);
  std::string once = ir::print(g);
  EXPECT_FALSE(passes::PassManager("fuse", {}, quiet).run(g));
  EXPECT_EQ(ir::print(g), once);
}

}  // namespace
}  // namespace kiln
