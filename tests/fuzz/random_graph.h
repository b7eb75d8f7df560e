// A random valid graph from a stream of decisions: every op that a graph can hold
// (element-wise unary and binary ops with numpy broadcasting, compares and select,
// casts, constants and iota, reductions over any axes, the views broadcast, reshape
// and transpose, matmul with transposes and batch broadcast, the composites softmax,
// log_softmax, layer_norm, rms_norm and attention) over f32, f16, bf16, i32 and i1.
// Operands come from the values made so far (recent ones first, so that chains form)
// or from new inputs; casts are added where an op needs another dtype. Every node is
// added through ir::Graph::add, which checks it, so the graph is valid by
// construction. The pipeline fuzzer and kiln-difftest share this generator.
#pragma once
#include <cstdint>

#include "ir/graph.h"
#include "tests/fuzz/decisions.h"

namespace kiln::fuzz {

struct GeneratorLimits {
  int max_ops = 12;             // ops drawn (casts and inputs they need come on top)
  int64_t max_elements = 4096;  // per tensor, so that the reference stays quick
  int max_rank = 4;
  int max_outputs = 3;
};

struct GeneratorStats {
  int ops = 0;       // nodes added
  int rejected = 0;  // draws the op table refused (a generator slip: skipped, counted)
};

ir::Graph random_graph(Decisions& d, const GeneratorLimits& limits = {}, GeneratorStats* stats = nullptr);

}  // namespace kiln::fuzz
