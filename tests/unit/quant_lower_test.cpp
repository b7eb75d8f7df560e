// Where dequant runs: folded into a gemm kernel's B operand (the weights never
// written), with its epilogue, for decode-sized M on the gemv schedule and for larger M
// on dequant_wgmma (sm_90a; mma_sync elsewhere and where K is not whole steps of it);
// anything else expanded by decompose into pointwise kernels. The kernels
// compile through NVRTC for sm_90a and sm_80 with no warning, and the default configs
// do not spill (ptxas -v).
#include <gtest/gtest.h>

#include <regex>
#include <string>

#include "codegen/emit.h"
#include "codegen_test_util.h"
#include "frontend/kiln.h"
#include "ir/kernel.h"
#include "ir/printer.h"
#include "ir/tile_config.h"
#include "passes/lower.h"
#include "passes/pass_manager.h"
#include "quant_test_graphs.h"
#include "runtime/nvrtc.h"

namespace kiln {
namespace {

using test::contains;

passes::Plan planned(const ir::Graph& graph) {
  ir::Graph g = graph.clone();
  passes::PassManager("decompose,simplify,cse,dce,fuse", {}).run(g);
  return passes::lower(g);
}

using test::Quant;
using test::quant_linear;

TEST(QuantLowering, DequantFoldsIntoTheGemmOperandAndItsEpilogue) {
  const passes::Plan p = planned(quant_linear({}).ir());
  ASSERT_EQ(p.kernels.size(), 1u);
  const ir::Kernel& k = p.kernels[0];
  EXPECT_EQ(k.kind, ir::KernelKind::Gemm);
  EXPECT_TRUE(k.gemm.b.dequant.active());
  EXPECT_EQ(k.gemm.b.dequant.group, 128);
  EXPECT_EQ(k.config.schedule, ir::kGemv);
  const std::string text = ir::print(k);
  EXPECT_TRUE(contains(text, "b %w strides[1,256] [K contiguous] dequant {scales %s, group 128}")) << text;
  EXPECT_TRUE(contains(text, "silu")) << text;
  const std::string cuda = codegen::emit_cuda(k);
  EXPECT_TRUE(contains(cuda, "schedule gemv")) << cuda;
  EXPECT_TRUE(contains(cuda, "kiln_and_xor(")) << cuda;  // the i4 bit trick, not conversions
}

TEST(QuantLowering, LargerBatchesTakeTheWeightDequantisedInRegisters) {
  Quant q;
  q.m = 100;
  q.zeros = 1;
  const passes::Plan p = planned(quant_linear(q).ir());
  ASSERT_EQ(p.kernels.size(), 1u);
  const ir::Kernel& k = p.kernels[0];
  EXPECT_EQ(k.config.schedule, ir::kDequantWgmma);
  EXPECT_TRUE(contains(ir::print(k), "dequant {scales %s, zeros %z, group 128}"));
  EXPECT_TRUE(contains(codegen::emit_cuda(k), "(w - z) * s with scales %s and zero points %z per 128 elements of K"));
  // K not a whole number of its steps (128 i4 elements): the dequant in mma_sync's load.
  q.k = 320;
  q.group = 64;
  const passes::Plan odd_plan = planned(quant_linear(q).ir());
  const ir::Kernel& odd = odd_plan.kernels.at(0);
  EXPECT_EQ(odd.config.schedule, ir::kMmaSync);
  EXPECT_TRUE(contains(codegen::emit_cuda(odd), "with a scale per 64 elements of K"));
}

TEST(QuantLowering, ADequantThatFeedsNoMatmulIsExpandedIntoPointwiseKernels) {
  kiln::Graph g("q");
  auto w = g.input("w", i4, {6, 64});
  auto s = g.input("s", f16, {6, 2});
  g.output(kiln::dequant(w, s, 32) * 2.0);
  const passes::Plan p = planned(g.ir());
  ASSERT_FALSE(p.kernels.empty());
  for (const ir::Kernel& k : p.kernels) EXPECT_EQ(k.kind, ir::KernelKind::Pointwise) << ir::print(k);
  test::expect_compiles(p.kernels, "expanded_dequant");
}

TEST(QuantLowering, AWeightReadByAMatmulAndAnElementWiseOpIsExpandedOnce) {
  kiln::Graph g("q");
  auto x = g.input("x", f16, {4, 64});
  auto w = g.input("w", i8, {8, 64});
  auto s = g.input("s", f16, {8, 1});
  auto wd = kiln::dequant(w, s, 64);
  g.output(kiln::matmul(x, wd, false, true));
  g.output(wd + 1.0);
  const passes::Plan p = planned(g.ir());
  for (const ir::Kernel& k : p.kernels) EXPECT_FALSE(k.kind == ir::KernelKind::Gemm && k.gemm.b.dequant.active());
  test::expect_compiles(p.kernels, "shared_dequant");
}

TEST(QuantLowering, I8CastsAndI4LoadsStayInPointwiseKernels) {
  kiln::Graph g("q");
  auto w = g.input("w", i4, {33, 34});
  auto v = g.input("v", i8, {33, 34});
  auto f = kiln::cast(w, f32) + kiln::cast(v, f32);
  g.output(kiln::sum(f, {1}));
  g.output(kiln::cast(f * 3.0, i8));
  const passes::Plan p = planned(g.ir());
  for (const ir::Kernel& k : p.kernels) {
    if (k.kind == ir::KernelKind::Pointwise) continue;
    for (const ir::KernelArg& a : k.args) EXPECT_FALSE(is_storage_only(a.type.dtype)) << ir::print(k);
  }
  test::expect_compiles(p.kernels, "storage_casts");
}

// A view of i4 weights that a kernel writes out (a transpose the gemm cannot read in place)
// packs two elements a byte, as every reader of i4 expects: each thread's vectors are even,
// and a config of odd vectors is rejected with the reason.
TEST(QuantLowering, I4ViewsWrittenByAKernelPackTwoElementsAByte) {
  kiln::Graph g("t");
  g.output(kiln::transpose(g.input("w", i4, {6, 10}), {1, 0}));
  const passes::Plan p = planned(g.ir());
  ASSERT_EQ(p.kernels.size(), 1u);
  ir::Kernel k = p.kernels[0];
  EXPECT_EQ(k.config.vec % 2, 0) << k.config.str();
  const std::string cuda = codegen::emit_cuda(k);
  EXPECT_TRUE(contains(cuda, "<< 4)")) << cuda;
  EXPECT_TRUE(contains(cuda, "& 15)")) << cuda;
  test::expect_compiles(p.kernels, "i4_view");
  for (const ir::TileConfig& c : ir::candidates(k)) EXPECT_EQ(c.vec % 2, 0) << c.str();
  k.config.vec = 1;
  k.config.elems = 1;
  try {
    ir::validate(k, k.config);
    ADD_FAILURE() << "a config of single elements was accepted";
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "packs two elements a byte")) << e.what();
  }
  k.config.vec = 8;  // a tail of four elements: 60 is not a multiple of 8
  k.config.elems = 8;
  EXPECT_TRUE(contains(codegen::emit_cuda(k), "unsigned char w1[8] = {};"));
}

