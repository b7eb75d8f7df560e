// The attention kind's wgmma schedule (FlashAttention-3's layout, sm_90a) on the GPU,
// pinned by config on the graph's kernel block: every wgmma config on odd lengths, both
// head dims, f16 and bf16, causal or not, Sq != Skv, grouped-query attention, a band
// mask, an additive bias and fully masked rows, each against the reference interpreter;
// persistent blocks that take many items, run twice; and a long causal prompt on sampled
// rows.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "../unit/attention_test_graphs.h"
#include "frontend/kiln.h"
#include "attention_pinned.h"
#include "attention_reference_row.h"
#include "gpu_test_util.h"
#include "ir/interpreter.h"
#include "ir/tile_config_attention_wgmma.h"
#include "runtime/program.h"

namespace kiln {
namespace {

using test::AttentionShape;
using test::Mask;

// Every wgmma config of the graph's attention kernel (none unless sm_90a) against the reference.
void expect_every_wgmma_config_matches(const kiln::Graph& graph, int64_t zero_row = -1) {
  gpu_test::expect_every_pinned_config_matches(graph, ir::attention_wgmma_candidates, zero_row);
}

TEST(AttentionWgmmaGpu, OddLengthsBothHeadDimsAndDtypesCausalOrNot) {
  KILN_REQUIRE_GPU();
  for (DType dt : {DType::f16, DType::bf16})
    for (int64_t d : {64, 128})
      for (bool causal : {false, true})
        for (int64_t s : {7, 300}) {
          SCOPED_TRACE(fmt::format("{} d {} causal {} s {}", dtype_name(dt), d, causal, s));
          expect_every_wgmma_config_matches(test::composite_attention(dt, {{2, 3}, s, s, d}, causal));
        }
}

TEST(AttentionWgmmaGpu, LongerThanTheStagesGoRound) {
  KILN_REQUIRE_GPU();
  // 4097 keys: 33 tiles of 128 (the last of one key), round 2 or 3 buffers many times.
  for (bool causal : {false, true}) {
    SCOPED_TRACE(fmt::format("causal {}", causal));
    expect_every_wgmma_config_matches(test::composite_attention(DType::f16, {{1, 2}, 1000, 4097, 128}, causal));
    expect_every_wgmma_config_matches(test::composite_attention(DType::bf16, {{1, 2}, 4097, 1000, 64}, causal));
  }
}

TEST(AttentionWgmmaGpu, QueriesAndKeysOfDifferentLengthsAndGroupedQueries) {
  KILN_REQUIRE_GPU();
  for (bool causal : {false, true}) {
    SCOPED_TRACE(fmt::format("causal {}", causal));
    expect_every_wgmma_config_matches(test::composite_attention(DType::f16, {{2, 2}, 129, 1000, 64}, causal));
    expect_every_wgmma_config_matches(test::composite_attention(DType::f16, {{2, 2}, 1000, 129, 128}, causal));
    // 2 batches, 2 key heads, 4 query heads a key head: k and v read through rank-4 maps.
    expect_every_wgmma_config_matches(test::composite_attention(DType::bf16, {{2, 2, 4}, 333, 200, 128, {2, 2, 1}}, causal));
  }
}

TEST(AttentionWgmmaGpu, MasksBiasAndFullyMaskedRows) {
  KILN_REQUIRE_GPU();
  for (int64_t d : {64, 128}) {
    SCOPED_TRACE(fmt::format("d {}", d));
    expect_every_wgmma_config_matches(test::hand_written_attention(DType::f16, {{2, 2}, 517, 517, d}, Mask::Band));
    expect_every_wgmma_config_matches(test::hand_written_attention(DType::f16, {{3}, 130, 201, d}, Mask::Band, 40));
    expect_every_wgmma_config_matches(test::hand_written_attention(DType::bf16, {{2, 2}, 300, 301, d}, Mask::Bias));
    expect_every_wgmma_config_matches(test::hand_written_attention(DType::f16, {{2, 3}, 150, 150, d}, Mask::Empty), 0);
  }
}

// Many more row tiles than SMs: each persistent block takes several items, their key tiles
// going round the buffers across items; a second run of the same program (the item counter
// reset by the first) gives the same bits.
TEST(AttentionWgmmaGpu, PersistentBlocksTakeManyItemsAndRunAgain) {
  KILN_REQUIRE_GPU();
  for (bool causal : {false, true}) {
    SCOPED_TRACE(fmt::format("causal {}", causal));
    kiln::Graph graph = test::composite_attention(DType::f16, {{3, 61}, 333, 333, 64}, causal);
    gpu_test::FusedAttention f = gpu_test::fuse_attention(graph);
    const std::vector<ir::TileConfig> configs = gpu_test::attention_configs(f, ir::attention_wgmma_candidates);
    ASSERT_FALSE(configs.empty());
    const std::vector<HostTensor> inputs = ir::random_inputs(graph.ir(), 23);
    const HostTensor want = ir::evaluate(graph.ir(), inputs)[0];
    for (const ir::TileConfig& c : configs) {
      SCOPED_TRACE(c.str());
      f.graph.group(f.attention).tile = c.to_attrs();
      runtime::Program p = runtime::Program::compile(f.graph, gpu_test::lowering_only());
      const HostTensor first = p.run(inputs)[0];
      gpu_test::expect_matches_with_zero_row(first, want, *graph.ir().outputs()[0], -1);
      EXPECT_EQ(p.run(inputs)[0].values, first.values);
    }
  }
}

TEST(AttentionWgmmaGpu, LongPromptsOnSampledRows) {
  KILN_REQUIRE_GPU();
  for (bool causal : {false, true})
    for (DType dt : {DType::f16, DType::bf16}) {
      SCOPED_TRACE(fmt::format("{} causal {}", dtype_name(dt), causal));
      const AttentionShape s{{4, 16}, 4096, 4096, 128};
      kiln::Graph graph = test::composite_attention(dt, s, causal);
      gpu_test::FusedAttention f = gpu_test::fuse_attention(graph);
      const std::vector<ir::TileConfig> configs = gpu_test::attention_configs(f, ir::attention_wgmma_candidates);
      ASSERT_FALSE(configs.empty());
      f.graph.group(f.attention).tile = configs[0].to_attrs();
      runtime::Program p = runtime::Program::compile(f.graph, gpu_test::lowering_only());
      const std::vector<HostTensor> inputs = ir::random_inputs(graph.ir(), 5);
      const HostTensor got = p.run(inputs)[0];
      std::mt19937_64 rng(17);
      double diff2 = 0, ref2 = 0;
      int nonfinite = 0;
      for (int n = 0; n < 200; ++n) {
        const int64_t b = static_cast<int64_t>(rng() % 64);
        const int64_t i = n < 4 ? (n % 2 ? s.sq - 1 : 0) : static_cast<int64_t>(rng() % static_cast<uint64_t>(s.sq));
        const std::vector<double> want = gpu_test::reference_row(inputs, s, b, i, causal);
        for (int64_t c = 0; c < s.d; ++c) {
          const double have = got.values[static_cast<size_t>((b * s.sq + i) * s.d + c)];
          nonfinite += !std::isfinite(have);
          diff2 += (have - want[static_cast<size_t>(c)]) * (have - want[static_cast<size_t>(c)]);
          ref2 += want[static_cast<size_t>(c)] * want[static_cast<size_t>(c)];
        }
      }
      EXPECT_EQ(nonfinite, 0);
      EXPECT_LT(std::sqrt(diff2 / ref2), default_rel_l2_bound(dt));
    }
}

}  // namespace
}  // namespace kiln
