// Fusion and lowering of attention into one attention kernel: the composite and the
// hand-written forms (two-phase softmax, online-softmax's logsumexp), each mask form
// (the causal flag, a causal or banded mask from iota / compare / select, a bias), the
// kernel IR's text, the relaxed shape rule (grouped-query attention), and the graphs
// that keep lowering as before (an unsupported head dim, a score read elsewhere).
#include <gtest/gtest.h>

#include <string>
#include <tuple>

#include "attention_test_graphs.h"
#include "codegen_test_util.h"
#include "frontend/kiln.h"
#include "ir/error.h"
#include "ir/interpreter.h"
#include "ir/kernel.h"
#include "ir/tile_config.h"
#include "ir/tile_config_attention_wgmma.h"
#include "ir/parser.h"
#include "passes/lower.h"
#include "passes/pass_manager.h"
#include "runtime/program.h"

namespace kiln {
namespace {

using test::AttentionShape;
using test::Mask;

passes::Plan lowered(const ir::Graph& graph, std::string_view pipeline = runtime::kCompilePipeline) {
  ir::Graph g = graph.clone();
  passes::PassManager(pipeline, {}).run(g);
  return passes::lower(g);
}

ir::Kernel only_attention(const passes::Plan& p) {
  EXPECT_EQ(p.kernels.size(), 1u);
  EXPECT_EQ(p.kernels.at(0).kind, ir::KernelKind::Attention);
  return p.kernels.at(0);
}

bool has_kind(const passes::Plan& p, ir::KernelKind kind) {
  for (const ir::Kernel& k : p.kernels)
    if (k.kind == kind) return true;
  return false;
}

TEST(AttentionFuse, TheCompositeBecomesOneKernel) {
  for (bool causal : {false, true}) {
    const ir::Kernel& k = only_attention(lowered(test::composite_attention(DType::f16, {{2, 4}, 100, 77, 64}, causal).ir()));
    EXPECT_EQ(k.attention.causal, causal);
    EXPECT_DOUBLE_EQ(k.attention.scale, 0.125);
    EXPECT_TRUE(ir::attention_plain_score(k));
    EXPECT_EQ(k.attention.sq, 100);
    EXPECT_EQ(k.attention.skv, 77);
    EXPECT_EQ(k.attention.batch, (Shape{2, 4}));
  }
}

TEST(AttentionFuse, TheKernelPrintsItsOperandsShapesScaleAndConfig) {
  const ir::Kernel& k = only_attention(lowered(test::composite_attention(DType::f16, {{2}, 128, 128, 64}, true).ir()));
  EXPECT_EQ(ir::print(k),
            "kernel @k0 attention(%q: f16[2,128,64], %k: f16[2,128,64], %v: f16[2,128,64], out %y: f16[2,128,64])\n"
            "    attention batch [2] 128x128 d 64 dv 64 q %q strides[8192,64,1] k %k strides[8192,64,1] "
            "v %v strides[8192,64,1] f16 -> f32 scale 0.125 causal\n"
            "    config " + k.config.str() + " {\n"
            "  %0 = acc : f32\n"
            "}\n");
  // 128 query rows on sm_90a: FlashAttention-3's schedule.
  EXPECT_TRUE(test::contains(k.config.str(), "schedule = wgmma")) << k.config.str();
  EXPECT_GE(k.fused_nodes.size(), 8u);
}

TEST(AttentionFuse, BothSoftmaxFormsMatch) {
  // With online-softmax (logsumexp) and without it (max, exp, sum, div).
  for (std::string_view pipeline : {runtime::kCompilePipeline, std::string_view("decompose,simplify,cse,dce,fuse")}) {
    SCOPED_TRACE(pipeline);
    for (DType dt : {DType::f16, DType::bf16}) {
      const ir::Kernel& k =
          only_attention(lowered(test::hand_written_attention(dt, {{3}, 70, 90, 128}, Mask::None).ir(), pipeline));
      EXPECT_TRUE(ir::attention_plain_score(k)) << ir::print(k);
      EXPECT_FALSE(k.attention.causal);
      EXPECT_EQ(k.attention.dtype, dt);
    }
  }
}

TEST(AttentionFuse, AHandWrittenCausalMaskBecomesTheCausalFlag) {
  const ir::Kernel& k = only_attention(lowered(test::hand_written_attention(DType::f16, {{2}, 64, 64, 64}, Mask::Causal).ir()));
  EXPECT_TRUE(k.attention.causal);
  EXPECT_TRUE(ir::attention_plain_score(k)) << ir::print(k);
}

TEST(AttentionFuse, ABandKeepsItsLowerEdgeInTheBody) {
  const ir::Kernel& k = only_attention(lowered(test::hand_written_attention(DType::bf16, {{2}, 130, 130, 128}, Mask::Band).ir()));
  EXPECT_TRUE(k.attention.causal);
  const std::string text = ir::print(k);
  EXPECT_TRUE(test::contains(text, "= index [0,1,0] : i32")) << text;
  EXPECT_TRUE(test::contains(text, "= gt ")) << text;
  EXPECT_TRUE(test::contains(text, "= select ")) << text;
}

TEST(AttentionFuse, AMaskThatIsNotCausalStaysInTheBody) {
  const ir::Kernel& k = only_attention(lowered(test::hand_written_attention(DType::f16, {{2}, 40, 40, 64}, Mask::Empty).ir()));
  EXPECT_FALSE(k.attention.causal);
  EXPECT_TRUE(test::contains(ir::print(k), "= ge ")) << ir::print(k);
}

TEST(AttentionFuse, ABiasIsLoadedInTheBody) {
  const ir::Kernel& k = only_attention(lowered(test::hand_written_attention(DType::f16, {{2, 3}, 50, 60, 64}, Mask::Bias).ir()));
  const std::string text = ir::print(k);
  EXPECT_TRUE(test::contains(text, "%bias: f16[50,60] strides[0,0,60,1]")) << text;
  EXPECT_TRUE(test::contains(text, "= load %bias : f16")) << text;
  EXPECT_TRUE(test::contains(text, "= add %0, ")) << text;
}

TEST(AttentionFuse, ABiasAnotherKernelComputesIsLoaded) {
  kiln::Graph g("computed_bias");
  auto q = g.input("q", DType::f16, {2, 64, 64});
  auto k = g.input("k", DType::f16, {2, 64, 64});
  auto v = g.input("v", DType::f16, {2, 64, 64});
  auto mask = g.input("mask", DType::f32, {64, 64});
  auto bias = kiln::cast(mask * 2.0, DType::f16);  // computed: written by a pointwise kernel first
  g.output(kiln::matmul(kiln::softmax(kiln::matmul(q, k, false, true) * 0.125 + bias), v));
  const passes::Plan p = lowered(g.ir());
  ASSERT_EQ(p.kernels.size(), 2u);
  EXPECT_EQ(p.kernels[0].kind, ir::KernelKind::Pointwise);
  EXPECT_EQ(p.kernels[1].kind, ir::KernelKind::Attention);
  EXPECT_TRUE(test::contains(ir::print(p.kernels[1]), "= load %")) << ir::print(p.kernels[1]);
}

TEST(AttentionFuse, LayersSharingOneCausalMaskAreEachOneKernel) {
  // CSE merges the two layers' identical masks; each layer gets its own copy back.
  kiln::Graph g("two_layers");
  auto q = g.input("q", DType::f16, {2, 4, 96, 64});
  auto k = g.input("k", DType::f16, {2, 4, 96, 64});
  auto v = g.input("v", DType::f16, {2, 4, 96, 64});
  auto first = kiln::attention(q, k, v, 0.125, true);
  g.output(kiln::attention(first, k, v, 0.125, true));
  const passes::Plan p = lowered(g.ir());
  ASSERT_EQ(p.kernels.size(), 2u);
  for (const ir::Kernel& kernel : p.kernels) {
    EXPECT_EQ(kernel.kind, ir::KernelKind::Attention);
    EXPECT_TRUE(kernel.attention.causal);
  }
}

TEST(AttentionFuse, TextWithATransposedKeyViewMatches) {
  ir::Graph g = ir::parse(R"(func @t(%q: f16[4,32,64], %k: f16[4,48,64], %v: f16[4,48,64]) -> (f16[4,32,64]) {
  %kt = transpose %k {perm = [0, 2, 1]} : f16[4,64,48]
  %s = matmul %q, %kt {transpose_a = false, transpose_b = false} : f16[4,32,48]
  %c = const 8.0 : f16[]
  %x = div %s, %c : f16[4,32,48]
  %p = softmax %x {axis = -1} : f16[4,32,48]
  %y = matmul %p, %v {transpose_a = false, transpose_b = false} : f16[4,32,64]
  return %y
})");
  const ir::Kernel& k = only_attention(lowered(g));
  EXPECT_DOUBLE_EQ(k.attention.scale, 0.125);
  EXPECT_EQ(k.args[static_cast<size_t>(k.attention.k)].strides, (std::vector<int64_t>{3072, 64, 1}));
}

TEST(AttentionFuse, GroupedQueryAttentionReadsOneKeyHeadPerGroup) {
  const ir::Kernel& k = only_attention(
      lowered(test::composite_attention(DType::f16, {{2, 2, 4}, 33, 50, 64, {2, 2, 1}}, true).ir()));
  EXPECT_EQ(k.attention.batch, (Shape{2, 2, 4}));
  EXPECT_EQ(k.args[static_cast<size_t>(k.attention.k)].strides, (std::vector<int64_t>{6400, 3200, 0, 64, 1}));
  EXPECT_EQ(k.args[static_cast<size_t>(k.attention.v)].strides, (std::vector<int64_t>{6400, 3200, 0, 64, 1}));
}

TEST(AttentionShapeRule, BatchDimsBroadcast) {
  kiln::Graph g("gqa");
  auto q = g.input("q", DType::f16, {2, 8, 4, 16, 64});
  auto k = g.input("k", DType::f16, {2, 8, 1, 16, 64});
  auto v = g.input("v", DType::f16, {2, 8, 1, 16, 32});
  EXPECT_EQ(kiln::attention(q, k, v).type().shape, (Shape{2, 8, 4, 16, 32}));
  auto k3 = g.input("k3", DType::f16, {2, 3, 1, 16, 64});
  try {
    kiln::attention(q, k3, v);
    ADD_FAILURE() << "batch dims 8 and 3 do not broadcast";
  } catch (const Error& e) {
    EXPECT_TRUE(test::contains(e.what(), "attention")) << e.what();
    EXPECT_TRUE(test::contains(e.what(), "do not broadcast")) << e.what();
  }
}

TEST(AttentionShapeRule, TheReferenceBroadcastsKeysAndValues) {
  // One key head for three query heads reads as that head repeated three times, in the
  // composite's reference and in its decomposition (broadcasting matmuls).
  kiln::Graph shared = test::composite_attention(DType::f32, {{2, 3}, 5, 6, 4, {2, 1}}, true);
  kiln::Graph repeated = test::composite_attention(DType::f32, {{2, 3}, 5, 6, 4}, true);
  std::vector<HostTensor> in = ir::random_inputs(shared.ir(), 1);
  std::vector<HostTensor> rep = {in[0], HostTensor(TensorType{DType::f32, {2, 3, 6, 4}}),
                                 HostTensor(TensorType{DType::f32, {2, 3, 6, 4}})};
  for (size_t t = 1; t < 3; ++t)
    for (int64_t b = 0; b < 2; ++b)
      for (int64_t h = 0; h < 3; ++h)
        for (int64_t e = 0; e < 24; ++e) rep[t].values[static_cast<size_t>((b * 3 + h) * 24 + e)] = in[t].values[static_cast<size_t>(b * 24 + e)];
  const HostTensor want = ir::evaluate(repeated.ir(), rep)[0];
  EXPECT_EQ(ir::evaluate(shared.ir(), in)[0].values, want.values);
  ir::Graph decomposed = shared.ir().clone();
  passes::PassManager("decompose", {}).run(decomposed);
  const HostTensor got = ir::evaluate(decomposed, in)[0];
  for (size_t i = 0; i < want.values.size(); ++i) EXPECT_NEAR(got.values[i], want.values[i], 1e-5) << i;
}

TEST(AttentionFuse, AnUnsupportedHeadDimKeepsTheThreeKernels) {
  const passes::Plan p = lowered(test::composite_attention(DType::f16, {{2}, 33, 50, 32}, false).ir());
  EXPECT_FALSE(has_kind(p, ir::KernelKind::Attention));
  EXPECT_TRUE(has_kind(p, ir::KernelKind::Gemm));
  EXPECT_TRUE(has_kind(p, ir::KernelKind::RowReduce));
}

TEST(AttentionFuse, F32AttentionKeepsTheThreeKernels) {
  const passes::Plan p = lowered(test::composite_attention(DType::f32, {{2}, 33, 50, 64}, false).ir());
  EXPECT_FALSE(has_kind(p, ir::KernelKind::Attention));
}

TEST(AttentionFuse, ScoresReadElsewhereAreNotFused) {
  kiln::Graph g("leaky");
  auto q = g.input("q", DType::f16, {2, 64, 64});
  auto k = g.input("k", DType::f16, {2, 64, 64});
  auto v = g.input("v", DType::f16, {2, 64, 64});
  auto p = kiln::softmax(kiln::matmul(q, k, false, true) * 0.125);
  g.output(kiln::matmul(p, v));
  g.output(p);  // the probabilities are returned: they must be written
  EXPECT_FALSE(has_kind(lowered(g.ir()), ir::KernelKind::Attention));
}

TEST(AttentionFuse, ASoftmaxOverQueriesIsNotAttention) {
  kiln::Graph g("columns");
  auto q = g.input("q", DType::f16, {2, 64, 64});
  auto k = g.input("k", DType::f16, {2, 64, 64});
  auto v = g.input("v", DType::f16, {2, 64, 64});
  g.output(kiln::matmul(kiln::softmax(kiln::matmul(q, k, false, true), -2), v));
  ir::Graph fused = g.ir().clone();
  passes::PassManager(runtime::kCompilePipeline, {}).run(fused);
  for (const ir::Group& grp : fused.groups()) EXPECT_NE(grp.kind, "attention");
}

TEST(AttentionFuse, AScoreOpReadingOtherElementsIsNotFused) {
  ir::Graph g = ir::parse(R"(func @t(%q: f16[64,64], %k: f16[64,64], %v: f16[64,64]) -> (f16[64,64]) {
  %s = matmul %q, %k {transpose_a = false, transpose_b = true} : f16[64,64]
  %st = transpose %s {perm = [1, 0]} : f16[64,64]
  %x = add %s, %st : f16[64,64]
  %p = softmax %x {axis = -1} : f16[64,64]
  %y = matmul %p, %v {transpose_a = false, transpose_b = false} : f16[64,64]
  return %y
})");
  EXPECT_FALSE(has_kind(lowered(g), ir::KernelKind::Attention));
}

