// The `kiln` command line: parses the subcommand and its flags with CLI11, runs it,
// and maps failures to exit statuses (1: a kiln::Error, 2: a usage error).
#include <exception>
#include <iostream>
#include <vector>

#include "ir/error.h"
#include "runtime/knobs.h"
#include "tools/commands.h"

int main(int argc, char** argv) {
  using namespace kiln::tools;
  CLI::App app{"kiln: a tiny tensor compiler (graphs -> fused CUDA kernels)", "kiln"};
  app.set_version_flag("--version", KILN_VERSION);
  app.require_subcommand(1);
  app.footer("Environment knobs:\n" + kiln::knobs::describe() +
             "\nRun `kiln SUBCOMMAND --help` for a subcommand's options.");

  // One line per subcommand; each is defined in its own file.
  std::vector<Command> commands = {
      add_opt_command(app),
      add_run_command(app),
      add_tune_command(app),
      add_bench_command(app),
  };

  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {  // --help, --version
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return kExitUsage;
  } catch (const kiln::Error& e) {  // e.g. the knobs table could not read a variable
    std::cerr << e.what() << "\n";
    return kExitError;
  }

  for (const Command& c : commands) {
    if (!c.app->parsed()) continue;
    try {
      return c.run();
    } catch (const kiln::Error& e) {
      std::cerr << e.what() << "\n";
      return kExitError;
    } catch (const std::exception& e) {
      std::cerr << "kiln " << c.app->get_name() << ": internal error: " << e.what() << "\n";
      return kExitError;
    }
  }
  return kExitUsage;  // unreachable: CLI11 requires one subcommand
}