// Registers and spills of one compile, from ptxas -v.

// The scale multiplies fp32 sums once a piece, and no packed multiply is left in the
// loop, where a step's K lies in one group (groups of 128 and more) or, with one or two
// rows, by splitting B's columns between the lane columns (groups of 32); five rows with
// groups of 32 still scale every weight pair. f16's in-place nibbles (weights as A) take one fma
// each.
TEST(QuantCodegen, TheScaleMultipliesTheProductsSumsWhereAGroupAllows) {
  for (int64_t m : {1, 2, 5, 16})
    for (int64_t group : {32, 128})
      for (DType act : {DType::f16, DType::bf16}) {
        Quant q;
        q.m = m;
        q.act = act;
        q.group = group;
        q.zeros = 2;
        SCOPED_TRACE(fmt::format("m {} group {} {}", m, group, dtype_name(act)));
        const ir::Kernel k = planned(quant_linear(q).ir()).kernels.at(0);
        ASSERT_EQ(k.config.schedule, ir::kGemv);
        const std::string cuda = codegen::emit_cuda(k);
        const std::string pair = act == DType::bf16 ? "bf16" : "f16";
        const bool after = m <= 2 || group == 128;
        EXPECT_EQ(contains(cuda, "scaled once a piece"), after) << cuda;
        EXPECT_EQ(contains(cuda, "kiln_mul2_" + pair + "("), !after) << cuda;
        EXPECT_EQ(contains(cuda, "__shfl_xor_sync"), m <= 2 && group == 32) << cuda;
        EXPECT_EQ(contains(cuda, "kiln_fma2_f16("), act == DType::f16 && m <= 8) << cuda;
        EXPECT_EQ(test::ptxas_spill_bytes(k, "sm_90a"), 0) << k.config.str();
      }
}