TEST(AttentionTile, DefaultsAndCandidatesAreLegal) {
  for (int64_t d : {64, 128})
    for (bool causal : {false, true})
      for (int64_t s : {7, 1000, 4097}) {  // one key: see SingleKeyIsNoAttentionKernel
        const ir::Kernel& k = only_attention(lowered(test::composite_attention(DType::f16, {{2, 3}, s, s, d}, causal).ir()));
        SCOPED_TRACE(ir::print(k));
        EXPECT_NO_THROW(ir::validate(k, k.config));
        const auto all = ir::candidates(k);
        EXPECT_GE(all.size(), 6u);
        for (const ir::TileConfig& c : all) EXPECT_NO_THROW(ir::validate(k, c)) << c.str();
      }
}

// mma_sync's prompts: 128 rows on 4 warps of two row tiles where the registers allow it
// (64 keys at head dim 64; 32 at 128 with a plain score), else 8 warps of one; 64 rows when
// 128-row blocks would leave SMs without two blocks, and causal at head dim 128 (64 keys).
TEST(AttentionTile, MmaSyncPromptsTakeTwoRowTilesAWarp) {
  const ir::TargetScope target("sm_80");
  auto heuristic = [](const kiln::Graph& g) { return ir::attention_mma_sync_heuristic(only_attention(lowered(g.ir()))); };
  for (bool causal : {false, true}) {
    const ir::TileConfig d64 = heuristic(test::composite_attention(DType::f16, {{4, 16}, 2048, 2048, 64}, causal));
    EXPECT_EQ(std::tuple(d64.br, d64.bc, d64.warps, d64.stages), std::tuple(128, 64, 4, 2)) << d64.str();
    const ir::TileConfig d128 = heuristic(test::composite_attention(DType::bf16, {{4, 16}, 4096, 4096, 128}, causal));
    const auto want = causal ? std::tuple(64, 64, 4, 2) : std::tuple(128, 32, 4, 2);
    EXPECT_EQ(std::tuple(d128.br, d128.bc, d128.warps, d128.stages), want) << d128.str();
  }
  // A bias at head dim 128 holds too much for two tiles: one a warp.
  const ir::TileConfig biased =
      heuristic(test::hand_written_attention(DType::f16, {{4, 16}, 2048, 2048, 128}, test::Mask::Bias));
  EXPECT_EQ(std::tuple(biased.br, biased.warps), std::tuple(128, 8)) << biased.str();
  // 2 x 3 entries of 1000 rows: 48 blocks of 128 rows, fewer than two an SM.
  const ir::TileConfig small = heuristic(test::composite_attention(DType::f16, {{2, 3}, 1000, 1000, 64}, false));
  EXPECT_EQ(std::tuple(small.br, small.warps), std::tuple(64, 4)) << small.str();
}

