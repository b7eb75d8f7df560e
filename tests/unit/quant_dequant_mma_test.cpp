// The dequant_mma schedule (a tuning candidate for 17 to 128 rows against i4 / i8 weights
// where K is whole steps): the weight dequantised in registers as mma.sync's A operand, each
// warp's fragments multiplied against every activation row of the B tile, which
// ldmatrix reads. The generated source says so, every weight format compiles without
// spills in the schedule's own default config for sm_90a and sm_80, every candidate of an
// odd shape is legal and compiles, and the rules say what is wrong.
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

// The schedule's own default config.
ir::Kernel on_dequant_mma(const Quant& q) {
  ir::Kernel k = quant_gemm_kernel(q);
  k.config = ir::gemm_dequant_mma_heuristic(k);
  return k;
}

TEST(QuantDequantMma, EachWarpMultipliesItsFragmentsAgainstEveryActivationTile) {
  Quant q{DType::i4, DType::bf16, 37, 4096, 4096, 128, 0};
  const ir::Kernel k = on_dequant_mma(q);
  EXPECT_EQ(quant_gemm_kernel(q).config.schedule, ir::kDequantWgmma);  // the measured default on sm_90a
  EXPECT_EQ(k.config.bm, 40);  // M rounded up to 8: five n8 tiles
  const std::vector<ir::TileConfig> all = ir::candidates(k);
  EXPECT_NE(std::find(all.begin(), all.end(), k.config), all.end());
  const std::string cuda = codegen::emit_cuda(k);
  for (const char* part :
       {"schedule dequant_mma: y^T = dequant(w) x^T; each warp owns 32 weight rows as 2 mma.sync m16n8k16 A fragments",
        // Each thread copies its own pieces and their scales' words; the activations are
        // permuted into the B tile.
        "kiln_copy_async16_zfill(w_ring + slot *", "__byte_perm(lo, hi, (c & 1) ? 0x7632 : 0x5410)",
        // The i4 bit trick into one set of fragments, then B's registers by ldmatrix: two
        // tiles at a time, the fifth alone.
        "a[f][3] = kiln_mul2_bf16(kiln_sub2_bf16(kiln_and_xor(w[f][1].y >> 12, 0x000f000fu, 0x43084308u)",
        "kiln_ldmatrix_x4(b[1], b_at + 2048u);", "kiln_ldmatrix_x2(b[2][0], b[2][1], b_at + 4096u);",
        "kiln_mma_bf16(acc[f][j], a[f], b[j >> 1][(j & 1) * 2], b[j >> 1][(j & 1) * 2 + 1]);",
        // The chunks of product 3 (6 and 7) in the lane's swizzled place.
        "const unsigned b_at = tile + 0u + b_lane + ((b_swizzle ^ 6u) << 4);"})
    EXPECT_TRUE(contains(cuda, part)) << part << "\n" << cuda;
  for (const char* absent : {"wgmma", "fence.proxy.async", "warpgroup"}) EXPECT_FALSE(contains(cuda, absent)) << absent;
  // mma.sync runs on sm_80 too (a tuning candidate there; mma_sync is the default).
  const ir::TargetScope sm80("sm_80");
  EXPECT_TRUE(ir::gemm_dequant_mma_applies(quant_gemm_kernel(q)));
  EXPECT_FALSE(ir::gemm_dequant_wgmma_applies(quant_gemm_kernel(q)));
  EXPECT_EQ(quant_gemm_kernel(q).config.schedule, ir::kMmaSync);
}

TEST(QuantDequantMma, EveryFormatCompilesWithoutSpillsInItsDefaultConfig) {
  for (DType act : {DType::f16, DType::bf16})
    for (DType weights : {DType::i4, DType::i8})
      for (int64_t m : {17, 64, 128})
        for (int zeros = 0; zeros < 3; ++zeros) {
          Quant q{weights, act, m, 4096, 4096, 128, zeros};
          SCOPED_TRACE(fmt::format("{} x {} m {} zeros {}", dtype_name(act), dtype_name(weights), m, zeros));
          const ir::Kernel k = on_dequant_mma(q);
          EXPECT_EQ(test::ptxas_spill_bytes(k, "sm_90a"), 0) << k.config.str();
          // 128 rows against i4 (steps of 128): the activations' ring of three steps does not
          // fit sm_80's 163 KB, and the schedule has no config there.
          if (zeros == 1 && (m < 128 || weights == DType::i8)) {
            const ir::TargetScope sm80("sm_80");
            const ir::Kernel k80 = on_dequant_mma(q);
            EXPECT_EQ(test::ptxas_spill_bytes(k80, "sm_80"), 0) << k80.config.str();
          }
        }
}

// M not a multiple of 8 (padded activation rows read as zeros), N not a multiple of any
// block's rows, K of 9 steps (split slices of unequal length), groups of 32 (each thread's
// piece its own group) and i4 zero points.
TEST(QuantDequantMma, EveryCandidateOfAnOddShapeIsLegalAndCompiles) {
  Quant q{DType::i4, DType::f16, 37, 200, 1152, 32, 2};
  const ir::Kernel k = quant_gemm_kernel(q);
  EXPECT_GE(test::expect_each_compiles_without_spills(k, ir::gemm_dequant_mma_sweep(k)), 12);
}

TEST(QuantDequantMma, TheRulesSayWhatIsWrong) {
  const ir::Kernel k = on_dequant_mma({DType::i4, DType::f16, 64, 512, 1024, 128, 0});
  const ir::TileConfig c = k.config;
  auto rule_of = [&](const ir::TileConfig& bad) { return test::rule_broken(k, bad); };
  ir::TileConfig bad = c;
  bad.warps_n = 6;
  EXPECT_TRUE(contains(rule_of(bad), "warps_n must be 4, 8 or 16")) << rule_of(bad);
  bad = c;
  bad.bn = 16 * c.warps_n * 3;
  EXPECT_TRUE(contains(rule_of(bad), "one, two or four m16 fragments")) << rule_of(bad);
  bad = c;
  bad.bn = 16 * c.warps_n * 4;  // 4 x 32 accumulators
  EXPECT_TRUE(contains(rule_of(bad), "registers of accumulators")) << rule_of(bad);
  bad = c;
  bad.bk = 64;
  EXPECT_TRUE(contains(rule_of(bad), "bk must be 128")) << rule_of(bad);
  // K not a whole number of steps: the schedule does not apply, and says why and where.
  const ir::Kernel odd = quant_gemm_kernel({DType::i4, DType::f16, 64, 512, 1056, 32, 0});
  EXPECT_FALSE(ir::gemm_dequant_mma_applies(odd));
  EXPECT_EQ(odd.config.schedule, ir::kMmaSync);
  try {
    ir::validate(odd, c);
    ADD_FAILURE() << "accepted";
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "schedule dequant_mma takes, on sm_80 and up")) << e.what();
  }
}

}  // namespace
}  // namespace kiln
