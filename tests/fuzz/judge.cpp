#include "tests/fuzz/judge.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "ir/compare.h"
#include "ir/interpreter.h"
#include "ir/printer.h"
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
  bool explains(size_t i, const HostTensor& got, std::string& why) {
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
    const Comparison whole = compare(got, values_[i], bounds_[i]);
    why = fmt::format("against the wide reference (f16 / bf16 intermediates in fp32; it differs from the per-op "
                      "one by {}): {}",
                      apart.str(), whole.str());
    if (whole.passed) return true;
    if (!stable_) stable_ = stable_elements(wide_.graph, inputs_, values_, bounds_);
    const std::vector<bool>& keep = (*stable_)[i];
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
  std::optional<WideOpinion> wide;                       // at the first one nudges do not excuse
  Verdict v;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const ir::Value& out = *g.outputs()[i];
    const Comparison c = compare(outputs[i], reference[i], bounds[i]);
    if (c.passed) continue;
    if (!stable) stable = stable_elements(g, inputs, reference, bounds);
    const std::vector<bool>& keep = (*stable)[i];
    const Comparison steady = compare(kept(outputs[i], keep), kept(reference[i], keep), bounds[i]);
    const auto left = std::count(keep.begin(), keep.end(), true);
    v.detail += fmt::format("output {} %{} {}: {}; on the {} elements that one-ulp nudges of the intermediates "
                            "leave in place ({} move): {}",
                            i, names.at(out.id), out.type.str(), c.str(), left,
                            static_cast<int64_t>(keep.size()) - left, steady.str());
    Verdict::Kind kind = Verdict::Kind::Unstable;
    if (!steady.passed) {
      if (!wide) wide.emplace(g, inputs, reference, bounds);
      std::string why;
      kind = wide->explains(i, outputs[i], why) ? Verdict::Kind::WideIntermediate : Verdict::Kind::Mismatch;
      v.detail += "; " + why;
    }
    v.detail += "\n";
    if (severity(kind) > severity(v.kind)) v.kind = kind;
  }
  return v;
}

}  // namespace kiln::fuzz
