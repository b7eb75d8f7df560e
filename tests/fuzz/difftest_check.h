// One graph of kiln-difftest checked on the GPU the way `kiln run` checks a graph:
// compiled end to end, run on random inputs (never zeros), every output compared
// with the reference interpreter's at the bound for its dtype (ir/compare.h), on the
// elements that do not hang on the last bit of an intermediate (nudge.h).
#pragma once
#include <cstdint>
#include <string>

#include "ir/graph.h"

namespace kiln::fuzz {

struct Verdict {
  enum class Kind {
    Pass,
    Rejected,  // compile refused it with a kiln::Error that names an op (a stated limit)
    Mismatch,  // an output differs from the reference past its bound
    Unstable,  // it differs only where the reference itself moves when an intermediate
               // moves by one unit in its last place (nudge.h): not a failure
    Bug,       // an error that names no op, a print -> parse mismatch, an unexpected exception
    RunError,  // the GPU run failed (a fault may have spoilt the CUDA context: stop)
  };
  Kind kind = Kind::Pass;
  std::string detail;
};
std::string_view verdict_name(Verdict::Kind k);

// On the GPU.
Verdict check_on_gpu(const ir::Graph& g, uint64_t input_seed);
// Without one: the pipeline check with the reference, and NVRTC unless `nvrtc` is
// false (pipeline_check.h).
Verdict check_compile_only(const ir::Graph& g, bool nvrtc = true);

}  // namespace kiln::fuzz
