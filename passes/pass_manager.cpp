// The pass manager: pipeline parsing, running, and the instruments around each pass.
#include "passes/pass_manager.h"

#include <fmt/format.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "ir/error.h"
#include "ir/printer.h"

namespace kiln::passes {

namespace {

std::string_view trim(std::string_view s) {
  const char* space = " \t\r\n";
  size_t begin = s.find_first_not_of(space);
  if (begin == std::string_view::npos) return {};
  size_t end = s.find_last_not_of(space);
  return s.substr(begin, end - begin + 1);
}

std::string banner(std::string_view title, std::string_view name) {
  return fmt::format("// -----// IR Dump After {} ({}) //----- //\n", title, name);
}

void print_dump(std::ostream& out, std::string_view title, std::string_view name, const std::string& text) {
  out << banner(title, name) << text;
  if (!text.empty() && text.back() != '\n') out << '\n';
  out << '\n';
  out.flush();
}

// ir::verify, with the verifier's message after `context`.
void verify_or_explain(const ir::Graph& g, const std::string& context) {
  try {
    ir::verify(g);
  } catch (const Error& e) {
    throw Error(fmt::format("{}: {}", context, e.what()));
  }
}

}  // namespace

std::vector<std::string> split_pipeline(std::string_view pipeline) {
  std::vector<std::string> names;
  if (trim(pipeline).empty()) return names;
  size_t start = 0;
  while (true) {
    size_t comma = pipeline.find(',', start);
    std::string_view entry = trim(pipeline.substr(start, comma == std::string_view::npos ? comma : comma - start));
    if (entry.empty())
      throw Error(fmt::format("pipeline '{}': empty pass name at entry {}", pipeline, names.size() + 1));
    names.emplace_back(entry);
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return names;
}

PassManager::PassManager(std::string_view pipeline, Options options, std::ostream& out)
    : options_(std::move(options)), out_(out) {
  for (const std::string& name : split_pipeline(pipeline)) {
    try {
      add(create_pass(name));
    } catch (const Error& e) {
      throw Error(fmt::format("pipeline '{}': {}", pipeline, e.what()));
    }
  }
}

void PassManager::add(std::unique_ptr<Pass> pass, std::string title) {
  if (title.empty()) title = std::string(pass_class_name(pass->name()));
  stages_.push_back(Stage{std::move(pass), std::move(title)});
}

std::vector<std::string> PassManager::pass_list() const {
  std::vector<std::string> names;
  for (const Stage& s : stages_) names.emplace_back(s.pass->name());
  return names;
}

void PassManager::check_print_after_names() const {
  std::vector<std::string> pipeline = pass_list();
  for (const std::string& name : options_.print_after) {
    bool registered = false;
    for (std::string_view known : pass_names()) registered |= known == name;
    for (const std::string& p : pipeline) registered |= p == name;
    if (!registered)
      throw Error(fmt::format("print-ir-after: unknown pass '{}' (known passes: {})", name,
                              fmt::join(pass_names(), ", ")));
  }
}

bool PassManager::wants_print(std::string_view name) const {
  if (options_.print_after_all || options_.print_after.count(std::string(name))) return true;
  // print-after-change alone means "after every pass that changed the IR".
  return options_.print_after_change && options_.print_after.empty();
}

void PassManager::dump(size_t index, std::string_view name, const std::string& text) const {
  namespace fs = std::filesystem;
  fs::path path = fs::path(*options_.dump_dir) / fmt::format("{:02}-{}.kiln", index, name);
  std::ofstream file(path);
  if (!file) throw Error(fmt::format("cannot write IR dump '{}': {}", path.string(), std::strerror(errno)));
  file << text;
  if (!file.flush()) throw Error(fmt::format("cannot write IR dump '{}': write failed", path.string()));
}

bool PassManager::run(ir::Graph& g) {
  using Clock = std::chrono::steady_clock;
  records_.clear();
  check_print_after_names();
  const bool debug_print = knobs::debug_level() >= 3;
  if (options_.verify_each) verify_or_explain(g, "the input to the pass pipeline is invalid");
  if (options_.dump_dir) {
    std::error_code ec;
    std::filesystem::create_directories(*options_.dump_dir, ec);
    if (ec) throw Error(fmt::format("cannot create dump folder '{}': {}", *options_.dump_dir, ec.message()));
    dump(0, "input", ir::print(g));
  }
  // The text before each pass, kept only to tell whether a pass really changed the IR.
  std::string before = options_.print_after_change ? ir::print(g) : "";
  bool any_change = false;
  for (size_t i = 0; i < stages_.size(); ++i) {
    Pass& pass = *stages_[i].pass;
    const std::string name(pass.name());
    auto start = Clock::now();
    bool changed = false;
    try {
      changed = pass.run(g);
    } catch (const Error& e) {
      throw Error(fmt::format("pass '{}' failed: {}", name, e.what()));
    }
    double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
    records_.push_back(PassRecord{name, changed, ms});
    any_change |= changed;
    if (options_.verify_each) verify_or_explain(g, fmt::format("pass '{}' produced invalid IR", name));

    std::string text;
    bool print = wants_print(name);
    if (options_.print_after_change) {
      text = ir::print(g);
      print = print && changed && text != before;
      before = text;
    }
    if ((print || debug_print || options_.dump_dir) && text.empty()) text = ir::print(g);
    if (print) print_dump(out_, stages_[i].title, name, text);
    // KILN_DEBUG >= 3 shows every pass on stderr, unless that dump just went there.
    if (debug_print && !(print && &out_ == &std::cerr)) print_dump(std::cerr, stages_[i].title, name, text);
    if (options_.dump_dir) dump(i + 1, name, text);
  }
  if (options_.time_passes) print_timing();
  return any_change;
}

void PassManager::print_timing() const {
  double total = 0;
  for (const PassRecord& r : records_) total += r.milliseconds;
  auto percent = [&](double ms) { return total > 0 ? 100.0 * ms / total : 0.0; };
  out_ << "===-------------------------------------------===\n"
       << "         Kiln pass execution timing report\n"
       << "===-------------------------------------------===\n"
       << fmt::format("  {:>12}  {:>7}  {}\n", "Wall (ms)", "%", "Pass");
  for (const PassRecord& r : records_)
    out_ << fmt::format("  {:>12.4f}  {:>6.1f}%  {}\n", r.milliseconds, percent(r.milliseconds), r.name);
  out_ << fmt::format("  {:>12.4f}  {:>6.1f}%  {}\n", total, total > 0 ? 100.0 : 0.0, "Total");
  out_.flush();
}

}  // namespace kiln::passes
