// Shrinks a graph that fails a check to a small one that still fails it, for a
// reproducer a person can read: greedily, it drops outputs, turns a node's result
// into a new input (deleting what only that node needed), replaces a node by an
// operand of the same type, and makes every dim of one size smaller (to 1, or half),
// keeping each change for which `still_fails` holds and starting over after it.
// Every candidate is rebuilt through ir::Graph::add, so it is a valid graph.
#pragma once
#include <functional>
#include <optional>

#include "ir/graph.h"

namespace kiln::fuzz {

using FailurePredicate = std::function<bool(const ir::Graph&)>;

struct ShrinkOptions {
  int max_attempts = 400;  // calls of the predicate (each one a compile and a run on the GPU)
};

struct ShrinkStats {
  int attempts = 0;  // predicate calls
  int accepted = 0;  // changes kept
};

// `g` must fail; the result fails too and is no larger.
ir::Graph shrink_graph(const ir::Graph& g, const FailurePredicate& still_fails, const ShrinkOptions& options = {},
                       ShrinkStats* stats = nullptr);

// One shrinking step, applied to a copy of `g` (exposed for tests).
struct GraphEdit {
  std::vector<size_t> drop_outputs;  // indices into g.outputs()
  int to_input = -1;                 // index into g.nodes(): its result becomes a new input
  int bypass = -1;                   // index into g.nodes(): replaced by one of its operands...
  int bypass_operand = 0;            // ...this one, which must have the node's type
  int64_t dim_from = 0, dim_to = 0;  // every dim of size dim_from becomes dim_to (0: none)
};
// The edited graph, holding only what its outputs need; nullopt when the edit breaks
// a rule (a reshape whose element count no longer matches, no output left, ...).
std::optional<ir::Graph> edit_graph(const ir::Graph& g, const GraphEdit& edit);

}  // namespace kiln::fuzz
