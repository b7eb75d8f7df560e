// The row-reduce kernel IR: its text, its verifier's rules, its collapsed form, and
// the kind's tile rules (legal configs, search space, default).
#include <gtest/gtest.h>

#include <sstream>
#include <tuple>

#include "ir/error.h"
#include "ir/kernel.h"
#include "ir/parser.h"
#include "ir/tile_config.h"
#include "passes/lower.h"
#include "passes/pass_manager.h"
#include "row_reduce_test_graphs.h"

namespace kiln {
namespace {

using ir::ScalarKind;
using ir::ScalarOp;

ir::Kernel kernel_of(const std::string& text) {
  ir::Graph g = ir::parse(text, "row_reduce_kernel_test");
  std::ostringstream quiet;
  passes::PassManager("decompose,simplify,cse,dce,fuse,tile", {}, quiet).run(g);
  std::vector<ir::Kernel> ks = passes::lower(g).kernels;
  EXPECT_EQ(ks.size(), 1u);
  return ks.at(0);
}

ir::Kernel case_kernel(const std::string& which, const std::string& dt, long n, const std::string& rows = "4") {
  return kernel_of(row_reduce_test::graph_text(which, dt, rows, n));
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(RowReduceKernel, SoftmaxPrintsItsPhases) {
  ir::Kernel k = case_kernel("softmax", "f32", 8);
  EXPECT_EQ(ir::print(k),
            "kernel @k0 row_reduce(%x: f32[4,8], out %y: f32[4,8]) rows [4,8] "
            "config {elems = 8, vec = 4, row_threads = 1, rows = 32} {\n"
            "  %0 = load %x : f32\n"
            "  %1 = reduce max %0 phase 0 : f32\n"
            "  %2 = sub %0, %1 : f32\n"
            "  %3 = exp %2 : f32\n"
            "  %4 = reduce sum %3 phase 1 : f32\n"
            "  %5 = div %3, %4 : f32\n"
            "  store %y, %5\n"
            "}\n");
}

TEST(RowReduceKernel, RowSumWritesOneValuePerRow) {
  ir::Kernel k = case_kernel("sum", "f32", 6);
  EXPECT_EQ(k.args.at(1).strides, (std::vector<int64_t>{1, 0}));
  EXPECT_NE(ir::print(k).find("out %s: f32[4]"), std::string::npos) << ir::print(k);
  EXPECT_EQ(ir::row_count(k), 4);
  EXPECT_EQ(ir::row_length(k), 6);
}

TEST(RowReduceKernel, RowUniformMarksPerRowValues) {
  ir::Kernel k = case_kernel("softmax", "f32", 8);
  EXPECT_EQ(ir::row_uniform(k), (std::vector<bool>{false, true, false, false, true, false, false}));
}

TEST(RowReduceKernel, CollapseKeepsALengthOneRowApart) {
  // var is the one reduction over a size-1 axis that simplify keeps (of +-inf it is NaN).
  ir::Kernel k = kernel_of(R"(func @v(%x: f32[3,5,1]) -> (f32[3,5,1]) {
  %v = var %x {axis = [2], keepdim = true} : f32[3,5,1]
  return %v
})");
  ASSERT_EQ(k.kind, ir::KernelKind::RowReduce);
  EXPECT_EQ(ir::collapse(k).dims, (Shape{15, 1}));
}

TEST(RowReduceKernel, VerifierRejectsAReductionInAPointwiseKernel) {
  ir::Kernel k;
  k.name = "k";
  ir::KernelArg x, y;
  x.name = "x";
  x.type = {DType::f32, {4}};
  x.strides = {1};
  x.value_id = 0;
  y = x;
  y.name = "y";
  y.is_output = true;
  y.value_id = 1;
  k.args = {x, y};
  ScalarOp load, reduce, store;
  load.kind = ScalarKind::Load;
  load.arg = 0;
  reduce.kind = ScalarKind::Reduce;
  reduce.op = ir::OpKind::ReduceSum;
  reduce.operands = {0};
  store.kind = ScalarKind::Store;
  store.arg = 1;
  store.operands = {1};
  k.body = {load, reduce, store};
  EXPECT_NE(error_of([&] { ir::verify(k); }).find("only a row_reduce kernel reduces"), std::string::npos);
}

TEST(RowReduceKernel, VerifierChecksPhases) {
  ir::Kernel k = case_kernel("softmax", "f32", 8);
  k.body[4].phase = 0;  // the sum of exp(x - max) must wait for the max
  EXPECT_NE(error_of([&] { ir::verify(k); }).find("op %4 is in phase 0; its operand makes it phase 1"),
            std::string::npos)
      << error_of([&] { ir::verify(k); });
}

TEST(RowReduceKernel, VerifierRejectsAPerElementValueInAPerRowOutput) {
  ir::Kernel k = case_kernel("sum", "f32", 6);
  for (ScalarOp& op : k.body)
    if (op.kind == ScalarKind::Store) op.operands = {0};  // the loaded element, not the sum
  EXPECT_NE(error_of([&] { ir::verify(k); }).find("varies along the row"), std::string::npos)
      << error_of([&] { ir::verify(k); });
}

TEST(RowReduceTile, ThreadsPerRowGrowWithTheRow) {
  // Rows enough to fill the GPU (1024): short rows take four 16-byte vectors a thread.
  auto threads = [](long n) { return case_kernel("softmax", "f16", n, "1024").config.row_threads; };
  EXPECT_EQ(threads(64), 2);
  EXPECT_EQ(threads(128), 4);
  EXPECT_EQ(threads(1024), 32);
  EXPECT_EQ(threads(4096), 64);
  EXPECT_EQ(threads(16384), 256);
}

TEST(RowReduceTile, TooFewRowsToFillTheGpuSpreadEachRowWider) {
  // A decoding step's row: two vectors a thread, up to 256 threads a row.
  for (const char* which : {"softmax", "layer_norm", "add_rms_norm"}) {
    ir::TileConfig c = case_kernel(which, "f16", 4096, "1").config;
    EXPECT_EQ(c.row_threads, 256) << which << " " << c.str();
    EXPECT_EQ(c.elems, 16) << which << " " << c.str();
  }
  EXPECT_EQ(case_kernel("softmax", "f16", 1024, "16").config.row_threads, 64);
  EXPECT_EQ(case_kernel("softmax", "f16", 128, "1").config.row_threads, 4);  // 16 vectors: as before
}

TEST(RowReduceTile, ShortRowsShareABlock) {
  ir::TileConfig c = case_kernel("sum", "f32", 50, "1000").config;
  EXPECT_LE(c.row_threads, 16);
  EXPECT_EQ(c.row_threads * c.rows, 128);
}

TEST(RowReduceTile, ShortRowsWrittenWholeGoOneWarpABlock) {
  // softmax and the norms write whole rows: blocks of one warp; a reduction alone keeps
  // blocks of 128 threads (ShortRowsShareABlock).
  for (const char* which : {"softmax", "layer_norm", "add_rms_norm"}) {
    ir::TileConfig c = case_kernel(which, "f16", 128).config;
    EXPECT_EQ(c.row_threads * c.rows, 32) << which << " " << c.str();
  }
  ir::TileConfig whole = case_kernel("softmax", "f16", 1024, "1024").config;
  EXPECT_EQ(whole.row_threads, 32);
  EXPECT_EQ(whole.rows, 1);
}

TEST(RowReduceTile, RowsThatDoNotFitInRegistersAreStreamed) {
  const ir::TargetScope target("sm_80");  // no cluster to spread the row over
  ir::TileConfig c = case_kernel("softmax", "f32", 262144, "1").config;
  EXPECT_EQ(c.stream, 1);
  EXPECT_EQ(c.elems, c.vec);
  EXPECT_EQ(case_kernel("softmax", "f32", 2048).config.stream, 0);
}

TEST(RowReduceTile, HeuristicIsAlwaysValid) {
  for (const std::string& which : row_reduce_test::kCases)
    for (const char* dt : {"f32", "f16", "bf16"})
      for (long n : {1L, 3L, 127L, 128L, 1000L, 4096L, 5120L, 50257L, 65536L}) {
        ir::Kernel k = case_kernel(which, dt, n);
        EXPECT_NO_THROW(ir::validate(k, ir::heuristic(k))) << which << " " << dt << " " << n;
      }
}

TEST(RowReduceTile, VectorsOnlyWhenTheRowHoldsWholeVectors) {
  EXPECT_EQ(case_kernel("softmax", "f16", 127).config.vec, 1);
  EXPECT_EQ(case_kernel("softmax", "f16", 1000).config.vec, 8);  // 16 bytes
  EXPECT_EQ(case_kernel("softmax", "f32", 1000).config.vec, 4);
  EXPECT_EQ(case_kernel("softmax", "f16", 1002).config.vec, 2);
}

TEST(RowReduceTile, CandidatesAreValidAndCoverRegistersAndStreaming) {
  ir::Kernel k = case_kernel("layer_norm", "bf16", 4096);
  auto cs = ir::candidates(k);
  ASSERT_FALSE(cs.empty());
  bool registers = false, streamed = false;
  for (const ir::TileConfig& c : cs) {
    EXPECT_NO_THROW(ir::validate(k, c)) << c.str();
    registers = registers || c.stream == 0;
    streamed = streamed || c.stream == 1;
  }
  EXPECT_TRUE(registers);
  EXPECT_TRUE(streamed);
}

TEST(RowReduceTile, CandidatesUseOnlyTheWidestLegalVector) {
  for (auto [dt, n, want] : {std::tuple{"f16", 4096L, 8}, {"f32", 4096L, 4}, {"f16", 1002L, 2}, {"f16", 127L, 1}}) {
    ir::Kernel k = case_kernel("softmax", dt, n);
    auto cs = ir::candidates(k);
    ASSERT_FALSE(cs.empty());
    for (const ir::TileConfig& c : cs) EXPECT_EQ(c.vec, want) << dt << " n=" << n << " " << c.str();
  }
  // Rows of 4096 f16: 23 block shapes, streamed, and in registers from 64 threads a row.
  EXPECT_EQ(ir::candidates(case_kernel("softmax", "f16", 4096)).size(), 28u);
}

TEST(RowReduceTile, ValidateNamesTheRuleBroken) {
  ir::Kernel k = case_kernel("softmax", "f16", 1000);
  auto rule = [&](ir::TileConfig c) { return error_of([&] { ir::validate(k, c); }); };
  ir::TileConfig good = k.config;
  ir::TileConfig c = good;
  c.row_threads = 64;
  c.rows = 2;
  c.elems = 16;
  EXPECT_NE(rule(c).find("rows must be 1"), std::string::npos) << rule(c);
  c = good;
  c.row_threads = 8;
  c.rows = 4;
  c.elems = 8;
  EXPECT_NE(rule(c).find("cannot hold a row of 1000 elements"), std::string::npos) << rule(c);
  c = good;
  c.row_threads = 8;
  c.rows = 2;
  EXPECT_NE(rule(c).find("a block holds whole warps"), std::string::npos) << rule(c);
  c = good;
  c.stream = 1;
  EXPECT_NE(rule(c).find("elems must equal vec"), std::string::npos) << rule(c);
  c = good;
  c.threads = 256;
  EXPECT_NE(rule(c).find("not threads"), std::string::npos) << rule(c);
  ir::Kernel odd = case_kernel("softmax", "f16", 127);
  c = odd.config;
  c.vec = 8;
  c.elems = 8 * ((127 + 8 * c.row_threads - 1) / (8 * c.row_threads));
  EXPECT_NE(error_of([&] { ir::validate(odd, c); }).find("not a multiple of vec"), std::string::npos);
}

}  // namespace
}  // namespace kiln