// With the weights as A (M <= 8) and a step in one group, the i4 trick's pairs stay biased and
// each sum takes (offset + z) times its activations' sum, from products against ones; bf16
// products of i8 weights take each byte as two exact nibble planes. Not with two activation
// rows (the products bound that loop), nor f16 i4 pairs, which keep their fma.
TEST(QuantCodegen, TheBitTricksOffsetJoinsTheSumsWithTheWeightsAsA) {
  for (int64_t m : {1, 5, 16})
    for (DType w : {DType::i4, DType::i8})
      for (DType act : {DType::f16, DType::bf16})
        for (int zeros : {0, 1, 2}) {
          Quant q;
          q.m = m;
          q.weights = w;
          q.act = act;
          q.zeros = zeros;
          SCOPED_TRACE(fmt::format("m {} {} {} zeros {}", m, dtype_name(w), dtype_name(act), zeros));
          const ir::Kernel k = planned(quant_linear(q).ir()).kernels.at(0);
          ASSERT_EQ(k.config.schedule, ir::kGemv);
          const std::string cuda = codegen::emit_cuda(k);
          const bool weights_a = m <= 8, bf16 = act == DType::bf16;
          const bool folded = weights_a && bf16;
          EXPECT_EQ(contains(cuda, "(xs, ones,"), folded) << cuda;
          EXPECT_EQ(contains(cuda, "kiln_sub2_"), !folded && !(w == DType::i8 && bf16)) << cuda;
          EXPECT_EQ(contains(cuda, "0x45084508u"), folded && w == DType::i8) << cuda;
          EXPECT_EQ(contains(cuda, "8388736.0f"), !weights_a && bf16 && w == DType::i8) << cuda;
          if (folded) {
            EXPECT_TRUE(contains(cuda, fmt::format("__float_as_uint({}.0f", w == DType::i4 ? 136 : 2304))) << cuda;
          }
          EXPECT_EQ(test::ptxas_spill_bytes(k, "sm_90a"), 0) << k.config.str();
        }
}

TEST(QuantCodegen, EveryWeightFormatCompilesWithoutSpillsInItsDefaultConfig) {
  for (DType act : {DType::f16, DType::bf16})
    for (DType weights : {DType::i4, DType::i8})
      for (int64_t m : {1, 16, 64})
        for (int zeros = 0; zeros < 3; ++zeros) {
          Quant q;
          q.act = act;
          q.weights = weights;
          q.m = m;
          q.n = 4096;
          q.k = 4096;
          q.zeros = zeros;
          SCOPED_TRACE(fmt::format("{} x {} m {} zeros {}", dtype_name(act), dtype_name(weights), m, zeros));
          const passes::Plan p = planned(quant_linear(q).ir());
          ASSERT_EQ(p.kernels.size(), 1u);
          EXPECT_EQ(p.kernels[0].config.schedule, m <= 16 ? ir::kGemv : ir::kDequantWgmma);
          EXPECT_EQ(test::ptxas_spill_bytes(p.kernels[0], "sm_90a"), 0) << p.kernels[0].config.str();
          if (m == 1) {
            EXPECT_EQ(test::ptxas_spill_bytes(p.kernels[0], "sm_80"), 0) << p.kernels[0].config.str();
          }
        }
}

TEST(QuantCodegen, EveryGemvCandidateIsLegalAndCompiles) {
  for (int64_t group : {32, 4096}) {
    Quant q;
    q.n = 4096;
    q.k = 4096;
    q.group = group;
    q.zeros = group == 32 ? 1 : 0;
    const ir::Kernel k = planned(quant_linear(q).ir()).kernels.at(0);
    std::vector<ir::TileConfig> all = ir::candidates(k);
    int gemv = 0;
    for (const ir::TileConfig& c : all) {
      EXPECT_NO_THROW(ir::validate(k, c)) << c.str();
      if (c.schedule != ir::kGemv) continue;
      if (++gemv % 7 != 1) continue;  // a spread of them: every compile takes a moment
      ir::Kernel v = k;
      v.config = c;
      EXPECT_EQ(test::ptxas_spill_bytes(v, "sm_90a"), 0) << c.str();
    }
    EXPECT_GE(gemv, 24);
  }
}