// With one key the softmax is 1: simplify removes its reductions over the size-1 axis,
// so no attention pattern is left, and the graph lowers to the kernels it becomes.
TEST(AttentionTile, SingleKeyIsNoAttentionKernel) {
  for (bool causal : {false, true}) {
    const passes::Plan plan = lowered(test::composite_attention(DType::f16, {{2, 3}, 1, 1, 64}, causal).ir());
    EXPECT_FALSE(plan.kernels.empty());
    for (const ir::Kernel& k : plan.kernels) EXPECT_NE(k.kind, ir::KernelKind::Attention) << ir::print(k);
  }
}

TEST(AttentionTile, IllegalConfigsSayWhichRule) {
  const ir::Kernel& k = only_attention(lowered(test::composite_attention(DType::f16, {{2}, 256, 256, 128}, false).ir()));
  auto error = [&](ir::TileConfig c) {
    try {
      ir::validate(k, c);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const ir::TileConfig base = ir::attention_mma_sync_heuristic(k);  // the rules of mma_sync's configs
  ir::TileConfig c = base;
  c.br = 96;
  EXPECT_TRUE(test::contains(error(c), "br must be 16 or 32 x warps")) << error(c);
  c = base;
  c.bc = 48;
  EXPECT_TRUE(test::contains(error(c), "bc must be 32, 64 or 128")) << error(c);
  c = base;
  c.bc = 128;  // head dim 128: the scores of 128 keys do not fit next to the output
  EXPECT_TRUE(test::contains(error(c), "spill")) << error(c);
  c = base;
  c.bm = 64;
  EXPECT_TRUE(test::contains(error(c), "sets schedule, br, bc, warps, stages and split_k only")) << error(c);
  c = base;
  c.split_k = 16;  // 256 keys: 16 splits of 64-key tiles leave some empty
  EXPECT_TRUE(test::contains(error(c), "leaves an empty split")) << error(c);
  // Two row tiles a warp: 32 keys a tile at head dim 128, four warps or more, two stages.
  c = base;
  c.br = 128, c.warps = 4, c.bc = 32, c.stages = 2;
  EXPECT_EQ(error(c), "no error");
  EXPECT_EQ(ir::attention_warp_row_tiles(c), 2);
  c.bc = 64;
  EXPECT_TRUE(test::contains(error(c), "spill")) << error(c);
  c.bc = 32, c.stages = 1;
  EXPECT_TRUE(test::contains(error(c), "take 2 stages or more")) << error(c);
  c.stages = 2, c.br = 64, c.warps = 2;
  EXPECT_TRUE(test::contains(error(c), "take 4 or 8 warps")) << error(c);
}

TEST(AttentionTile, WgmmaConfigsSayWhichRule) {
  const ir::Kernel& k = only_attention(lowered(test::composite_attention(DType::f16, {{2}, 256, 256, 128}, false).ir()));
  const std::vector<ir::TileConfig> wgmma = ir::attention_wgmma_candidates(k);
  ASSERT_FALSE(wgmma.empty());
  auto error = [&](ir::TileConfig c) {
    try {
      ir::validate(k, c);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const ir::TileConfig base = wgmma[0];
  EXPECT_EQ(error(base), "no error");
  ir::TileConfig c = base;
  c.br = 64;
  EXPECT_TRUE(test::contains(error(c), "takes br = 128 with warps = 12 or br = 192 with warps = 16")) << error(c);
  c = base;
  c.br = 192;  // three consumers need a fourth warpgroup
  EXPECT_TRUE(test::contains(error(c), "takes br = 128 with warps = 12")) << error(c);
  c = base;
  c.bc = 32;
  EXPECT_TRUE(test::contains(error(c), "bc must be 64, 128 or 192")) << error(c);
  c = base;
  c.br = 192;  // head dim 128: three consumers' 160 registers cannot hold 128 keys' scores and the output
  c.warps = 16;
  EXPECT_TRUE(test::contains(error(c), "would hold 160 score, probability and output registers; more than 128 spill"))
      << error(c);
  c = base;
  c.bc = 192;  // three stages of 192 keys at head dim 128 do not fit in shared memory
  c.stages = 3;
  EXPECT_TRUE(test::contains(error(c), "shared memory")) << error(c);
  c = base;
  c.bc = 192;  // two consumers hold 208 of 240: legal, but not with a causal mask's bounds on top
  EXPECT_EQ(error(c), "no error");
  {
    const ir::Kernel& causal =
        only_attention(lowered(test::composite_attention(DType::f16, {{2}, 256, 256, 128}, true).ir()));
    try {
      ir::validate(causal, c);
      ADD_FAILURE() << "two consumers at 192 keys under a causal mask should not be legal";
    } catch (const Error& e) {
      EXPECT_TRUE(test::contains(e.what(), "would hold 208 score, probability and output registers; more than 204 "
                                           "spill with 2 consumers under a causal mask"))
          << e.what();
    }
  }
  c = base;
  c.stages = 1;
  EXPECT_TRUE(test::contains(error(c), "stages must be 2 to 4")) << error(c);
  c = base;
  c.split_k = 2;
  EXPECT_TRUE(test::contains(error(c), "does not split the keys")) << error(c);
  {
    const ir::TargetScope target("sm_90");
    EXPECT_TRUE(test::contains(error(base), "needs sm_90a")) << error(base);
  }
}

// The wgmma schedule runs where a config pins it; the heuristic keeps mma_sync.
// Prompts take the wgmma schedule on sm_90a (its configs lead the sweep); a few query
// rows, or any target but sm_90a, take mma_sync.
TEST(AttentionTile, WgmmaConfigsExistOnSm90aOnlyAndLeadForPrompts) {
  for (int64_t d : {64, 128})
    for (int64_t s : {7, 64, 65, 1000, 4097})
      for (bool causal : {false, true}) {
        const ir::Kernel& k =
            only_attention(lowered(test::composite_attention(DType::bf16, {{2, 3}, s, s, d}, causal).ir()));
        SCOPED_TRACE(fmt::format("d {} s {} causal {}", d, s, causal));
        EXPECT_EQ(k.config.schedule, s > 64 ? ir::kWgmma : ir::kMmaSync) << k.config.str();
        const std::vector<ir::TileConfig> wgmma = ir::attention_wgmma_candidates(k);
        // Two consumers: bc 64 and 128 at 2 or 3 stages, bc 192 (at head dim 128 in two
        // stages only, and not under a causal mask); three consumers: bc 64 at 2 or 3
        // stages, and bc 128 at head dim 64.
        EXPECT_EQ(wgmma.size(), d == 64 ? 10u : causal ? 6u : 7u);
        EXPECT_EQ(wgmma.front().br, 128);
        for (const ir::TileConfig& c : wgmma) EXPECT_NO_THROW(ir::validate(k, c)) << c.str();
        const std::vector<ir::TileConfig> sweep = ir::attention_candidates(k);
        EXPECT_EQ(sweep.front().schedule, s > 64 ? ir::kWgmma : ir::kMmaSync);
        EXPECT_EQ(ir::attention_heuristic(k), s > 64 ? wgmma.front() : ir::attention_mma_sync_heuristic(k));
        const ir::TargetScope target("sm_90");
        EXPECT_TRUE(ir::attention_wgmma_candidates(k).empty());
        EXPECT_EQ(ir::attention_heuristic(k).schedule, ir::kMmaSync);
        EXPECT_EQ(ir::attention_candidates(k).front().schedule, ir::kMmaSync);
      }
}

TEST(AttentionTile, DecodingSplitsTheKeysOverBlocks) {
  // 8 x 32 heads of one query against 8192 keys: 256 blocks alone would leave the SMs
  // streaming the cache with a block or two each.
  const ir::Kernel& k =
      only_attention(lowered(test::composite_attention(DType::f16, {{8, 32}, 1, 8192, 128}, false).ir()));
  EXPECT_GT(ir::attention_kv_splits(k.config), 1) << k.config.str();
  EXPECT_EQ(ir::attention_kv_chunk(k, k.config) % k.config.bc, 0);
  EXPECT_GT(ir::attention_workspace_floats(k, k.config), 0);
  const std::string cuda = codegen::emit_cuda(k);
  EXPECT_TRUE(test::contains(cuda, "combines them in split order")) << cuda;
  // 4097 keys in whole tiles: 32 splits of 256 keys would leave the last ones empty, so
  // the count comes down to the splits those chunks need (and the config stays legal).
  for (int64_t skv : {1000, 4097}) {
    const ir::Kernel& d =
        only_attention(lowered(test::composite_attention(DType::f16, {{2, 3}, 1, skv, 128}, false).ir()));
    SCOPED_TRACE(fmt::format("skv {}", skv));
    EXPECT_GT(ir::attention_kv_splits(d.config), 4) << d.config.str();
    EXPECT_LT((ir::attention_kv_splits(d.config) - 1) * ir::attention_kv_chunk(d, d.config), skv);
  }
  // A long prompt keeps one block a query tile.
  const ir::Kernel& p =
      only_attention(lowered(test::composite_attention(DType::f16, {{2, 16}, 4096, 4096, 128}, true).ir()));
  EXPECT_EQ(ir::attention_kv_splits(p.config), 1);
}

}  // namespace
}  // namespace kiln
