// One graph of kiln-difftest checked on the GPU the way `kiln run` checks a graph:
// compiled end to end, run on random inputs (never zeros), every output compared
// with the reference interpreter's at the bound for its dtype (ir/compare.h), on the
// elements that do not hang on the last bit of an intermediate (nudge.h), or with the
// wide reference where the per-op one overflowed (judge.h).
#pragma once
#include <cstdint>
#include <vector>

#include "ir/graph.h"
#include "ir/tensor.h"
#include "tests/fuzz/verdict.h"

namespace kiln::fuzz {

// On the GPU; the GPU's outputs go to `outputs` when it is given (to be judged again
// without a GPU: judge_saved).
Verdict check_on_gpu(const ir::Graph& g, uint64_t input_seed, std::vector<HostTensor>* outputs = nullptr);
// The judge on outputs a GPU made earlier from the inputs of `input_seed`.
Verdict judge_saved(const ir::Graph& g, uint64_t input_seed, const std::vector<HostTensor>& outputs);
// Without one: the pipeline check with the reference, and NVRTC unless `nvrtc` is
// false (pipeline_check.h).
Verdict check_compile_only(const ir::Graph& g, bool nvrtc = true);

}  // namespace kiln::fuzz
