// Row kernels after online-softmax and welford: softmax, log_softmax and LayerNorm are
// one reduction phase (the row is read once even when it is streamed), the generated
// CUDA keeps a running max and a rescaled sum (logsumexp) or Welford's triple (var),
// and every such kernel compiles through NVRTC for sm_90a and sm_80 without a warning
// for f32, f16 and bf16, rows kept in registers and streamed rows, sub-warp, warp and
// block-wide rows.
#include <gtest/gtest.h>

#include <sstream>

#include "codegen_test_util.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/tile_config.h"
#include "passes/lower.h"
#include "passes/pass_manager.h"
#include "row_reduce_test_graphs.h"
#include "runtime/program.h"

namespace kiln {
namespace {

using test::contains;
using test::expect_compiles;

std::vector<ir::Kernel> kernels_of(const std::string& text, const std::string& prefix) {
  ir::Graph g = ir::parse(text, "online_reduce_codegen_test");
  std::ostringstream quiet;
  passes::PassManager(std::string(runtime::kCompilePipeline), {}, quiet).run(g);
  std::vector<ir::Kernel> ks = passes::lower(g).kernels;
  for (ir::Kernel& k : ks) k.name = prefix + "_" + k.name;
  return ks;
}

std::string source_of(const std::string& text) { return codegen::emit_cuda(kernels_of(text, "t")); }

// The reductions of a kernel as "logsumexp@0" (op and phase), in body order.
std::vector<std::string> reductions(const ir::Kernel& k) {
  std::vector<std::string> out;
  for (const ir::ScalarOp& op : k.body)
    if (op.kind == ir::ScalarKind::Reduce)
      out.push_back(std::string(ir::op_name(op.op)) + "@" + std::to_string(op.phase));
  return out;
}

// A row logsumexp and a row var, returned per row: the reductions alone.
std::string plain_reduction(const std::string& op, const std::string& dt, long n) {
  const std::string full = dt + "[3," + std::to_string(n) + "]", per_row = dt + "[3,1]";
  return "func @" + op + "(%x: " + full + ") -> (" + per_row + ") {\n  %r = " + op +
         " %x {axis = [1], keepdim = true} : " + per_row + "\n  return %r\n}\n";
}

TEST(OnlineReduceCodegen, SoftmaxIsOnePhaseOfLogSumExp) {
  auto ks = kernels_of(row_reduce_test::graph_text("softmax", "f16", "64", 1000), "t");
  ASSERT_EQ(ks.size(), 1u);
  EXPECT_EQ(ks[0].kind, ir::KernelKind::RowReduce);
  EXPECT_EQ(reductions(ks[0]), (std::vector<std::string>{"logsumexp@0"})) << ir::print(ks[0]);
}

TEST(OnlineReduceCodegen, LogSoftmaxIsOnePhaseOfLogSumExp) {
  auto ks = kernels_of(row_reduce_test::graph_text("log_softmax", "bf16", "64", 1000), "t");
  ASSERT_EQ(ks.size(), 1u);
  EXPECT_EQ(reductions(ks[0]), (std::vector<std::string>{"logsumexp@0"})) << ir::print(ks[0]);
}

TEST(OnlineReduceCodegen, LongLayerNormRowsAreOnePhaseOfMeanAndVar) {
  auto ks = kernels_of(row_reduce_test::graph_text("layer_norm", "f16", "64", 65536), "t");
  ASSERT_EQ(ks.size(), 1u);
  EXPECT_EQ(reductions(ks[0]), (std::vector<std::string>{"mean@0", "var@0"})) << ir::print(ks[0]);
}

// A row one block holds in registers is read from them in both phases: the centred
// sum of squares is a second block sum, cheaper than Welford's merges.
TEST(OnlineReduceCodegen, LayerNormRowsInRegistersTakeTwoPhases) {
  auto ks = kernels_of(row_reduce_test::graph_text("layer_norm", "f16", "64", 1024), "t");
  ASSERT_EQ(ks.size(), 1u);
  EXPECT_EQ(reductions(ks[0]), (std::vector<std::string>{"mean@0", "mean@1"})) << ir::print(ks[0]);
  EXPECT_FALSE(contains(codegen::emit_cuda(ks), "kiln_welford_add(")) << ir::print(ks[0]);
}

TEST(OnlineReduceCodegen, SoftmaxKeepsARunningMaxAndRescaledSum) {
  std::string s = source_of(row_reduce_test::graph_text("softmax", "f16", "64", 1024));
  EXPECT_TRUE(contains(s, "lse_max")) << s;
  EXPECT_TRUE(contains(s, "kiln_lse_exp(")) << s;
  EXPECT_TRUE(contains(s, "kiln_ex2(")) << s;
  EXPECT_FALSE(contains(s, "expf(")) << s;  // every exp is one MUFU.EX2
  EXPECT_TRUE(contains(s, "kiln_warp_lse<32>")) << s;
  EXPECT_TRUE(contains(s, "kiln_lse_result(")) << s;
  // exp(x - logsumexp) as 2^((x - max) * log2(e) - log2(sum)): the max cancels exactly.
  EXPECT_TRUE(contains(s, "kiln_ex2(fmaf(e1 - lse_max2, 1.44269504f, lse_nlog2_2))")) << s;
  // The row is widened to f32 for the reduction and rounded once, by the store.
  EXPECT_TRUE(contains(s, "= __float2half_rn(e4);")) << s;
  EXPECT_TRUE(contains(s, "1 reduction phase.")) << s;
  EXPECT_FALSE(contains(s, "// Phase 1")) << s;
  EXPECT_FALSE(contains(s, "kiln_warp_max")) << s;
  EXPECT_FALSE(contains(s, "atomic")) << s;
}

TEST(OnlineReduceCodegen, StreamedSoftmaxReadsTheRowOnceForItsReduction) {
  const ir::TargetScope target("sm_80");  // no cluster to spread the row over
  std::string s = source_of(row_reduce_test::graph_text("softmax", "f32", "1", 262144));
  EXPECT_TRUE(contains(s, "re-read in each phase")) << s;
  EXPECT_TRUE(contains(s, "1 reduction phase.")) << s;
  EXPECT_TRUE(contains(s, "kiln_block_lse<")) << s;
  // Two slots per warp for the (max, sum) pair.
  EXPECT_TRUE(contains(s, "__shared__ float kiln_slots[2][")) << s;
}

TEST(OnlineReduceCodegen, LayerNormMergesWelfordTriples) {
  const ir::TargetScope target("sm_80");  // no cluster: the row is streamed, re-read in each phase
  std::string s = source_of(row_reduce_test::graph_text("layer_norm", "bf16", "2", 65536));
  EXPECT_TRUE(contains(s, "kiln_welford_add(")) << s;
  EXPECT_TRUE(contains(s, "kiln_block_welford<")) << s;
  EXPECT_TRUE(contains(s, "1 reduction phase.")) << s;
  // The mean's slot and the var's three.
  EXPECT_TRUE(contains(s, "__shared__ float kiln_slots[4][")) << s;
}

TEST(OnlineReduceCodegen, EveryGraphDtypeAndRowLengthCompiles) {
  std::vector<ir::Kernel> all;
  int id = 0;
  for (const char* dt : {"f32", "f16", "bf16"})
    for (long n : {1L, 3L, 127L, 4096L, 65536L}) {
      for (const char* which : {"softmax", "log_softmax", "layer_norm"})
        for (ir::Kernel& k : kernels_of(row_reduce_test::graph_text(which, dt, "3", n), "c" + std::to_string(id++)))
          all.push_back(std::move(k));
      for (const char* op : {"logsumexp", "var"})
        for (ir::Kernel& k : kernels_of(plain_reduction(op, dt, n), "c" + std::to_string(id++)))
          all.push_back(std::move(k));
    }
  // 75 less the three logsumexps of rows of one element, which simplify removes.
  ASSERT_EQ(all.size(), 72u);
  expect_compiles(all, "online_reduce_all.cu");
}

TEST(OnlineReduceCodegen, RegisterAndStreamedConfigsCompile) {
  // Sub-warp, warp and block rows, in registers and streamed, for each dtype.
  std::vector<ir::Kernel> all;
  int streamed = 0, in_registers = 0;
  for (const char* dt : {"f32", "f16", "bf16"})
    for (const char* which : {"softmax", "layer_norm"}) {
      const std::string text = row_reduce_test::graph_text(which, dt, "5", 1024);
      for (const ir::TileConfig& c : ir::candidates(kernels_of(text, "x")[0])) {
        bool wanted = (c.row_threads == 8 && c.rows == 4) || (c.row_threads == 32 && c.rows == 1) ||
                      (c.row_threads == 256 && c.rows == 1);
        if (!wanted || (c.vec != 1 && c.vec != 16 / (std::string(dt) == "f32" ? 4 : 2))) continue;
        ir::Kernel k = kernels_of(text, "cfg" + std::to_string(all.size()))[0];
        k.config = c;
        (c.stream ? streamed : in_registers)++;
        all.push_back(std::move(k));
      }
    }
  EXPECT_GE(streamed, 18);
  EXPECT_GE(in_registers, 6);
  expect_compiles(all, "online_reduce_configs.cu");
}

}  // namespace
}  // namespace kiln
