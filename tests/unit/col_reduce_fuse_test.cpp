// Fusion and lowering of column and full reductions: a reduction over outer dims takes
// its element-wise producers (prologue) and the element-wise consumers of its reduced
// columns (epilogue) into one col_reduce kernel; a full reduction is a col_reduce
// kernel with one column; a reduction whose reduced dims interleave with kept ones is
// one col_reduce kernel too.
#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>

#include "col_reduce_test_graphs.h"
#include "ir/error.h"
#include "ir/kernel.h"
#include "ir/parser.h"
#include "passes/lower.h"
#include "passes/pass_manager.h"

namespace kiln {
namespace {

constexpr const char* kFusePipeline = "decompose,simplify,cse,dce,fuse,tile";

ir::Graph compiled(const std::string& text, const std::string& pipeline = kFusePipeline) {
  ir::Graph g = ir::parse(text, "col_reduce_fuse_test");
  std::ostringstream quiet;
  passes::PassManager(pipeline, {}, quiet).run(g);
  return g;
}

std::vector<ir::Kernel> kernels_of(const std::string& text, const std::string& pipeline = kFusePipeline) {
  return passes::lower(compiled(text, pipeline)).kernels;
}

int count_kind(const ir::Kernel& k, ir::ScalarKind kind) {
  int n = 0;
  for (const ir::ScalarOp& op : k.body) n += op.kind == kind;
  return n;
}

TEST(ColReduceFuse, PrologueAndEpilogueJoinTheColumnSum) {
  auto ks = kernels_of(R"(func @f(%x: f16[512,768], %r: f16[768], %w: f16[768]) -> (f16[768]) {
  %a = add %x, %r : f16[512,768]
  %f = cast %a : f32[512,768]
  %q = mul %f, %f : f32[512,768]
  %s = mean %q {axis = [0]} : f32[768]
  %h = cast %s : f16[768]
  %y = mul %h, %w : f16[768]
  return %y
})");
  ASSERT_EQ(ks.size(), 1u);
  const ir::Kernel& k = ks[0];
  EXPECT_EQ(k.kind, ir::KernelKind::ColReduce);
  EXPECT_EQ(k.reduced_axes, (std::vector<int64_t>{0}));
  EXPECT_EQ(count_kind(k, ir::ScalarKind::Reduce), 1);
  EXPECT_EQ(count_kind(k, ir::ScalarKind::Load), 3);  // x, the broadcast r, the per-column w
  EXPECT_EQ(k.fused_nodes.size(), 6u);
  ASSERT_EQ(k.args.size(), 4u);
  EXPECT_EQ(k.args[3].name, "y");
  EXPECT_EQ(k.args[3].type.shape, (Shape{768}));
  ir::CollapsedSpace c = ir::collapse(k);
  EXPECT_EQ(c.dims, (Shape{512, 768}));
  EXPECT_EQ(c.reduced_dims, 1);
}

TEST(ColReduceFuse, FullSumIsOneColumn) {
  auto ks = kernels_of(col_reduce_test::full_graph("sum", "bf16", 300, 70));
  ASSERT_EQ(ks.size(), 1u);
  EXPECT_EQ(ks[0].kind, ir::KernelKind::ColReduce);
  EXPECT_EQ(ir::col_count(ks[0]), 1);
  EXPECT_EQ(ir::col_reduced_count(ks[0]), 300 * 70);
  EXPECT_EQ(ir::collapse(ks[0]).dims, (Shape{21000, 1}));  // both dims merge into K
}

TEST(ColReduceFuse, LeadingDimsOfARank3TensorCollapseToOneK) {
  auto ks = kernels_of(R"(func @f(%x: f32[6,10,32]) -> (f32[1,1,32]) {
  %s = max %x {axis = [0, 1], keepdim = true} : f32[1,1,32]
  return %s
})");
  ASSERT_EQ(ks.size(), 1u);
  EXPECT_EQ(ks[0].kind, ir::KernelKind::ColReduce);
  EXPECT_EQ(ir::collapse(ks[0]).dims, (Shape{60, 32}));
}

TEST(ColReduceFuse, LongRankOneSumIsAColumnReductionShortOneARowReduction) {
  auto long_sum = kernels_of("func @f(%x: f32[2097152]) -> (f32[]) {\n  %s = sum %x {axis = [0]} : f32[]\n"
                             "  return %s\n}\n");
  ASSERT_EQ(long_sum.size(), 1u);
  EXPECT_EQ(long_sum[0].kind, ir::KernelKind::ColReduce);
  auto short_sum = kernels_of("func @f(%x: f32[4096]) -> (f32[]) {\n  %s = sum %x {axis = [0]} : f32[]\n"
                              "  return %s\n}\n");
  ASSERT_EQ(short_sum.size(), 1u);
  EXPECT_EQ(short_sum[0].kind, ir::KernelKind::RowReduce);
}

