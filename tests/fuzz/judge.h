// kiln-difftest's verdict on a graph's outputs, given the outputs of the GPU run and
// the reference interpreter's (no GPU needed here, so tests can feed made-up outputs).
// An output passes within its bound, where elements tiny next to the values their op
// consumed (a cancellation, gelu of a negative number: magnitude.h) are checked
// absolutely against a floor of that magnitude; failing that, without the elements that
// nudges of the intermediates by their ulp errors flip (a NaN, a boolean) or move at
// least as far as the GPU's value is off ("unstable", nudge.h); the elements set aside
// count as matching, so the rel-L2 stays over the output's whole norm; failing that, against the
// wide reference ("wide intermediate", wide_reference.h) when the per-op reference
// itself is past the bound from the wide one (an f16 / bf16 intermediate overflowed
// or lost its precision per op): the GPU must match the wide reference on the whole
// output, or on the elements that the wide reference's own nudges leave in place. Any
// other difference is a mismatch. The nudges and the wide reference are evaluated only
// for a graph whose plain comparison failed.
#pragma once
#include <vector>

#include "ir/graph.h"
#include "ir/tensor.h"
#include "tests/fuzz/verdict.h"

namespace kiln::fuzz {

// `reference` and `outputs` in the order of g.outputs(), `bounds` the rel-L2 bound of
// each output (ir/compare.h: rel_l2_bound_for), `inputs` those both were computed on.
Verdict judge_outputs(const ir::Graph& g, const std::vector<HostTensor>& inputs,
                      const std::vector<HostTensor>& reference, const std::vector<HostTensor>& outputs,
                      const std::vector<double>& bounds);

}  // namespace kiln::fuzz
