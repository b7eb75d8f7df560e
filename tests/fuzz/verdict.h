// What kiln-difftest concludes about one graph (difftest_check.h, judge.h).
#pragma once
#include <string>
#include <string_view>

namespace kiln::fuzz {

struct Verdict {
  enum class Kind {
    Pass,
    Rejected,  // compile refused it with a kiln::Error that names an op (a stated limit)
    Mismatch,  // an output differs from the reference past its bound
    Unstable,  // it differs only where the reference itself moves when an intermediate
               // moves by one unit in its last place (nudge.h): not a failure
    // It differs from the per-op reference, which overflowed (or went far off) in an
    // f16 / bf16 intermediate, and matches the wide reference (wide_reference.h), which
    // holds those intermediates in fp32 as a fused kernel does: not a failure
    WideIntermediate,
    Bug,       // an error that names no op, a print -> parse mismatch, an unexpected exception
    RunError,  // the GPU run failed (a fault may have spoilt the CUDA context: stop)
  };
  Kind kind = Kind::Pass;
  std::string detail;
  bool settled_plainly = true;  // every output passed the plain comparison with the reference
};
std::string_view verdict_name(Verdict::Kind k);

// Whether a verdict counts as a failure of the graph (kiln-difftest's exit status, the shrinker).
bool is_failure(Verdict::Kind k);

}  // namespace kiln::fuzz
