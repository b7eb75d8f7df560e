// `kiln opt FILE|-`: parse a graph in the text form, run a pass pipeline on it
// and print the resulting IR. Per-pass dumps go to stderr (or KILN_DUMP_DIR).
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

int run_opt(const OptFlags& flags) {
  ir::Graph graph = ir::parse_file(flags.input);

  passes::PassManager::Options options;
  options.print_after_all = flags.print_after_all;
  options.print_after = std::set<std::string>(flags.print_after.begin(), flags.print_after.end());
  options.print_after_change = flags.print_after_change;
  options.time_passes = flags.time_passes;  // verify_each and dump_dir (KILN_DUMP_DIR) keep their defaults
  passes::PassManager manager(flags.pipeline, options, std::cerr);
  manager.run(graph);

  write_output(flags.output, ir::print(graph));
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
  opt->footer(fmt::format("Registered passes: {}\nDefault pipeline: {}\n"
                          "KILN_DUMP_DIR=DIR also writes the IR after each pass to numbered files in DIR.",
                          fmt::join(passes::pass_names(), ", "), passes::kDefaultPipeline));
  return Command{opt, [flags] { return run_opt(*flags); }};
}

}  // namespace kiln::tools