TEST(ColReduceFuse, FullSizeConsumerOfAPrologueValueGetsItsOwnKernel) {
  ir::Graph g = compiled(R"(func @f(%x: f32[64,32]) -> (f32[32], f32[64,32]) {
  %e = exp %x : f32[64,32]
  %s = sum %e {axis = [0]} : f32[32]
  %n = neg %e : f32[64,32]
  return %s, %n
})");
  std::vector<std::string> kinds;
  for (const ir::Group& grp : g.groups()) kinds.push_back(grp.kind);
  EXPECT_EQ(std::count(kinds.begin(), kinds.end(), "col_reduce"), 1);
  EXPECT_NO_THROW(passes::lower(g));
}

TEST(ColReduceFuse, ReductionReadingAnotherReductionOfTheSameColumnsIsSplit) {
  // The variance of each column reads the column mean: one pass over K cannot do both.
  auto ks = kernels_of(R"(func @f(%x: f32[128,64]) -> (f32[64]) {
  %m = mean %x {axis = [0], keepdim = true} : f32[1,64]
  %d = sub %x, %m : f32[128,64]
  %q = mul %d, %d : f32[128,64]
  %v = mean %q {axis = [0]} : f32[64]
  return %v
})");
  ASSERT_EQ(ks.size(), 2u);
  EXPECT_EQ(ks[0].kind, ir::KernelKind::ColReduce);
  EXPECT_EQ(ks[1].kind, ir::KernelKind::ColReduce);
  EXPECT_EQ(count_kind(ks[1], ir::ScalarKind::Reduce), 1);
}

TEST(ColReduceFuse, ACastInputSharedWithAnEarlierReductionIsLoadedAgainNotWritten) {
  // The cast of x is in the mean's kernel too; recomputing it is free, so the variance's
  // kernel reads x itself rather than a widened, centred copy written by a third kernel.
  auto ks = kernels_of(R"(func @f(%x: f16[128,64]) -> (f32[64]) {
  %f = cast %x : f32[128,64]
  %m = mean %f {axis = [0], keepdim = true} : f32[1,64]
  %d = sub %f, %m : f32[128,64]
  %q = mul %d, %d : f32[128,64]
  %v = mean %q {axis = [0]} : f32[64]
  return %v
})");
  ASSERT_EQ(ks.size(), 2u);
  for (const ir::Kernel& k : ks) {
    EXPECT_EQ(k.kind, ir::KernelKind::ColReduce);
    EXPECT_TRUE(k.args[0].name == "x" || k.args[1].name == "x") << ir::print(k);
  }
}

TEST(ColReduceFuse, SoftmaxOverALeadingAxisReadsTheInputInEveryKernel) {
  // max, then logsumexp of x - max, then the output: three kernels, nothing of x's size
  // written but the result.
  auto ks = kernels_of(R"(func @f(%x: f16[300,70]) -> (f16[300,70]) {
  %y = softmax %x {axis = 0} : f16[300,70]
  return %y
})",
                       "decompose,simplify,cse,dce,online-softmax,fuse,tile");
  ASSERT_EQ(ks.size(), 3u);
  EXPECT_EQ(ks[0].kind, ir::KernelKind::ColReduce);
  EXPECT_EQ(ks[1].kind, ir::KernelKind::ColReduce);
  EXPECT_EQ(ks[2].kind, ir::KernelKind::Pointwise);
  for (const ir::Kernel& k : ks)
    for (const ir::KernelArg& a : k.args)
      if (a.type.shape == Shape{300, 70}) {
        EXPECT_TRUE(a.name == "x" || a.name == "y") << ir::print(k);
      }
}

TEST(ColReduceFuse, InterleavedReducedAxesAreOneColReduceKernel) {
  auto ks = kernels_of(R"(func @f(%x: f32[4,8,16]) -> (f32[8]) {
  %s = sum %x {axis = [0, 2]} : f32[8]
  return %s
})");
  ASSERT_EQ(ks.size(), 1u);
  EXPECT_EQ(ks[0].kind, ir::KernelKind::ColReduce);
  EXPECT_EQ(ks[0].reduced_axes, (std::vector<int64_t>{0, 2}));
}

TEST(ColReduceKernel, VerifierRejectsUnsortedReducedDims) {
  auto ks = kernels_of(col_reduce_test::column_graph("sum", "f32", 8, 16));
  ASSERT_EQ(ks.size(), 1u);
  ir::Kernel k = ks[0];
  k.reduced_axes = {1, 0};
  try {
    ir::verify(k);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("must be distinct dims of [8,16], sorted"), std::string::npos) << e.what();
  }
}

TEST(ColReduceKernel, PrintsItsSpaceAndReducedDims) {
  auto ks = kernels_of(col_reduce_test::column_graph("max", "f16", 8, 16));
  ASSERT_EQ(ks.size(), 1u);
  std::string text = ir::print(ks[0]);
  EXPECT_NE(text.find("col_reduce(%x: f16[8,16], out %s: f16[16]) space [8,16] reduce [0] config {"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("%1 = reduce max %0 phase 0 : f16"), std::string::npos) << text;
}

}  // namespace
}  // namespace kiln