TEST(QuantCodegen, PlainHalfWeightsMayTakeGemvToo) {
  kiln::Graph g("p");
  auto x = g.input("x", f16, {8, 1024});
  auto w = g.input("w", f16, {512, 1024});
  g.output(kiln::matmul(x, w, false, true));
  ir::Kernel k = planned(g.ir()).kernels.at(0);
  EXPECT_EQ(k.config.schedule, ir::kMmaSync);  // the measured default stays
  bool found = false;
  for (const ir::TileConfig& c : ir::candidates(k))
    if (c.schedule == ir::kGemv && !found) {
      found = true;
      k.config = c;
      EXPECT_EQ(test::ptxas_spill_bytes(k, "sm_90a"), 0);
      EXPECT_EQ(test::ptxas_spill_bytes(k, "sm_80"), 0);
    }
  EXPECT_TRUE(found);
}

TEST(QuantCodegen, PackedWeightsCopyByCpAsyncAndDequantiseInSharedMemory) {
  Quant q;
  q.m = 64;
  q.n = 1024;
  q.k = 1024;
  for (DType weights : {DType::i4, DType::i8})
    for (DType act : {DType::f16, DType::bf16})
      for (int zeros = 0; zeros < 3; ++zeros) {
        q.weights = weights;
        q.act = act;
        q.zeros = zeros;
        SCOPED_TRACE(fmt::format("{} x {} zeros {}", dtype_name(act), dtype_name(weights), zeros));
        ir::Kernel k = planned(quant_linear(q).ir()).kernels.at(0);
        // mma_sync's config of 64 x 64 tiles (the default is dequant_mma).
        k.config = ir::TileConfig{.schedule = ir::kMmaSync, .bm = 64, .bn = 64, .bk = 64, .warps_m = 2, .warps_n = 2,
                                  .stages = 3, .group = 8, .split_k = 1};
        ASSERT_NO_THROW(ir::validate(k, k.config));
        // Zero points of the weights' type (packed nibbles) stay on loads through registers.
        EXPECT_EQ(ir::gemm_dequant_packed(k, k.config), zeros != 2);
        const std::string cuda = codegen::emit_cuda(k);
        EXPECT_EQ(contains(cuda, "by 16-byte cp.async, dequantised in shared memory"), zeros != 2);
        // The bit tricks where they are exact; fp32 otherwise.
        const bool tricks = zeros == 0 && (weights == DType::i4 || act == DType::f16);
        EXPECT_EQ(contains(cuda, "kiln_dequant_i"), tricks);
        EXPECT_EQ(contains(cuda, "kiln_copy_async4_zfill"), zeros != 2);
      }
  // Rows of packed weights that are not 16-byte aligned: through registers.
  q.weights = DType::i4;
  q.zeros = 0;
  q.k = 1040;
  q.group = 16;
  const ir::Kernel k = planned(quant_linear(q).ir()).kernels.at(0);
  EXPECT_FALSE(ir::gemm_dequant_packed(k, k.config));
}

TEST(QuantCodegen, EveryPackedMmaSyncCandidateCompilesWithoutSpills) {
  Quant q;
  q.m = 40;
  q.n = 200;
  q.k = 1056;
  q.group = 96;
  const ir::Kernel k = planned(quant_linear(q).ir()).kernels.at(0);
  int packed = 0;
  for (const ir::TileConfig& c : ir::candidates(k)) {
    if (!ir::gemm_dequant_packed(k, c)) continue;
    EXPECT_NO_THROW(ir::validate(k, c)) << c.str();
    if (++packed % 9 != 1) continue;  // a spread of them: every compile takes a moment
    ir::Kernel v = k;
    v.config = c;
    EXPECT_EQ(test::ptxas_spill_bytes(v, "sm_90a"), 0) << c.str();
    EXPECT_EQ(test::ptxas_spill_bytes(v, "sm_80"), 0) << c.str();
  }
  EXPECT_GE(packed, 16);
}

TEST(QuantCodegen, OddShapesFallBackToLegalKernels) {
  // K not a multiple of a lane's 32 i4 elements, a group of 8: mma_sync with element loads.
  Quant q;
  q.n = 33;
  q.k = 72;
  q.group = 8;
  q.m = 3;
  q.zeros = 0;
  const passes::Plan p = planned(quant_linear(q).ir());
  ASSERT_EQ(p.kernels.size(), 1u);
  EXPECT_EQ(p.kernels[0].config.schedule, ir::kMmaSync);
  test::expect_compiles(p.kernels, "odd_quant");
  // A group of 2 cannot fold: the dequant is expanded, the product reads it from memory.
  q.group = 2;
  const passes::Plan e = planned(quant_linear(q).ir());
  EXPECT_GT(e.kernels.size(), 1u);
  test::expect_compiles(e.kernels, "expanded_quant");
}

}  // namespace
}  // namespace kiln
