// PassManager: runs a pipeline of passes built from a string such as
// "decompose,simplify,cse,dce" and instruments it the way MLIR's pass manager
// does: verification after each pass, IR dumps after all / named / changing
// passes, a timing report, and numbered per-pass files in KILN_DUMP_DIR.
#pragma once
#include <iostream>
#include <memory>
#include <optional>
#include <ostream>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "ir/graph.h"
#include "passes/pass.h"
#include "runtime/knobs.h"

namespace kiln::passes {

#ifdef NDEBUG
inline constexpr bool kVerifyEachByDefault = false;
#else
inline constexpr bool kVerifyEachByDefault = true;
#endif

struct PassManagerOptions {
  // Run ir::verify on the input and after every pass; an error names the pass
  // that broke the IR. On in debug builds.
  bool verify_each = kVerifyEachByDefault;
  // Print "// -----// IR Dump After Class (name) //----- //" and the IR after every pass.
  bool print_after_all = false;
  // Print the IR after the passes with these names.
  std::set<std::string> print_after;
  // Print only after passes that changed the IR (they said so and its text differs).
  // Alone it selects every pass; with print_after_all or print_after it filters them.
  bool print_after_change = false;
  // After the run, print each pass's wall time (ms, % of the total) and the total.
  bool time_passes = false;
  // When set, write 00-input.kiln, 01-<pass>.kiln, ... to this folder (created if missing).
  std::optional<std::string> dump_dir = knobs::dump_dir();
};

// What one pass of the last run did.
struct PassRecord {
  std::string name;
  bool changed = false;
  double milliseconds = 0;
};

class PassManager {
public:
  using Options = PassManagerOptions;

  // Builds the pipeline from comma-separated pass names (whitespace around names is
  // ignored; an empty string runs no pass). Throws kiln::Error on an unknown name,
  // listing the known passes. Dumps and the timing report go to `out`.
  explicit PassManager(std::string_view pipeline = "", Options options = {}, std::ostream& out = std::cerr);

  // Appends a pass, e.g. one that is not registered by name. Its banner shows
  // `title` (the registered class name, or the pass's own name, when empty).
  void add(std::unique_ptr<Pass> pass, std::string title = "");

  // Runs every pass in order on `g`; returns true when any pass changed it.
  bool run(ir::Graph& g);

  const std::vector<PassRecord>& records() const { return records_; }
  std::vector<std::string> pass_list() const;  // the names of the pipeline, in order
  const Options& options() const { return options_; }

private:
  struct Stage {
    std::unique_ptr<Pass> pass;
    std::string title;
  };

  bool wants_print(std::string_view name) const;
  void check_print_after_names() const;
  void dump(size_t index, std::string_view name, const std::string& text) const;
  void print_timing() const;

  std::vector<Stage> stages_;
  Options options_;
  std::ostream& out_;
  std::vector<PassRecord> records_;
};

// The name a registered pass shows in banners ("CSE" for "cse"); other names unchanged.
std::string_view pass_class_name(std::string_view name);

// Splits a pipeline string into trimmed pass names; throws kiln::Error on an empty entry.
std::vector<std::string> split_pipeline(std::string_view pipeline);

}  // namespace kiln::passes
