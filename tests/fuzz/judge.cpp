#include "tests/fuzz/judge.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>

#include "ir/compare.h"
#include "ir/interpreter.h"
#include "ir/printer.h"
#include "tests/fuzz/magnitude.h"
#include "tests/fuzz/nudge.h"
#include "tests/fuzz/wide_reference.h"

namespace kiln::fuzz {

namespace {

// The elements of `t` where `keep` holds, as a flat tensor.
HostTensor kept(const HostTensor& t, const std::vector<bool>& keep) {
  HostTensor out({t.type.dtype, {0}});
  for (size_t e = 0; e < t.values.size(); ++e)
    if (keep[e]) out.values.push_back(t.values[e]);
  out.type.shape = {static_cast<int64_t>(out.values.size())};
  return out;
}

// The elements of `got` that the absolute floor does not settle: those not within
// `floor` of `want` (magnitude.h), or not finite in both.
std::vector<bool> past_floor(const HostTensor& got, const HostTensor& want, const std::vector<double>& floor) {
  std::vector<bool> past(want.values.size(), true);
  for (size_t e = 0; e < past.size(); ++e) {
    const double g = got.values[e], w = want.values[e];
    past[e] = !(std::isfinite(g) && std::isfinite(w) && std::fabs(g - w) <= floor[e]);
  }
  return past;
}

std::vector<bool> both(std::vector<bool> a, const std::vector<bool>& b) {
  for (size_t e = 0; e < a.size(); ++e) a[e] = a[e] && b[e];
  return a;
}

// Worse verdicts win: a mismatch anywhere fails the graph.
int severity(Verdict::Kind k) {
  switch (k) {
    case Verdict::Kind::Pass: return 0;
    case Verdict::Kind::Unstable: return 1;
    case Verdict::Kind::WideIntermediate: return 2;
    default: return 3;
  }
}

// The wide reference's view of a graph's outputs, evaluated once for all of them.
class WideOpinion {
public:
  WideOpinion(const ir::Graph& g, const std::vector<HostTensor>& inputs, const std::vector<HostTensor>& reference,
              const std::vector<double>& bounds)
      : wide_(wide_graph(g)), inputs_(inputs), reference_(reference), bounds_(bounds) {
    if (wide_.widened > 0) values_ = ir::evaluate(wide_.graph, inputs);
  }

  // Whether output `i` of the GPU, `got`, follows the wide reference where the per-op
  // one went astray; `why` says how the comparisons went.
  bool explains(size_t i, const HostTensor& got, const std::vector<double>& floor, std::string& why) {
    if (wide_.widened == 0) {
      why = "no f16 / bf16 intermediate to hold in fp32: the wide reference is the per-op one";
      return false;
    }
    const Comparison apart = compare(values_[i], reference_[i], bounds_[i]);
    if (apart.passed) {
      why = fmt::format("the wide reference (f16 / bf16 intermediates in fp32) is within the bound of the per-op "
                        "one ({})", apart.str());
      return false;
    }
    const std::vector<bool> past = past_floor(got, values_[i], floor);
    const Comparison whole = compare(kept(got, past), kept(values_[i], past), bounds_[i]);
    why = fmt::format("against the wide reference (f16 / bf16 intermediates in fp32; it differs from the per-op "
                      "one by {}): {}",
                      apart.str(), whole.str());
    if (whole.passed) return true;
    if (!stable_) stable_ = stable_elements(wide_.graph, inputs_, values_, bounds_);
    const std::vector<bool> keep = both((*stable_)[i], past);
    const Comparison steady = compare(kept(got, keep), kept(values_[i], keep), bounds_[i]);
    why += fmt::format("; on the {} elements that its nudges leave in place: {}",
                       std::count(keep.begin(), keep.end(), true), steady.str());
    return steady.passed;
  }

private:
  WideGraph wide_;
  const std::vector<HostTensor>& inputs_;
  const std::vector<HostTensor>& reference_;
  const std::vector<double>& bounds_;
  std::vector<HostTensor> values_;
  std::optional<std::vector<std::vector<bool>>> stable_;
};

}  // namespace

Verdict judge_outputs(const ir::Graph& g, const std::vector<HostTensor>& inputs,
                      const std::vector<HostTensor>& reference, const std::vector<HostTensor>& outputs,
                      const std::vector<double>& bounds) {
  const auto names = ir::value_names(g);
  std::optional<std::vector<std::vector<bool>>> stable;  // computed at the first failed comparison
  std::optional<std::vector<std::vector<double>>> floors;  // at the same time
  std::optional<WideOpinion> wide;                       // at the first one nudges do not excuse
  Verdict v;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const ir::Value& out = *g.outputs()[i];
    const Comparison plain = compare(outputs[i], reference[i], bounds[i]);
    if (plain.passed) continue;
    if (!stable) {
      stable = stable_elements(g, inputs, reference, bounds);
      floors = absolute_floors(g, evaluate_intermediates(g, inputs), bounds);
    }
    // Elements tiny next to what their op consumed are checked absolutely, and pass
    // within their floor; the comparison is on the others.
    const std::vector<bool> past = past_floor(outputs[i], reference[i], (*floors)[i]);
    const auto floored = std::count(past.begin(), past.end(), false);
    const Comparison c = compare(kept(outputs[i], past), kept(reference[i], past), bounds[i]);
    if (c.passed) continue;
    const std::vector<bool> keep = both((*stable)[i], past);
    const Comparison steady = compare(kept(outputs[i], keep), kept(reference[i], keep), bounds[i]);
    const auto left = std::count(keep.begin(), keep.end(), true);
    v.detail += fmt::format("output {} %{} {}: {}", i, names.at(out.id), out.type.str(), plain.str());
    if (floored > 0)
      v.detail += fmt::format("; on the {} elements past the absolute floor of their op's magnitude: {}",
                              std::count(past.begin(), past.end(), true), c.str());
    v.detail += fmt::format("; on the {} elements that one-ulp nudges of the intermediates leave in place ({} move): {}",
                            left, std::count(past.begin(), past.end(), true) - left, steady.str());
    Verdict::Kind kind = Verdict::Kind::Unstable;
    if (!steady.passed) {
      if (!wide) wide.emplace(g, inputs, reference, bounds);
      std::string why;
      kind = wide->explains(i, outputs[i], (*floors)[i], why) ? Verdict::Kind::WideIntermediate : Verdict::Kind::Mismatch;
      v.detail += "; " + why;
    }
    v.detail += "\n";
    if (severity(kind) > severity(v.kind)) v.kind = kind;
  }
  return v;
}

}  // namespace kiln::fuzz
