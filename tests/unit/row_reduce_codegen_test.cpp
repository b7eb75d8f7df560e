// The row-reduce emitter: the shape of the generated CUDA, and that every generated
// kernel compiles through NVRTC for sm_90a and sm_80 without a warning, for every row
// graph, dtype and row length (short rows with several rows per block, a warp per row,
// a block per row, streamed rows) and for each kind of tile config.
#include <gtest/gtest.h>

#include "codegen_test_util.h"

#include <sstream>

#include "codegen/emit.h"
#include "ir/error.h"
#include "ir/parser.h"
#include "ir/tile_config.h"
#include "passes/lower.h"
#include "passes/pass_manager.h"
#include "row_reduce_test_graphs.h"
#include "runtime/nvrtc.h"

namespace kiln {
namespace {

std::vector<ir::Kernel> kernels_of(const std::string& text, const std::string& prefix) {
  ir::Graph g = ir::parse(text, "row_reduce_codegen_test");
  std::ostringstream quiet;
  passes::PassManager("decompose,simplify,cse,dce,fuse,tile", {}, quiet).run(g);
  std::vector<ir::Kernel> ks = passes::lower(g).kernels;
  for (ir::Kernel& k : ks) k.name = prefix + "_" + k.name;
  return ks;
}


using test::contains;
using test::expect_compiles;

std::string source_of(const std::string& text) { return codegen::emit_cuda(kernels_of(text, "t")); }

TEST(RowReduceCodegen, EveryGraphDtypeAndRowLengthCompiles) {
  std::vector<ir::Kernel> all;
  int id = 0;
  for (const std::string& which : row_reduce_test::kCases)
    for (const char* dt : {"f32", "f16", "bf16"})
      for (long n : {1L, 3L, 127L, 4096L, 65536L})
        for (ir::Kernel& k : kernels_of(row_reduce_test::graph_text(which, dt, "3", n), "c" + std::to_string(id++)))
          all.push_back(std::move(k));
  expect_compiles(all, "row_reduce_all.cu");
}

TEST(RowReduceCodegen, EveryKindOfConfigCompiles) {
  // add+RMSNorm in f16 over rows of 1024 under sub-warp, warp, block and streamed configs.
  std::vector<ir::Kernel> all;
  const std::string text = row_reduce_test::graph_text("add_rms_norm", "f16", "5", 1024);
  for (const ir::TileConfig& c : ir::candidates(kernels_of(text, "x")[0])) {
    bool wanted = (c.vec == 8 || c.vec == 1) && (c.rows == 1 || c.row_threads == 8);
    if (!wanted) continue;
    ir::Kernel k = kernels_of(text, "cfg" + std::to_string(all.size()))[0];
    k.config = c;
    all.push_back(std::move(k));
  }
  ASSERT_GT(all.size(), 10u);
  expect_compiles(all, "row_reduce_configs.cu");
}

TEST(RowReduceCodegen, SoftmaxUsesVectorLoadsAndWarpShuffles) {
  std::string s = source_of(row_reduce_test::graph_text("softmax", "f16", "64", 1024));
  EXPECT_TRUE(contains(s, "kiln_vec<__half, 8>")) << s;
  EXPECT_TRUE(contains(s, "kiln_warp_max<32>")) << s;
  EXPECT_TRUE(contains(s, "kiln_warp_sum<32>")) << s;
  EXPECT_TRUE(contains(s, "// Phase 1")) << s;
  EXPECT_FALSE(contains(s, "atomic")) << s;
}

TEST(RowReduceCodegen, OnlyVectorsPastTheLastWholeOneTestTheEndOfTheRow) {
  // Rows of 4096 f16 are whole vectors for every lane: no end-of-row test at all.
  std::string whole = source_of(row_reduce_test::graph_text("softmax", "f16", "64", 4096));
  EXPECT_TRUE(contains(whole, "    if (active) {\n")) << whole;
  EXPECT_FALSE(contains(whole, "col < 4096u")) << whole;
  // Rows of 4000: vectors up to the last whole one skip the test, the rest keep it.
  std::string part = source_of(row_reduce_test::graph_text("softmax", "f16", "64", 4000));
  EXPECT_TRUE(contains(part, "|| col < 4000u)) {")) << part;
  EXPECT_FALSE(contains(part, "if (active && col < 4000u)")) << part;
}

TEST(RowReduceCodegen, EveryLogSumExpDtypeAndRowLengthCompiles) {
  // Held rows take the thread's max first (packed for fp16 / bf16 vectors, one value at a
  // time otherwise); streamed rows keep the running rescale.
  std::vector<ir::Kernel> all;
  int id = 0;
  for (const char* dt : {"f32", "f16", "bf16"})
    for (long n : {1L, 3L, 127L, 4096L, 65536L, 262144L})
      for (ir::Kernel& k : kernels_of(row_reduce_test::graph_text("logsumexp", dt, "3", n), "l" + std::to_string(id++)))
        all.push_back(std::move(k));
  expect_compiles(all, "row_logsumexp_all.cu");
}

TEST(RowReduceCodegen, HeldLogSumExpTakesTheThreadsMaxBeforeItsSum) {
  std::string f16 = source_of(row_reduce_test::graph_text("logsumexp", "f16", "3", 4096));
  EXPECT_TRUE(contains(f16, "= __hmax2_nan(top")) << f16;
  EXPECT_TRUE(contains(f16, "kiln_ex2(fmaf(xs")) << f16;
  EXPECT_TRUE(contains(f16, "*= kiln_ex2(-lo")) << f16;
  EXPECT_FALSE(contains(f16, "* kiln_lse_exp(lse_max")) << f16;  // no rescale per vector
  // bf16 and f32 maxima times log2(e) could overflow: their terms keep the subtraction.
  std::string bf16 = source_of(row_reduce_test::graph_text("logsumexp", "bf16", "3", 4096));
  EXPECT_TRUE(contains(bf16, "__halves2bfloat162(")) << bf16;
  EXPECT_TRUE(contains(bf16, "+= kiln_lse_exp(xs")) << bf16;
  EXPECT_FALSE(contains(bf16, "kiln_ex2(-lo")) << bf16;
  std::string f32 = source_of(row_reduce_test::graph_text("logsumexp", "f32", "3", 4096));
  EXPECT_TRUE(contains(f32, " = kiln_max(lse_max")) << f32;
  EXPECT_FALSE(contains(f32, "* kiln_lse_exp(lse_max")) << f32;
}

TEST(RowReduceCodegen, StreamedLogSumExpRescalesItsRunningSumPerVector) {
  const ir::TargetScope target("sm_80");  // no cluster to spread the row over
  std::string s = source_of(row_reduce_test::graph_text("logsumexp", "f16", "1", 262144));
  EXPECT_TRUE(contains(s, "re-read in each phase")) << s;
  EXPECT_TRUE(contains(s, "* kiln_lse_exp(lse_max")) << s;
  EXPECT_FALSE(contains(s, "__hmax2_nan")) << s;
}

TEST(RowReduceCodegen, LongRowsUseSharedMemoryAcrossWarps) {
  std::string s = source_of(row_reduce_test::graph_text("rms_norm", "bf16", "2", 8192));
  EXPECT_TRUE(contains(s, "__shared__ float kiln_slots")) << s;
  EXPECT_TRUE(contains(s, "kiln_block_sum<")) << s;
}

TEST(RowReduceCodegen, RowsTooLongForRegistersAreStreamed) {
  const ir::TargetScope target("sm_80");  // no cluster to spread the row over
  std::string s = source_of(row_reduce_test::graph_text("softmax", "f32", "1", 262144));
  EXPECT_TRUE(contains(s, "re-read in each phase")) << s;
  EXPECT_TRUE(contains(s, "col += ")) << s;
}

TEST(RowReduceCodegen, OddRowLengthFallsBackToScalarLoads) {
  std::string s = source_of(row_reduce_test::graph_text("softmax", "f16", "4", 127));
  EXPECT_TRUE(contains(s, "kiln_vec<__half, 1>")) << s;
}

TEST(RowReduceCodegen, LaunchDimsCoverEveryRow) {
  ir::Kernel k = kernels_of(row_reduce_test::graph_text("sum", "f32", "1000", 50), "t")[0];
  k.config.row_threads = 8;
  k.config.rows = 16;
  k.config.vec = 2;
  k.config.elems = 8;
  k.config.stream = 0;
  codegen::LaunchDims d = codegen::launch_dims(k);
  EXPECT_EQ(d.grid[0], 63u);  // ceil(1000 / 16)
  EXPECT_EQ(d.block[0], 128u);
}

}  // namespace
}  // namespace kiln
