#include "tests/fuzz/difftest_check.h"

#include <fmt/format.h>

#include <exception>
#include <optional>

#include "ir/compare.h"
#include "ir/error.h"
#include "ir/interpreter.h"
#include "ir/printer.h"
#include "runtime/knobs.h"
#include "runtime/program.h"
#include "runtime/reference.h"
#include "tests/fuzz/nudge.h"
#include "tests/fuzz/pipeline_check.h"

namespace kiln::fuzz {

std::string_view verdict_name(Verdict::Kind k) {
  switch (k) {
    case Verdict::Kind::Pass: return "pass";
    case Verdict::Kind::Rejected: return "rejected";
    case Verdict::Kind::Mismatch: return "mismatch";
    case Verdict::Kind::Unstable: return "unstable (passes where the reference is stable)";
    case Verdict::Kind::Bug: return "bug";
    case Verdict::Kind::RunError: return "run error";
  }
  return "?";
}

Verdict check_on_gpu(const ir::Graph& g, uint64_t input_seed) {
  std::optional<runtime::Program> program;
  try {
    program.emplace(runtime::Program::compile(g));
  } catch (const Error& e) {
    // Judged as the compile-only check judges it: a stated limit names an op of the graph
    // or of its optimised form (a softmax's logsumexp), anything else is a bug.
    PipelineOptions options;
    options.nvrtc = false;
    const bool stated = run_pipeline(g, options).kind == PipelineOutcome::Kind::Rejected;
    return {stated ? Verdict::Kind::Rejected : Verdict::Kind::Bug, e.what()};
  } catch (const std::exception& e) {
    return {Verdict::Kind::Bug, fmt::format("compile: unexpected exception: {}", e.what())};
  }
  std::vector<HostTensor> inputs = ir::random_inputs(g, input_seed), reference, outputs;
  try {
    reference = runtime::reference_outputs(g, inputs);
  } catch (const std::exception& e) {
    return {Verdict::Kind::Bug, fmt::format("reference: {}", e.what())};
  }
  try {
    outputs = program->run(inputs);
  } catch (const std::exception& e) {
    return {Verdict::Kind::RunError, e.what()};
  }
  const auto names = ir::value_names(g);
  std::vector<double> bounds;
  for (const ir::Value* out : g.outputs()) bounds.push_back(rel_l2_bound_for(*out, knobs::tf32()));
  std::optional<std::vector<std::vector<bool>>> stable;  // computed at the first mismatch
  Verdict v;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const ir::Value& out = *g.outputs()[i];
    Comparison c = compare(outputs[i], reference[i], bounds[i]);
    if (c.passed) continue;
    if (!stable) stable = stable_elements(g, inputs, reference, bounds);
    HostTensor got_kept({out.type.dtype, {0}}), want_kept({out.type.dtype, {0}});
    for (size_t e = 0; e < reference[i].values.size(); ++e)
      if ((*stable)[i][e]) {
        got_kept.values.push_back(outputs[i].values[e]);
        want_kept.values.push_back(reference[i].values[e]);
      }
    got_kept.type.shape = want_kept.type.shape = {static_cast<int64_t>(want_kept.values.size())};
    const size_t moved = reference[i].values.size() - want_kept.values.size();
    Comparison kept = compare(got_kept, want_kept, bounds[i]);
    const bool excused = kept.passed;
    if (!excused) v.kind = Verdict::Kind::Mismatch;
    else if (v.kind == Verdict::Kind::Pass) v.kind = Verdict::Kind::Unstable;
    v.detail += fmt::format("output {} %{} {}: {}; on the {} elements that one-ulp nudges of the intermediates "
                            "leave in place ({} move): {}\n",
                            i, names.at(out.id), out.type.str(), c.str(), want_kept.values.size(), moved,
                            kept.str());
  }
  return v;
}

Verdict check_compile_only(const ir::Graph& g, bool nvrtc) {
  PipelineOptions options;
  options.nvrtc = nvrtc;
  options.reference = true;
  try {
    PipelineOutcome r = run_pipeline(g, options);
    switch (r.kind) {
      case PipelineOutcome::Kind::Ok: return {};
      case PipelineOutcome::Kind::Rejected: return {Verdict::Kind::Rejected, r.step + ": " + r.message};
      case PipelineOutcome::Kind::Bug: return {Verdict::Kind::Bug, r.step + ": " + r.message};
    }
  } catch (const std::exception& e) {
    return {Verdict::Kind::Bug, fmt::format("unexpected exception: {}", e.what())};
  }
  return {};
}

}  // namespace kiln::fuzz
