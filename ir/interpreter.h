// The reference interpreter: the meaning of every op, evaluated on the CPU.
// Each op's result is rounded to its dtype (as the GPU stores it); reductions,
// matmul and the composites accumulate in double. It is the oracle for every
// GPU test.
#pragma once
#include <vector>

#include "ir/graph.h"
#include "ir/tensor.h"

namespace kiln::ir {

// Evaluates `g` on inputs given in the order of g.inputs(); returns the outputs
// in the order of g.outputs(). Throws kiln::Error when an input's type differs.
std::vector<HostTensor> evaluate(const Graph& g, const std::vector<HostTensor>& inputs);

// Random inputs for `g` (kiln::random_tensor: never zeros), deterministic in `seed`.
std::vector<HostTensor> random_inputs(const Graph& g, uint64_t seed);

}  // namespace kiln::ir
