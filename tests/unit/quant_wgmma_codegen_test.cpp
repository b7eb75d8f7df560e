// The dequant_wgmma schedule (sm_90a, a tuning candidate): batches of up to 128 rows
// against i4 / i8 weights on wgmma with the weight dequantised in registers as the A
// operand; the generated source says so, every weight format compiles without spills or
// serialised products in the schedule's default config, and every candidate of one odd
// shape does too; where two blocks fit an SM the launch bounds ask for two.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "codegen/emit.h"
#include "codegen_test_util.h"
#include "frontend/kiln.h"
#include "ir/kernel.h"
#include "ir/tile_config.h"
#include "quant_test_graphs.h"
#include "runtime/nvrtc.h"

namespace kiln {
namespace {

using test::contains;
using test::Quant;
using test::quant_gemm_kernel;

// The schedule's own default config, the gemm default for 17 to 128 rows on sm_90a.
TEST(QuantWgmmaCodegen, TheScheduleComputesTheTransposedProductWithTheWeightInRegisters) {
  Quant q{DType::i4, DType::bf16, 37, 4096, 4096, 128, 0};
  ir::Kernel k = quant_gemm_kernel(q);
  EXPECT_EQ(k.config.schedule, ir::kDequantWgmma);
  ASSERT_TRUE(ir::gemm_dequant_wgmma_applies(k));
  k.config = ir::gemm_dequant_wgmma_heuristic(k);
  EXPECT_EQ(k.config.bm, 40);  // M rounded up to 8: the products' N
  const std::vector<ir::TileConfig> sweep = ir::gemm_dequant_wgmma_sweep(k);
  EXPECT_NE(std::find(sweep.begin(), sweep.end(), k.config), sweep.end());
  const std::vector<ir::TileConfig> all = ir::candidates(k);
  EXPECT_NE(std::find(all.begin(), all.end(), k.config), all.end());
  const std::string cuda = codegen::emit_cuda(k);
  for (const char* part :
       {"schedule dequant_wgmma: y^T = dequant(w) x^T", "wgmma.mma_async.sync.aligned.m64n40k16.f32.bf16.bf16",
        // A from registers, B K-major (no transpose bit).
        "{%20, %21, %22, %23}, %24, p, 1, 1, 0;",
        // Each thread copies its own pieces and their scales' words; the activations are
        // permuted into the B tile.
        "kiln_copy_async16_zfill(w_ring + slot *", "kiln_copy_async4_zfill(w_ring + slot *",
        "fence.proxy.async.shared::cta", "__byte_perm(lo, hi, (c & 1) ? 0x7632 : 0x5410)",
        // The i4 bit trick into the fragments, four register sets in turn.
        "a[3][f][3] = kiln_mul2_bf16(kiln_sub2_bf16(kiln_and_xor(w[f][1].y >> 12, 0x000f000fu, 0x43084308u)",
        "kiln_wgmma_wait<3>();  // the product four back",
        // Two warpgroups meet before either rewrites the B tile the other's products read.
        "__syncthreads();  // every warpgroup's products of step i - 1 have finished"})
    EXPECT_TRUE(contains(cuda, part)) << part << "\n" << cuda;
  EXPECT_FALSE(contains(cuda, "ldmatrix")) << cuda;
  // Not on plain sm_90 (no wgmma).
  const ir::TargetScope sm90("sm_90");
  EXPECT_FALSE(ir::gemm_dequant_wgmma_applies(quant_gemm_kernel(q)));
}

TEST(QuantWgmmaCodegen, EveryFormatCompilesWithoutSpillsInItsDefaultConfig) {
  for (DType act : {DType::f16, DType::bf16})
    for (DType weights : {DType::i4, DType::i8})
      for (int64_t m : {16, 64, 128})
        for (int zeros = 0; zeros < 3; ++zeros) {
          Quant q{weights, act, m, 4096, 4096, 128, zeros};
          SCOPED_TRACE(fmt::format("{} x {} m {} zeros {}", dtype_name(act), dtype_name(weights), m, zeros));
          ir::Kernel k = quant_gemm_kernel(q);
          k.config = ir::gemm_dequant_wgmma_heuristic(k);  // M = 16 defaults to the gemv
          EXPECT_EQ(test::ptxas_spill_bytes(k, "sm_90a"), 0) << k.config.str();
        }
}

TEST(QuantWgmmaCodegen, EveryCandidateOfAnOddShapeIsLegalAndCompiles) {
  Quant q{DType::i4, DType::f16, 37, 200, 1152, 32, 2};
  const ir::Kernel k = quant_gemm_kernel(q);
  EXPECT_GE(test::expect_each_compiles_without_spills(k, ir::gemm_dequant_wgmma_sweep(k)), 12);
}

TEST(QuantWgmmaCodegen, TheRulesSayWhatIsWrong) {
  const ir::Kernel k = quant_gemm_kernel({DType::i4, DType::f16, 64, 512, 1024, 128, 0});
  ir::TileConfig c = ir::gemm_dequant_wgmma_heuristic(k);
  auto rule_of = [&](const ir::TileConfig& bad) { return test::rule_broken(k, bad); };
  ir::TileConfig bad = c;
  bad.bm = 32;
  EXPECT_TRUE(contains(rule_of(bad), "bm must be M rounded up to 8 (64)")) << rule_of(bad);
  bad = c;
  bad.bk = 64;
  EXPECT_TRUE(contains(rule_of(bad), "bk must be 128")) << rule_of(bad);
  bad = c;
  bad.warps_n = 6;
  EXPECT_TRUE(contains(rule_of(bad), "warps_n must be 4, 8 or 16")) << rule_of(bad);
  bad = c;
  bad.stages = 2;
  EXPECT_TRUE(contains(rule_of(bad), "stages must be 3 to 8")) << rule_of(bad);
  // K not a whole number of steps: the schedule does not apply, and says why.
  const ir::Kernel odd = quant_gemm_kernel({DType::i4, DType::f16, 64, 512, 1056, 32, 0});
  EXPECT_FALSE(ir::gemm_dequant_wgmma_applies(odd));
  try {
    ir::validate(odd, c);
    ADD_FAILURE() << "accepted";
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "K a multiple of 64 bytes of a weight row")) << e.what();
  }
}

