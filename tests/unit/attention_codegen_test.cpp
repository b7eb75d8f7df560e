// The attention kind's generated CUDA: its default configs (head dims 64 and 128, f16
// and bf16, causal or not) and every candidate of a large case compile through NVRTC
// with no warning and no register spill (ptxas -v), for sm_90a and sm_80; the score
// body's forms (a bias, a band) compile too; the source reads as the schedule it is.
#include <gtest/gtest.h>

#include <regex>
#include <string>

#include "attention_test_graphs.h"
#include "codegen/emit.h"
#include "codegen_test_util.h"
#include "ir/kernel.h"
#include "passes/lower.h"
#include "passes/pass_manager.h"
#include "runtime/nvrtc.h"
#include "runtime/program.h"

namespace kiln {
namespace {

using test::contains;
using test::Mask;

ir::Kernel attention_kernel(const kiln::Graph& graph) {
  ir::Graph g = graph.ir().clone();
  passes::PassManager(runtime::kCompilePipeline, {}).run(g);
  passes::Plan p = passes::lower(g);
  EXPECT_EQ(p.kernels.size(), 1u);
  EXPECT_EQ(p.kernels.at(0).kind, ir::KernelKind::Attention);
  return p.kernels.at(0);
}

struct Resources {
  int registers = -1, spill_bytes = -1;
};

Resources compile_with_ptxas_report(const ir::Kernel& k, const std::string& arch) {
  const ir::TargetScope target(arch);
  runtime::CompileResult r =
      runtime::compile_cuda(codegen::emit_cuda(k), k.name, runtime::CompileOptions{arch, {"--ptxas-options=-v"}});
  EXPECT_FALSE(r.cubin.empty());
  EXPECT_FALSE(contains(r.log, "warning")) << r.log;
  Resources res;
  std::smatch m;
  if (std::regex_search(r.log, m, std::regex("Used ([0-9]+) registers"))) res.registers = std::stoi(m[1]);
  if (std::regex_search(r.log, m, std::regex("([0-9]+) bytes spill stores"))) res.spill_bytes = std::stoi(m[1]);
  return res;
}

TEST(AttentionCodegen, DefaultConfigsCompileWithoutSpills) {
  for (DType dt : {DType::f16, DType::bf16})
    for (int64_t d : {64, 128})
      for (bool causal : {false, true})
        for (int64_t s : {int64_t{4096}, int64_t{1000}}) {
          const ir::Kernel k = attention_kernel(test::composite_attention(dt, {{4, 16}, s, s, d}, causal));
          SCOPED_TRACE(fmt::format("{} d {} causal {} s {}: {}", dtype_name(dt), d, causal, s, k.config.str()));
          const Resources r = compile_with_ptxas_report(k, "sm_90a");
          EXPECT_EQ(r.spill_bytes, 0);
          EXPECT_GT(r.registers, 0);
        }
}

TEST(AttentionCodegen, EveryCandidateCompilesWithoutSpills) {
  for (int64_t d : {64, 128}) {
    const ir::Kernel k = attention_kernel(test::composite_attention(DType::f16, {{4, 16}, 4096, 4096, d}, true));
    for (const ir::TileConfig& c : ir::candidates(k)) {
      ir::Kernel v = k;
      v.config = c;
      const Resources r = compile_with_ptxas_report(v, "sm_90a");
      EXPECT_EQ(r.spill_bytes, 0) << "d " << d << " " << c.str() << ": " << r.registers << " registers";
    }
  }
}

TEST(AttentionCodegen, DecodingCandidatesCompileWithoutSpills) {
  // One query a head against 8192 keys: the split candidates (every fourth of them) and
  // the default, both head dims.
  for (int64_t d : {64, 128}) {
    const ir::Kernel k = attention_kernel(test::composite_attention(DType::bf16, {{8, 32}, 1, 8192, d}, false));
    EXPECT_GT(ir::attention_kv_splits(k.config), 1) << k.config.str();
    EXPECT_EQ(compile_with_ptxas_report(k, "sm_90a").spill_bytes, 0) << k.config.str();
    int i = 0;
    for (const ir::TileConfig& c : ir::candidates(k)) {
      if (ir::attention_kv_splits(c) == 1 || i++ % 4 != 0) continue;
      ir::Kernel v = k;
      v.config = c;
      const Resources r = compile_with_ptxas_report(v, "sm_90a");
      EXPECT_EQ(r.spill_bytes, 0) << "d " << d << " " << c.str() << ": " << r.registers << " registers";
    }
    const codegen::LaunchDims dims = codegen::launch_dims(k);
    EXPECT_EQ(dims.grid[2], static_cast<unsigned>(ir::attention_kv_splits(k.config)));
  }
  test::expect_compiles({attention_kernel(test::composite_attention(DType::f16, {{2, 2, 4}, 5, 3000, 64, {2, 2, 1}},
                                                                    true))},
                        "decode_gqa_causal");
}

TEST(AttentionCodegen, ScoreBodiesCompileForSm90aAndSm80) {
  for (Mask m : {Mask::Causal, Mask::Band, Mask::Bias, Mask::Empty})
    test::expect_compiles({attention_kernel(test::hand_written_attention(DType::bf16, {{2}, 130, 70, 128}, m))},
                          "masks");
  test::expect_compiles({attention_kernel(test::composite_attention(DType::f16, {{2, 2, 3}, 33, 50, 64, {2, 2, 1}},
                                                                    true))},
                        "gqa");
}

TEST(AttentionCodegen, TheSourceReadsAsFlashAttention) {
  const ir::Kernel k = attention_kernel(test::composite_attention(DType::f16, {{4, 16}, 4096, 4096, 128}, true));
  const std::string cuda = codegen::emit_cuda(k);
  for (const char* part : {"// ---- kernel k0: attention batch [4,16] of 4096 queries x 4096 keys, head dim 128",
                           "// Fuses:", "= cast %q", "= cast %k", "= matmul %", "// Config {", "kiln_copy_async16_zfill(",
                           "kiln_ldmatrix_x4_trans(", "kiln_mma_f16(", "kiln_exp2(", "kiln_pack2_f16(",
                           "kiln_copy_async_wait_group<1>", "Online softmax", "kiln_store16(",
                           "min(4096, q0 + ", "gridDim.x - 1 - blockIdx.x"})
    EXPECT_TRUE(contains(cuda, part)) << part << "\n" << cuda;
  EXPECT_EQ(cuda.find("for (int t = 0; t < tiles; ++t)"), cuda.rfind("for (int t = 0; t < tiles; ++t)"));
  // A bias goes through the score function; the plain kernel has none.
  EXPECT_FALSE(contains(cuda, "k0_score("));
  const std::string biased =
      codegen::emit_cuda(attention_kernel(test::hand_written_attention(DType::f16, {{2}, 64, 64, 64}, Mask::Bias)));
  EXPECT_TRUE(contains(biased, "k0_score(s[n][r] * ")) << biased;
  EXPECT_TRUE(contains(biased, "in_bias[")) << biased;
}

TEST(AttentionCodegen, LaunchDimsCoverQueryTilesAndBatches) {
  const ir::Kernel k = attention_kernel(test::composite_attention(DType::f16, {{4, 16}, 4097, 4097, 64}, false));
  const codegen::LaunchDims d = codegen::launch_dims(k);
  EXPECT_EQ(d.grid[0], static_cast<unsigned>((4097 + k.config.br - 1) / k.config.br));
  EXPECT_EQ(d.grid[1], 64u);
  EXPECT_EQ(d.block[0], static_cast<unsigned>(32 * k.config.warps));
  EXPECT_EQ(d.shared_bytes, static_cast<unsigned>(ir::attention_shared_bytes(k, k.config)));
}

}  // namespace
}  // namespace kiln
