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

// `got` against `want` with the elements where `keep` is false counted as matching: the
// output's rel-L2 error over its whole norm, as the plain comparison measures it, less
// the elements the reference cannot pin down (the same scale the nudges are judged on).
Comparison compare_kept(const HostTensor& got, const HostTensor& want, const std::vector<bool>& keep, double bound) {
  HostTensor counted = got;
  for (size_t e = 0; e < keep.size(); ++e)
    if (!keep[e]) counted.values[e] = want.values[e];
  return compare(counted, want, bound);
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

// Up to four of the kept elements that fail: those not in the reference's NaN / Inf
// class first, then the farthest off, as "element 3: got -inf, reference nan".
std::string worst_elements(const HostTensor& got, const HostTensor& want, const std::vector<bool>& keep) {
  std::vector<std::pair<double, size_t>> off;
  for (size_t e = 0; e < keep.size(); ++e) {
    if (!keep[e]) continue;
    const double g = got.values[e], w = want.values[e];
    const bool same_class = (std::isfinite(g) && std::isfinite(w)) || (std::isnan(g) && std::isnan(w)) || g == w;
    const double d = !same_class ? INFINITY : std::isfinite(g) ? std::fabs(g - w) : 0.0;
    if (d > 0) off.emplace_back(d, e);
  }
  std::sort(off.begin(), off.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::string out;
  for (size_t i = 0; i < std::min<size_t>(4, off.size()); ++i)
    out += fmt::format("{}element {}: got {:.6g}, reference {:.6g}", i ? "; " : " (", off[i].second,
                       got.values[off[i].second], want.values[off[i].second]);
  return out.empty() ? out : out + ")";
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
    const Comparison whole = compare_kept(got, values_[i], past, bounds_[i]);
    why = fmt::format("against the wide reference (f16 / bf16 intermediates in fp32; it differs from the per-op "
                      "one by {}): {}",
                      apart.str(), whole.str());
    if (whole.passed) return true;
    if (!stable_) stable_ = stable_elements(wide_.graph, inputs_, values_, bounds_);
    const std::vector<bool> keep = both((*stable_)[i], past);
    const Comparison steady = compare_kept(got, values_[i], keep, bounds_[i]);
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
  std::optional<Sensitivity> nudges;  // computed at the first failed comparison
  std::optional<WideOpinion> wide;     // at the first one nudges do not excuse
  Verdict v;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const ir::Value& out = *g.outputs()[i];
    const Comparison plain = compare(outputs[i], reference[i], bounds[i]);
    if (plain.passed) continue;
    v.settled_plainly = false;
    if (!nudges) nudges = sensitivity(g, inputs, reference, bounds);
    const std::vector<double>& floor = nudges->floors[i];
    // Elements tiny next to what their op consumed are checked absolutely, and pass
    // within their floor; the comparison is on the others.
    const std::vector<bool> past = past_floor(outputs[i], reference[i], floor);
    const auto floored = std::count(past.begin(), past.end(), false);
    const Comparison c = compare_kept(outputs[i], reference[i], past, bounds[i]);
    if (c.passed) continue;
    // Set aside too: an element that a nudge flips (its NaN / Inf class, a boolean), and
    // one off by no more than the nudges moved the reference's own value.
    std::vector<bool> keep = past;
    for (size_t e = 0; e < keep.size(); ++e) {
      if (!keep[e]) continue;
      const double got = outputs[i].values[e], want = reference[i].values[e];
      if (nudges->flips[i][e] ||
          (std::isfinite(got) && std::isfinite(want) && std::fabs(got - want) <= nudges->spread[i][e] + floor[e]))
        keep[e] = false;
    }
    const Comparison steady = compare_kept(outputs[i], reference[i], keep, bounds[i]);
    const auto left = std::count(keep.begin(), keep.end(), true);
    v.detail += fmt::format("output {} %{} {}: {}", i, names.at(out.id), out.type.str(), plain.str());
    if (floored > 0)
      v.detail += fmt::format("; on the {} elements past the absolute floor of their op's magnitude: {}",
                              std::count(past.begin(), past.end(), true), c.str());
    v.detail += fmt::format("; on the {} elements that nudges of the intermediates neither flip nor move as far as "
                            "the GPU's value is off ({} set aside): {}",
                            left, std::count(past.begin(), past.end(), true) - left, steady.str());
    if (!steady.passed) v.detail += worst_elements(outputs[i], reference[i], keep);
    Verdict::Kind kind = Verdict::Kind::Unstable;
    if (!steady.passed) {
      if (!wide) wide.emplace(g, inputs, reference, bounds);
      std::string why;
      kind = wide->explains(i, outputs[i], floor, why) ? Verdict::Kind::WideIntermediate : Verdict::Kind::Mismatch;
      v.detail += "; " + why;
    }
    v.detail += "\n";
    if (severity(kind) > severity(v.kind)) v.kind = kind;
  }
  return v;
}

}  // namespace kiln::fuzz