// Where two blocks' shared memory and threads fit an SM and the held values fit the halved
// register budget, the launch bounds ask for both (so ptxas caps the registers at 128);
// one block's ring of 6, 16 warps' 512 threads, or 128 activation rows keep one. Every
// config of the sweep that asks for two compiles without spills.
TEST(QuantWgmmaCodegen, TwoBlocksShareAnSmWhereTheyFit) {
  const ir::Kernel k = quant_gemm_kernel({DType::i4, DType::bf16, 64, 8192, 8192, 128, 0});
  ir::TileConfig c{.schedule = ir::kDequantWgmma, .bm = 64, .bn = 128, .bk = 128, .warps_n = 8, .stages = 3,
                   .split_k = 4};
  EXPECT_EQ(test::rule_broken(k, c), "accepted");
  EXPECT_EQ(ir::dequant_blocks_per_sm(k, c), 2);
  ir::Kernel two = k;
  two.config = c;
  const std::string cuda = codegen::emit_cuda(two);
  EXPECT_TRUE(contains(cuda, "__launch_bounds__(256, 2)")) << cuda;
  EXPECT_TRUE(contains(cuda, "2 blocks an SM")) << cuda;
  EXPECT_EQ(codegen::launch_dims(two).blocks_per_sm, 2u);  // the launch prefers the carveout for both
  EXPECT_EQ(test::ptxas_spill_bytes(two, "sm_90a"), 0);
  ir::TileConfig deep = c;
  deep.stages = 6;  // 193 KB
  EXPECT_EQ(ir::dequant_blocks_per_sm(k, deep), 1);
  ir::TileConfig wide = c;
  wide.bn = 256;
  wide.warps_n = 16;  // 512 threads: two blocks would leave 64 registers a thread
  EXPECT_EQ(ir::dequant_blocks_per_sm(k, wide), 1);
  const ir::Kernel tall = quant_gemm_kernel({DType::i4, DType::bf16, 128, 8192, 8192, 128, 0});
  ir::TileConfig tall_c = c;
  tall_c.bm = 128;  // 92 held registers: spilled under a cap of 128
  EXPECT_EQ(test::rule_broken(tall, tall_c), "accepted");
  EXPECT_EQ(ir::dequant_blocks_per_sm(tall, tall_c), 1);
  // The sweep's rings of 3 are there for two blocks an SM.
  std::vector<ir::TileConfig> shared;
  for (const ir::TileConfig& s : ir::gemm_dequant_wgmma_sweep(k)) {
    if (s.stages == 3) {
      EXPECT_GE(ir::dequant_blocks_per_sm(k, s), 2) << s.str();
    }
    if (ir::dequant_blocks_per_sm(k, s) > 1) shared.push_back(s);
  }
  EXPECT_NE(std::find(shared.begin(), shared.end(), c), shared.end());
  EXPECT_GE(test::expect_each_compiles_without_spills(k, shared), 1);
}

// The tuner's candidates take each schedule's configs in turn: a budget that stops the sweep
// early has still tried every schedule (16 rows: the gemv, both register-A schedules and
// mma_sync).
TEST(QuantWgmmaCodegen, TheCandidatesTakeEachScheduleInTurn) {
  const ir::Kernel k = quant_gemm_kernel({DType::i4, DType::bf16, 16, 8192, 8192, 128, 0});
  const std::vector<ir::TileConfig> all = ir::candidates(k);
  ASSERT_GT(all.size(), 100u);
  std::vector<int> first_five;
  for (size_t i = 0; i < 5; ++i) first_five.push_back(all[i].schedule);
  for (int schedule : {ir::kGemv, ir::kDequantWgmma, ir::kDequantMma, ir::kMmaSync}) {
    EXPECT_NE(std::find(first_five.begin(), first_five.end(), schedule), first_five.end())
        << ir::gemm_schedule_name(schedule);
  }
}

}  // namespace
}  // namespace kiln
