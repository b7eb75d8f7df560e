// Attention kernels on the GPU against the reference interpreter, on random inputs:
// odd lengths (1, 7, 1000, 4097), head dims 64 and 128, f16 and bf16, causal or not,
// Sq != Skv, grouped-query attention, masks written with iota / compare / select, an
// additive bias, fully masked rows (zeros), every candidate config through the tuner's
// check, warps of two row tiles pinned, and a large case checked on sampled rows. On an
// sm_90a GPU every check runs twice: at the GPU's arch (prompts take the wgmma schedule)
// and compiled for sm_90, which keeps them on the mma_sync schedule (its kernels run on
// any Hopper GPU).
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "../unit/attention_test_graphs.h"
#include "frontend/kiln.h"
#include "gemm_test_util.h"
#include "attention_pinned.h"
#include "attention_reference_row.h"
#include "gpu_test_util.h"
#include "ir/compare.h"
#include "ir/interpreter.h"
#include "ir/printer.h"
#include "ir/tile_config.h"
#include "runtime/autotuner.h"
#include "runtime/nvrtc.h"
#include "runtime/program.h"

namespace kiln {
namespace {

using test::AttentionShape;
using test::Mask;

// The archs each check compiles for: the GPU's, and on sm_90a also sm_90 (mma_sync).
std::vector<std::string> archs_to_check() {
  if (runtime::default_arch() == "sm_90a") return {"", "sm_90"};
  return {""};
}

runtime::Program compile_one_attention_kernel(const ir::Graph& g, bool one_kernel = true, const std::string& arch = {}) {
  runtime::ProgramOptions options;
  options.arch = arch;
  runtime::Program p = runtime::Program::compile(g, options);
  if (!one_kernel) return p;
  EXPECT_EQ(p.plan().kernels.size(), 1u);
  EXPECT_EQ(p.plan().kernels.at(0).kind, ir::KernelKind::Attention) << ir::print(p.plan().kernels.at(0));
  return p;
}

// Runs `g` (one attention kernel, unless `one_kernel` is false) on random inputs against
// the reference interpreter, at each arch of archs_to_check().
void expect_matches_reference(const kiln::Graph& graph, uint64_t seed = 7, bool one_kernel = true) {
  const ir::Graph& g = graph.ir();
  std::vector<HostTensor> inputs = ir::random_inputs(g, seed);
  HostTensor want = ir::evaluate(g, inputs)[0];
  for (const std::string& arch : archs_to_check()) {
    runtime::Program p = compile_one_attention_kernel(g, one_kernel, arch);
    HostTensor got = p.run(inputs)[0];
    Comparison c = compare(got, want, rel_l2_bound_for(*g.outputs()[0]));
    EXPECT_TRUE(c.passed) << p.arch() << ": " << c.str() << "\n" << ir::print(p.plan().kernels.at(0));
  }
}

// Found by kiln-difftest: an f32 attention of head dim 1 runs as two gemms, and its
// query broadcast from one value to every row was read past its end (gemm_layout).
TEST(AttentionGpu, AQueryBroadcastToEveryRowAtHeadDimOne) {
  KILN_REQUIRE_GPU();
  for (bool causal : {false, true}) {
    kiln::Graph g("broadcast_query");
    auto q = g.input("q", DType::f32, {1});
    auto k = g.input("k", DType::f32, {1, 5, 1});
    auto v = g.input("v", DType::f32, {1, 5, 3});
    g.output(kiln::attention(kiln::broadcast_to(q, {1, 5, 1}), k, v, 0.125, causal));
    expect_matches_reference(g, 7, false);
  }
}

TEST(AttentionGpu, OddLengthsBothHeadDimsCausalOrNot) {
  KILN_REQUIRE_GPU();
  for (DType dt : {DType::f16, DType::bf16})
    for (int64_t d : {64, 128})
      for (bool causal : {false, true})
        for (int64_t s : {1, 7, 1000}) {
          SCOPED_TRACE(fmt::format("{} d {} causal {} s {}", dtype_name(dt), d, causal, s));
          // One key: the softmax over it is 1, simplify removes its reductions and the
          // pattern no longer matches; the graph stays right on the kernels it becomes.
          expect_matches_reference(test::composite_attention(dt, {{2, 3}, s, s, d}, causal), 7, s > 1);
        }
}

TEST(AttentionGpu, FourThousandAndNinetySevenTokens) {
  KILN_REQUIRE_GPU();
  for (int64_t d : {64, 128})
    for (bool causal : {false, true}) {
      SCOPED_TRACE(fmt::format("d {} causal {}", d, causal));
      expect_matches_reference(test::composite_attention(DType::f16, {{1, 2}, 4097, 4097, d}, causal));
    }
}

TEST(AttentionGpu, QueriesAndKeysOfDifferentLengths) {
  KILN_REQUIRE_GPU();
  struct Lengths {
    int64_t sq, skv;
  };
  for (Lengths l : {Lengths{1, 1000}, Lengths{7, 300}, Lengths{300, 7}, Lengths{1000, 129}, Lengths{129, 1000}})
    for (bool causal : {false, true})
      for (int64_t d : {64, 128}) {
        SCOPED_TRACE(fmt::format("sq {} skv {} causal {} d {}", l.sq, l.skv, causal, d));
        expect_matches_reference(test::composite_attention(DType::f16, {{2, 2}, l.sq, l.skv, d}, causal));
      }
}

TEST(AttentionGpu, GroupedQueryAttention) {
  KILN_REQUIRE_GPU();
  for (bool causal : {false, true})
    for (DType dt : {DType::f16, DType::bf16}) {
      SCOPED_TRACE(fmt::format("{} causal {}", dtype_name(dt), causal));
      // 2 batches, 2 key heads, 4 query heads a key head.
      expect_matches_reference(test::composite_attention(dt, {{2, 2, 4}, 333, 333, 128, {2, 2, 1}}, causal));
      expect_matches_reference(test::composite_attention(dt, {{2, 2, 4}, 65, 200, 64, {2, 2, 1}}, causal));
    }
}

TEST(AttentionGpu, DecodingSplitsTheKeysAndCombinesThem) {
  KILN_REQUIRE_GPU();
  // A few queries against long keys: the default splits the keys over blocks; every split
  // count the tuner may pick is checked too, with causal rows that see no key in late splits.
  for (int64_t sq : {1, 7, 16})
    for (int64_t skv : {1000, 4097})
      for (bool causal : {false, true}) {
        SCOPED_TRACE(fmt::format("sq {} skv {} causal {}", sq, skv, causal));
        kiln::Graph graph = test::composite_attention(DType::f16, {{2, 3}, sq, skv, 128}, causal);
        runtime::Program p = compile_one_attention_kernel(graph.ir());
        EXPECT_GT(ir::attention_kv_splits(p.plan().kernels.at(0).config), 1);
        expect_matches_reference(graph);
      }
  for (DType dt : {DType::f16, DType::bf16})  // grouped-query decoding, head dim 64
    expect_matches_reference(test::composite_attention(dt, {{2, 2, 4}, 1, 2000, 64, {2, 2, 1}}, false));
  const runtime::TuneResult r =
      gpu_test::every_candidate_passes(test::composite_attention(DType::bf16, {{2, 2}, 5, 3000, 128}, true).ir());
  int split = 0;
  for (const runtime::Trial& t : r.trials) split += ir::attention_kv_splits(t.config) > 1;
  EXPECT_GE(split, 8);
}

TEST(AttentionGpu, MasksWrittenWithIotaAndSelect) {
  KILN_REQUIRE_GPU();
  for (Mask m : {Mask::None, Mask::Causal, Mask::Band})
    for (int64_t d : {64, 128}) {
      SCOPED_TRACE(fmt::format("mask {} d {}", static_cast<int>(m), d));
      expect_matches_reference(test::hand_written_attention(DType::f16, {{2, 2}, 517, 517, d}, m));
      expect_matches_reference(test::hand_written_attention(DType::f16, {{3}, 130, 201, d}, m, 40));
    }
}

TEST(AttentionGpu, AnAdditiveBias) {
  KILN_REQUIRE_GPU();
  for (int64_t d : {64, 128}) {
    expect_matches_reference(test::hand_written_attention(DType::f16, {{2, 2}, 300, 301, d}, Mask::Bias));
    expect_matches_reference(test::hand_written_attention(DType::f16, {{1}, 1, 7, d}, Mask::Bias));
  }
}

// A mask that hides every key from query 0: the kernel gives zeros there (as the
// composite's reference does for a row that sees no key), the reference of the
// primitives the softmax of an empty row (NaN). The other rows match the reference.
TEST(AttentionGpu, FullyMaskedRowsGiveZeros) {
  KILN_REQUIRE_GPU();
  for (int64_t d : {64, 128}) {
    const AttentionShape s{{2, 3}, 150, 150, d};
    kiln::Graph graph = test::hand_written_attention(DType::f16, s, Mask::Empty);
    const ir::Graph& g = graph.ir();
    std::vector<HostTensor> inputs = ir::random_inputs(g, 3);
    const HostTensor reference = ir::evaluate(g, inputs)[0];
    for (const std::string& arch : archs_to_check()) {
      runtime::Program p = compile_one_attention_kernel(g, true, arch);
      SCOPED_TRACE(p.arch());
      gpu_test::expect_matches_with_zero_row(p.run(inputs)[0], reference, *g.outputs()[0], 0);
    }
  }
}

// The mma_sync configs whose warps own two row tiles of 16 (Q read again from shared memory).
std::vector<ir::TileConfig> two_row_tile_configs(const ir::Kernel& k) {
  std::vector<ir::TileConfig> out;
  for (const ir::TileConfig& c : ir::candidates(k))
    if (c.schedule == ir::kMmaSync && ir::attention_warp_row_tiles(c) == 2) out.push_back(c);
  return out;
}

TEST(AttentionGpu, TwoRowTilesAWarpOnOddLengths) {
  KILN_REQUIRE_GPU();
  for (bool causal : {false, true}) {
    SCOPED_TRACE(fmt::format("causal {}", causal));
    gpu_test::expect_every_pinned_config_matches(test::composite_attention(DType::f16, {{2, 3}, 1000, 1000, 128}, causal),
                                                 two_row_tile_configs);
    gpu_test::expect_every_pinned_config_matches(test::composite_attention(DType::bf16, {{1, 2}, 4097, 333, 64}, causal),
                                                 two_row_tile_configs);
    gpu_test::expect_every_pinned_config_matches(
        test::composite_attention(DType::bf16, {{2, 2, 4}, 333, 200, 128, {2, 2, 1}}, causal), two_row_tile_configs);
  }
  gpu_test::expect_every_pinned_config_matches(test::hand_written_attention(DType::f16, {{2, 2}, 517, 517, 64}, Mask::Band),
                                               two_row_tile_configs);
  gpu_test::expect_every_pinned_config_matches(test::hand_written_attention(DType::f16, {{2, 3}, 150, 150, 64}, Mask::Empty),
                                               two_row_tile_configs, 0);
}

TEST(AttentionGpu, EveryCandidatePassesTheTunersCheck) {
  KILN_REQUIRE_GPU();
  for (bool causal : {false, true})
    for (int64_t d : {64, 128}) {
      SCOPED_TRACE(fmt::format("causal {} d {}", causal, d));
      kiln::Graph graph = test::composite_attention(DType::f16, {{2, 2}, 300, 333, d}, causal);
      runtime::Program p = compile_one_attention_kernel(graph.ir());
      std::vector<runtime::KernelReference> refs = runtime::kernel_references(p.graph(), p.plan().kernels);
      runtime::TuneOptions options;
      options.warmup = 0;
      options.reps = 1;
      runtime::TuneResult r = runtime::tune_kernel(p.plan().kernels.at(0), refs.at(0), options);
      EXPECT_GE(r.trials.size(), 6u);
      for (const runtime::Trial& t : r.trials)
        EXPECT_TRUE(t.status == runtime::TrialStatus::Ok || t.status == runtime::TrialStatus::StoppedEarly ||
                    t.status == runtime::TrialStatus::OutOfResources)
            << t.config.str() << ": " << runtime::trial_status_name(t.status) << " " << t.detail;
      EXPECT_GE(r.best, 0);
    }
}

// ---- too large for the whole reference: sampled rows ----

void expect_sampled_rows_match(DType dt, const AttentionShape& s, bool causal, const std::string& arch,
                               int rows = 200) {
  kiln::Graph graph = test::composite_attention(dt, s, causal);
  runtime::Program p = compile_one_attention_kernel(graph.ir(), true, arch);
  SCOPED_TRACE(p.arch());
  std::vector<HostTensor> inputs = ir::random_inputs(graph.ir(), 5);
  HostTensor got = p.run(inputs)[0];
  const int64_t batch = numel(s.batch);
  std::mt19937_64 rng(17);
  double diff2 = 0, ref2 = 0;
  int nonfinite = 0;
  for (int n = 0; n < rows; ++n) {
    const int64_t b = static_cast<int64_t>(rng() % static_cast<uint64_t>(batch));
    const int64_t i = n < 4 ? (n % 2 ? s.sq - 1 : 0) : static_cast<int64_t>(rng() % static_cast<uint64_t>(s.sq));
    const std::vector<double> want = gpu_test::reference_row(inputs, s, b, i, causal);
    for (int64_t c = 0; c < s.d; ++c) {
      const double have = got.values[static_cast<size_t>((b * s.sq + i) * s.d + c)];
      if (!std::isfinite(have)) ++nonfinite;
      diff2 += (have - want[static_cast<size_t>(c)]) * (have - want[static_cast<size_t>(c)]);
      ref2 += want[static_cast<size_t>(c)] * want[static_cast<size_t>(c)];
    }
  }
  EXPECT_EQ(nonfinite, 0);
  EXPECT_LT(std::sqrt(diff2 / ref2), default_rel_l2_bound(dt)) << ir::print(p.plan().kernels[0]);
}

TEST(AttentionGpu, LargeShapesOnSampledRows) {
  KILN_REQUIRE_GPU();
  for (const std::string& arch : archs_to_check())
    for (bool causal : {false, true}) {
      SCOPED_TRACE(fmt::format("causal {}", causal));
      expect_sampled_rows_match(DType::f16, {{4, 16}, 4096, 4096, 128}, causal, arch);
      expect_sampled_rows_match(DType::bf16, {{4, 16}, 4096, 4096, 128}, causal, arch);
      expect_sampled_rows_match(DType::f16, {{2, 16}, 8192, 8192, 64}, causal, arch);
    }
}

}  // namespace
}  // namespace kiln
