// The `kiln` subcommands. Each one lives in its own file and adds itself to the
// top-level command line with an add_*_command function listed in kiln_main.cpp.
#pragma once
#include <CLI/CLI.hpp>

#include <functional>

namespace kiln::tools {

// Exit statuses shared by every subcommand.
inline constexpr int kExitOk = 0;
inline constexpr int kExitError = 1;  // a kiln::Error: bad input, a failed pass or call
inline constexpr int kExitUsage = 2;  // a bad flag or argument

// A subcommand: its CLI11 app (owned by the parent app) and the action that runs
// when the user chose it. The action returns the exit status and may throw kiln::Error.
struct Command {
  CLI::App* app = nullptr;
  std::function<int()> run;
};

// `kiln opt FILE`: parse a graph, run a pass pipeline, print the IR.
Command add_opt_command(CLI::App& kiln);
// `kiln run FILE`: compile a graph, run it on random inputs, check it against the reference.
Command add_run_command(CLI::App& kiln);
// `kiln tune FILE`: sweep each kernel's tile configs, check and time them, record the best.
Command add_tune_command(CLI::App& kiln);
// `kiln bench [CASE...]`: generated, tuned and hand-written kernels side by side against the roofline.
Command add_bench_command(CLI::App& kiln);

}  // namespace kiln::tools
