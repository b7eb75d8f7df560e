// Attention graphs run at configs pinned on their kernel block: the graph fused (its
// attention block not yet tiled), the configs of that block this GPU can run, and each
// one checked against the reference interpreter on random inputs.
#pragma once
#include <gtest/gtest.h>

#include <functional>
#include <sstream>
#include <vector>

#include "frontend/kiln.h"
#include "gpu_test_util.h"
#include "ir/compare.h"
#include "ir/interpreter.h"
#include "ir/printer.h"
#include "ir/tile_config.h"
#include "passes/pass_manager.h"
#include "runtime/program.h"

namespace kiln::gpu_test {

// The graph fused and the index of its one attention kernel block (-1 without).
struct FusedAttention {
  ir::Graph graph;
  int attention = -1;
};

inline FusedAttention fuse_attention(const kiln::Graph& graph) {
  FusedAttention f{graph.ir().clone(), -1};
  std::ostringstream quiet;
  passes::PassManager("decompose,simplify,cse,dce,online-softmax,welford,fuse", {}, quiet).run(f.graph);
  for (int i = 0; i < static_cast<int>(f.graph.groups().size()); ++i)
    if (f.graph.groups()[i].kind == "attention") f.attention = i;
  return f;
}

inline runtime::ProgramOptions lowering_only() {
  runtime::ProgramOptions options;
  options.pipeline = "";  // lowering keeps the pinned block's config; any other block gets the heuristic's
  return options;
}

// `got` against the reference's `want` within the output's bound; query row `zero_row`
// (if >= 0) of every batch entry must be zeros in `got` and is left out of the comparison
// (the primitives' reference gives NaN for a row that sees no key).
inline void expect_matches_with_zero_row(HostTensor got, HostTensor want, const ir::Value& output, int64_t zero_row) {
  const Shape& shape = want.type.shape;
  const int64_t rows = shape[shape.size() - 2], d = shape.back(), batch = want.numel() / (rows * d);
  if (zero_row >= 0) {
    int nonzero = 0;
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t col = 0; col < d; ++col) {
        const size_t at = static_cast<size_t>((b * rows + zero_row) * d + col);
        nonzero += got.values[at] != 0.0;
        got.values[at] = want.values[at] = 0.0;
      }
    EXPECT_EQ(nonzero, 0);
  }
  Comparison cmp = compare(got, want, rel_l2_bound_for(output));
  EXPECT_TRUE(cmp.passed) << cmp.str();
}

using AttentionConfigs = std::function<std::vector<ir::TileConfig>(const ir::Kernel&)>;

// The configs `configs_of` gives the graph's attention kernel, for this GPU's arch.
inline std::vector<ir::TileConfig> attention_configs(FusedAttention& f, const AttentionConfigs& configs_of) {
  const runtime::Program p = runtime::Program::compile(f.graph, lowering_only());
  const ir::TargetScope target(p.arch());
  for (const runtime::CompiledKernel& k : p.kernels())
    if (k.kernel.kind == ir::KernelKind::Attention) return configs_of(k.kernel);
  return {};
}

// Runs `graph` pinned at each config `configs_of` gives on random inputs against the
// reference (none is a failure), row `zero_row` as expect_matches_with_zero_row takes it.
inline void expect_every_pinned_config_matches(const kiln::Graph& graph, const AttentionConfigs& configs_of,
                                               int64_t zero_row = -1) {
  FusedAttention f = fuse_attention(graph);
  ASSERT_GE(f.attention, 0) << ir::print(f.graph);
  const std::vector<ir::TileConfig> configs = attention_configs(f, configs_of);
  ASSERT_FALSE(configs.empty()) << "no such config of this kernel on this GPU";
  const std::vector<HostTensor> inputs = ir::random_inputs(graph.ir(), 11);
  const HostTensor want = ir::evaluate(graph.ir(), inputs)[0];
  for (const ir::TileConfig& c : configs) {
    SCOPED_TRACE(c.str());
    f.graph.group(f.attention).tile = c.to_attrs();
    runtime::Program p = runtime::Program::compile(f.graph, lowering_only());
    bool pinned = false;
    for (const runtime::CompiledKernel& k : p.kernels()) pinned = pinned || k.kernel.config == c;
    ASSERT_TRUE(pinned);
    expect_matches_with_zero_row(p.run(inputs)[0], want, *graph.ir().outputs()[0], zero_row);
  }
}

}  // namespace kiln::gpu_test
