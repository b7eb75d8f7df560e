#include "tests/fuzz/pipeline_check.h"

#include <cctype>
#include <set>

#include "codegen/emit.h"
#include "ir/error.h"
#include "ir/interpreter.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/tile_config.h"
#include "passes/lower.h"
#include "passes/pass_manager.h"
#include "runtime/nvrtc.h"
#include "runtime/program.h"

namespace kiln::fuzz {

namespace {

std::set<std::string> words(const std::string& text) {
  std::set<std::string> out;
  std::string word;
  for (char c : text + " ") {
    if (std::isalnum(static_cast<unsigned char>(c)) || c == '_') {
      word += c;
    } else if (!word.empty()) {
      out.insert(word);
      word.clear();
    }
  }
  return out;
}

void add_op_names(const ir::Graph& g, std::set<std::string>& names) {
  for (const ir::Node* n : g.nodes()) names.insert(std::string(ir::op_name(n->op)));
}

}  // namespace

bool names_an_op(const std::string& message, const ir::Graph& g, const ir::Graph* also) {
  std::set<std::string> ops;
  add_op_names(g, ops);
  if (also) add_op_names(*also, ops);
  for (const std::string& w : words(message))
    if (ops.count(w)) return true;
  return false;
}

PipelineOutcome run_pipeline(const ir::Graph& g, const PipelineOptions& options) {
  PipelineOutcome out;
  ir::Graph optimised = g.clone();
  auto fail = [&](const std::string& step, const std::string& message) {
    out.step = step;
    out.message = message;
    out.kind = names_an_op(message, g, &optimised) ? PipelineOutcome::Kind::Rejected : PipelineOutcome::Kind::Bug;
    return out;
  };
  std::string step = "roundtrip";
  try {
    const std::string printed = ir::print(g);
    const std::string again = ir::print(ir::parse(printed, "generated.kiln"));
    if (again != printed) {
      out.kind = PipelineOutcome::Kind::Bug;
      out.step = step;
      out.message = "print -> parse -> print differs:\n" + printed + "---\n" + again;
      return out;
    }
    step = "passes";
    const ir::TargetScope target(options.arch);
    passes::PassManagerOptions pm_options;
    pm_options.verify_each = true;
    pm_options.dump_dir = std::nullopt;
    passes::PassManager(runtime::kCompilePipeline, pm_options).run(optimised);
    step = "lower";
    passes::Plan plan = passes::lower(optimised);
    out.kernels = plan.kernels.size();
    for (const ir::Kernel& k : plan.kernels) {
      step = "codegen";
      ir::verify(k);
      const std::string source = codegen::emit_cuda(k);
      codegen::launch_dims(k);
      if (options.nvrtc) {
        step = "nvrtc";
        runtime::compile_cuda(source, g.name() + "_" + k.name, runtime::CompileOptions{options.arch, {}});
      }
    }
    if (options.reference) {
      step = "reference";
      ir::evaluate(g, ir::random_inputs(g, 1));
    }
  } catch (const Error& e) {
    return fail(step, e.what());
  }
  return out;
}

}  // namespace kiln::fuzz
