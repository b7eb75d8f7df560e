#include "tests/fuzz/difftest_check.h"

#include <fmt/format.h>

#include <exception>
#include <optional>

#include "ir/compare.h"
#include "ir/error.h"
#include "ir/interpreter.h"
#include "runtime/knobs.h"
#include "runtime/program.h"
#include "runtime/reference.h"
#include "tests/fuzz/judge.h"
#include "tests/fuzz/pipeline_check.h"

namespace kiln::fuzz {

namespace {

Verdict judge_against_reference(const ir::Graph& g, const std::vector<HostTensor>& inputs,
                                const std::vector<HostTensor>& outputs) {
  std::vector<HostTensor> reference;
  try {
    reference = runtime::reference_outputs(g, inputs);
  } catch (const std::exception& e) {
    return {Verdict::Kind::Bug, fmt::format("reference: {}", e.what())};
  }
  std::vector<double> bounds;
  for (const ir::Value* out : g.outputs()) bounds.push_back(rel_l2_bound_for(*out, knobs::tf32()));
  try {
    return judge_outputs(g, inputs, reference, outputs, bounds);
  } catch (const std::exception& e) {  // the nudged or the wide graph failed to build or evaluate
    return {Verdict::Kind::Bug, fmt::format("judging the outputs: {}", e.what())};
  }
}

}  // namespace

Verdict check_on_gpu(const ir::Graph& g, uint64_t input_seed, std::vector<HostTensor>* saved) {
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
  const std::vector<HostTensor> inputs = ir::random_inputs(g, input_seed);
  std::vector<HostTensor> outputs;
  try {
    outputs = program->run(inputs);
  } catch (const std::exception& e) {
    return {Verdict::Kind::RunError, e.what()};
  }
  if (saved) *saved = outputs;
  return judge_against_reference(g, inputs, outputs);
}

Verdict judge_saved(const ir::Graph& g, uint64_t input_seed, const std::vector<HostTensor>& outputs) {
  if (outputs.size() != g.outputs().size())
    return {Verdict::Kind::Bug, fmt::format("{} saved outputs for a graph of {}", outputs.size(), g.outputs().size())};
  return judge_against_reference(g, ir::random_inputs(g, input_seed), outputs);
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
