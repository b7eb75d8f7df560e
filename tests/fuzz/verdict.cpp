#include "tests/fuzz/verdict.h"

namespace kiln::fuzz {

std::string_view verdict_name(Verdict::Kind k) {
  switch (k) {
    case Verdict::Kind::Pass: return "pass";
    case Verdict::Kind::Rejected: return "rejected";
    case Verdict::Kind::Mismatch: return "mismatch";
    case Verdict::Kind::Unstable: return "unstable (passes where the reference is stable)";
    case Verdict::Kind::WideIntermediate:
      return "wide intermediate (matches the fused fp32 semantics; the per-op reference overflowed)";
    case Verdict::Kind::Bug: return "bug";
    case Verdict::Kind::RunError: return "run error";
  }
  return "?";
}

bool is_failure(Verdict::Kind k) {
  switch (k) {
    case Verdict::Kind::Pass:
    case Verdict::Kind::Rejected:
    case Verdict::Kind::Unstable:
    case Verdict::Kind::WideIntermediate: return false;
    case Verdict::Kind::Mismatch:
    case Verdict::Kind::Bug:
    case Verdict::Kind::RunError: return true;
  }
  return true;
}

}  // namespace kiln::fuzz
