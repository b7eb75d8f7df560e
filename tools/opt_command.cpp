// `kiln opt FILE|-`: parse a graph in the text form, run a pass pipeline on it
// and print the resulting IR, or what it lowers to (--emit=kernels|cuda|ptx).
// Per-pass dumps go to stderr (or KILN_DUMP_DIR).
#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "ir/error.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/tile_config.h"
#include "codegen/emit.h"
#include "passes/lower.h"
#include "runtime/program.h"
#include "passes/pass.h"
#include "passes/pass_manager.h"
#include "tools/commands.h"

namespace kiln::tools {

namespace {

struct OptFlags {
  std::string input;
  std::string pipeline{passes::kDefaultPipeline};
  bool print_after_all = false;
  std::vector<std::string> print_after;
  bool print_after_change = false;
  bool time_passes = false;
  std::string output = "-";
  std::string emit = "ir";
  std::string arch;
  bool pipeline_given = false;
};

void write_output(const std::string& path, const std::string& text) {
  if (path == "-") {
    std::cout << text;
    std::cout.flush();
    return;
  }
  std::ofstream out(path);
  if (!out) throw Error(fmt::format("kiln opt: cannot open '{}' for writing: {}", path, std::strerror(errno)));
  out << text;
  if (!out.flush()) throw Error(fmt::format("kiln opt: failed writing '{}'", path));
}

// What --emit prints after the passes: kernels and CUDA need the fused groups that
// the compile pipeline makes, so it is the default pipeline for them.
std::string emit_text(const OptFlags& flags, const ir::Graph& input, const passes::PassManager::Options& options) {
  if (flags.emit == "ptx") {
    runtime::ProgramOptions po;
    po.pipeline = flags.pipeline;
    po.arch = flags.arch;
    po.passes = options;
    runtime::Program program = runtime::Program::compile(input, po);
    std::string out;
    for (const auto& k : program.kernels())
      out += fmt::format("// kernel {} for {}\n{}\n", k.kernel.name, program.arch(), k.binary.ptx);
    return out;
  }
  const ir::TargetScope target(flags.arch);  // no --arch: the H200's sm_90
  ir::Graph graph = input.clone();
  passes::PassManager manager(flags.pipeline, options, std::cerr);
  manager.run(graph);
  if (flags.emit == "ir") return ir::print(graph);
  passes::Plan plan = passes::lower(graph);
  if (flags.emit == "cuda") return codegen::emit_cuda(plan.kernels);
  std::string out;
  for (const ir::Kernel& k : plan.kernels) out += ir::print(k) + "\n";
  return out;
}

int run_opt(const OptFlags& given) {
  OptFlags flags = given;
  if (!flags.pipeline_given && flags.emit != "ir") flags.pipeline = std::string(runtime::kCompilePipeline);
  ir::Graph graph = ir::parse_file(flags.input);

  passes::PassManager::Options options;
  options.print_after_all = flags.print_after_all;
  options.print_after = std::set<std::string>(flags.print_after.begin(), flags.print_after.end());
  options.print_after_change = flags.print_after_change;
  options.time_passes = flags.time_passes;  // verify_each and dump_dir (KILN_DUMP_DIR) keep their defaults
  write_output(flags.output, emit_text(flags, graph, options));
  return kExitOk;
}

}  // namespace

Command add_opt_command(CLI::App& kiln) {
  auto flags = std::make_shared<OptFlags>();
  std::vector<std::string> known;
  for (auto name : passes::pass_names()) known.emplace_back(name);

  CLI::App* opt = kiln.add_subcommand("opt", "Parse a .kiln graph, run passes on it and print the IR");
  opt->add_option("file", flags->input, "The .kiln file to read ('-' reads standard input)")
      ->required()
      ->type_name("FILE");
  // No default_str here: CLI11 would substitute it for an empty `--pipeline=`.
  opt->add_option("--pipeline", flags->pipeline,
                  "Passes to run in order, comma-separated (default below); --pipeline= runs none")
      ->expected(0, 1)
      ->type_name("PASSES");
  opt->add_flag("--print-ir-after-all", flags->print_after_all, "Print the IR to stderr after every pass");
  opt->add_option("--print-ir-after", flags->print_after,
                  "Print the IR to stderr after the named pass (repeat or separate with commas)")
      ->delimiter(',')
      ->type_name("PASS")
      ->check(CLI::IsMember(known));
  opt->add_flag("--print-ir-after-change", flags->print_after_change,
                "Print only when the pass changed the IR (alone: after every such pass)");
  opt->add_flag("--time-passes", flags->time_passes, "Report the time each pass took on stderr");
  opt->add_option("-o,--output", flags->output, "Write the resulting IR to this file instead of stdout")
      ->type_name("FILE");
  opt->add_option("--emit", flags->emit,
                  "What to print: ir (the graph after the passes), kernels (the kernel IR), cuda (the generated "
                  "source) or ptx (compiled through NVRTC; needs no GPU with --arch)")
      ->check(CLI::IsMember({"ir", "kernels", "cuda", "ptx"}))
      ->type_name("WHAT");
  opt->add_option("--arch", flags->arch,
                  "With --emit=ptx: the target, e.g. sm_90a or sm_80 (default: KILN_ARCH, else the GPU's)")
      ->type_name("ARCH");
  opt->footer(fmt::format("Registered passes: {}\nDefault pipeline: {} (with --emit=kernels, cuda or ptx: "
                          "the compile pipeline, which adds fuse,tile)\n"
                          "KILN_DUMP_DIR=DIR also writes the IR after each pass to numbered files in DIR.",
                          fmt::join(passes::pass_names(), ", "), passes::kDefaultPipeline));
  return Command{opt, [flags, opt] {
                   flags->pipeline_given = opt->get_option("--pipeline")->count() > 0;
                   return run_opt(*flags);
                 }};
}

}  // namespace kiln::tools
