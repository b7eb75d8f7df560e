// The reference interpreter: the meaning of every op, evaluated on the CPU.
// Each op's result is rounded to its dtype (as the GPU stores it); reductions,
// matmul and the composites accumulate in double. It is the oracle for every
// GPU test.
#pragma once
#include <functional>
#include <optional>
#include <vector>

#include "ir/graph.h"
#include "ir/tensor.h"

namespace kiln::ir {

// Evaluates `g` on inputs given in the order of g.inputs(); returns the outputs
// in the order of g.outputs(). Throws kiln::Error when an input's type differs.
std::vector<HostTensor> evaluate(const Graph& g, const std::vector<HostTensor>& inputs);

// Lets a caller compute some nodes itself (e.g. a large matmul on the GPU): before
// each node runs, `supply` is asked with the node and its operands' values; a tensor
// it returns becomes the node's result (it must have the node's result type, rounded
// to its dtype), and nodes downstream read it as if the interpreter had computed it.
// nullopt lets the interpreter compute the node.
struct EvalHooks {
  std::function<std::optional<HostTensor>(const Node& node, const std::vector<const HostTensor*>& operands)> supply;
};
// As evaluate() above, with some results supplied by `hooks`. Throws kiln::Error when
// a supplied result's type or size differs from the node's.
std::vector<HostTensor> evaluate(const Graph& g, const std::vector<HostTensor>& inputs, const EvalHooks& hooks);

// Random inputs for `g` (kiln::random_tensor: never zeros), deterministic in `seed`.
std::vector<HostTensor> random_inputs(const Graph& g, uint64_t seed);

}  // namespace kiln::ir
