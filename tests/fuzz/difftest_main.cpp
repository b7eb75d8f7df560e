// kiln-difftest: differential testing of generated kernels against the reference
// interpreter. For a time or count budget it makes random graphs (random_graph.h),
// compiles and runs each on the GPU and compares every output with the reference at
// its dtype's bound (difftest_check.h; where the per-op reference overflowed in an f16 /
// bf16 intermediate, with the wide one that fused kernels follow: wide_reference.h). A
// graph that fails is shrunk (shrink.h) while it fails the same way, and written as a
// small .kiln reproducer with the original beside it. Without a GPU it says so and
// checks the compile path only (passes, codegen, NVRTC, the reference interpreter).
// --save-outputs keeps the GPU's outputs of every graph the plain comparison did not
// settle, and --rejudge judges such a folder again with this build's judge, without a GPU.
// Exit status: 0 when nothing failed (rejections by a stated limit are not failures),
// 1 when a graph failed, 2 on a bad flag.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>

#include "ir/error.h"
#include "ir/printer.h"
#include "runtime/cuda_driver.h"
#include "runtime/npy.h"
#include "tests/fuzz/decisions.h"
#include "tests/fuzz/difftest_check.h"
#include "tests/fuzz/random_graph.h"
#include "tests/fuzz/shrink.h"

namespace {

using kiln::fuzz::Verdict;

struct Args {
  double seconds = 60;
  uint64_t count = 0;
  uint64_t seed = 1;
  std::string out = "out/difftest";
  bool compile_only = false;
  bool no_nvrtc = false;
  bool verbose = false;
  bool print_only = false;
  bool save_outputs = false;
  std::string rejudge;  // a folder of saved GPU outputs to judge again
  int max_ops = 12;
  int64_t max_elements = 4096;
  int shrink_attempts = 300;
};

// The first words of a rejection ("attention: no kernel kind ..."), to count them by kind.
std::string rejection_kind(const std::string& detail) {
  std::string first = detail.substr(0, detail.find('\n'));
  return first.substr(0, std::min<size_t>(first.size(), 80));
}

void write_text(const std::filesystem::path& path, const std::string& text) {
  std::ofstream f(path);
  f << text;
  if (!f) throw kiln::Error(fmt::format("cannot write {}", path.string()));
}

std::string commented(const std::string& text) {
  std::string out;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    out += "// " + text.substr(start, end - start) + "\n";
    start = end + 1;
  }
  return out;
}

std::string saved_output_path(const std::string& dir, uint64_t seed, size_t i) {
  return fmt::format("{}/seed-{}-gpu-out{}.npy", dir, seed, i);
}

// --rejudge: the seeds whose GPU outputs an earlier run saved (--save-outputs), judged
// again by this build's judge, with no GPU: the graph and its inputs come from the seed.
int rejudge(const Args& a) {
  kiln::fuzz::GeneratorLimits limits;
  limits.max_ops = a.max_ops;
  limits.max_elements = a.max_elements;
  std::vector<uint64_t> seeds;  // those with a saved first output, in order
  for (const auto& entry : std::filesystem::directory_iterator(a.rejudge)) {
    const std::string name = entry.path().filename().string();
    uint64_t seed = 0;
    if (std::sscanf(name.c_str(), "seed-%lu-gpu-out0.npy", &seed) == 1 && name == fmt::format("seed-{}-gpu-out0.npy", seed))
      seeds.push_back(seed);
  }
  std::sort(seeds.begin(), seeds.end());
  std::map<Verdict::Kind, uint64_t> counts;
  uint64_t judged = 0, failures = 0;
  for (const uint64_t seed : seeds) {
    if (a.count > 0 && (seed < a.seed || seed >= a.seed + a.count)) continue;
    kiln::fuzz::Decisions d = kiln::fuzz::Decisions::from_seed(seed);
    const kiln::ir::Graph g = kiln::fuzz::random_graph(d, limits);
    std::vector<kiln::HostTensor> outputs;
    for (size_t o = 0; o < g.outputs().size(); ++o)
      outputs.push_back(kiln::runtime::read_npy(saved_output_path(a.rejudge, seed, o), g.outputs()[o]->type,
                                                fmt::format("output {}", o)));
    const Verdict v = kiln::fuzz::judge_saved(g, seed, outputs);
    ++judged;
    ++counts[v.kind];
    if (kiln::fuzz::is_failure(v.kind)) ++failures;
    std::cout << fmt::format("seed {}: {}\n{}", seed, kiln::fuzz::verdict_name(v.kind), v.detail) << std::flush;
  }
  std::cout << fmt::format("kiln-difftest: {} saved graphs judged again (no GPU)\n", judged);
  for (const auto& [kind, n] : counts) std::cout << fmt::format("  {}: {}\n", kiln::fuzz::verdict_name(kind), n);
  return failures == 0 ? 0 : 1;
}

int run(const Args& a) {
  if (!a.rejudge.empty()) return rejudge(a);
  std::string why;
  const bool gpu = !a.compile_only && kiln::runtime::gpu_available(&why);
  if (!gpu && !a.compile_only)
    std::cout << fmt::format("kiln-difftest: no GPU found ({}); checking the compile path only (passes, codegen, "
                             "NVRTC, the reference interpreter): nothing runs on a GPU\n", why);
  auto check = [&](const kiln::ir::Graph& g, uint64_t seed, std::vector<kiln::HostTensor>* outputs = nullptr) {
    return gpu ? kiln::fuzz::check_on_gpu(g, seed, outputs) : kiln::fuzz::check_compile_only(g, !a.no_nvrtc);
  };
  kiln::fuzz::GeneratorLimits limits;
  limits.max_ops = a.max_ops;
  limits.max_elements = a.max_elements;

  using Clock = std::chrono::steady_clock;
  const Clock::time_point start = Clock::now();
  std::map<Verdict::Kind, uint64_t> counts;
  std::map<std::string, uint64_t> rejections;
  uint64_t graphs = 0, failures = 0;
  auto out_of_time = [&] {
    return a.seconds > 0 && std::chrono::duration<double>(Clock::now() - start).count() >= a.seconds;
  };
  for (uint64_t i = 0; a.count == 0 || i < a.count; ++i) {
    if (out_of_time()) break;
    const uint64_t seed = a.seed + i;
    kiln::fuzz::Decisions d = kiln::fuzz::Decisions::from_seed(seed);
    kiln::ir::Graph g = kiln::fuzz::random_graph(d, limits);
    if (a.print_only) {  // the graphs themselves, to read or rerun a seed without a GPU
      std::filesystem::create_directories(a.out);
      write_text(fmt::format("{}/seed-{}-original.kiln", a.out, seed), kiln::ir::print(g));
      ++graphs;
      continue;
    }
    std::vector<kiln::HostTensor> outputs;
    Verdict v = check(g, seed, a.save_outputs ? &outputs : nullptr);
    ++graphs;
    // Every graph the plain comparison did not settle keeps its GPU outputs (for --rejudge).
    if (a.save_outputs && !outputs.empty() && !v.settled_plainly) {
      std::filesystem::create_directories(a.out);
      for (size_t o = 0; o < outputs.size(); ++o)
        kiln::runtime::write_npy(saved_output_path(a.out, seed, o), outputs[o]);
    }
    ++counts[v.kind];
    if (v.kind == Verdict::Kind::Rejected) ++rejections[rejection_kind(v.detail)];
    if (a.verbose && v.kind == Verdict::Kind::Rejected)
      std::cout << fmt::format("seed {}: rejected: {}\n", seed, rejection_kind(v.detail));
    const bool excused = v.kind == Verdict::Kind::Unstable || v.kind == Verdict::Kind::WideIntermediate;
    if (excused && a.verbose)
      std::cout << fmt::format("seed {}: {}\n{}", seed, kiln::fuzz::verdict_name(v.kind), v.detail);
    if (!kiln::fuzz::is_failure(v.kind)) continue;

    ++failures;
    std::cout << fmt::format("seed {}: {}\n{}\n", seed, kiln::fuzz::verdict_name(v.kind), v.detail) << std::flush;
    std::filesystem::create_directories(a.out);
    const std::string stem = fmt::format("{}/seed-{}", a.out, seed);
    write_text(stem + "-original.kiln", commented(fmt::format("kiln-difftest seed {}: {}\n{}", seed,
                                                              kiln::fuzz::verdict_name(v.kind), v.detail)) +
                                            kiln::ir::print(g));
    kiln::ir::Graph small = g.clone();
    kiln::fuzz::ShrinkStats stats;
    if (v.kind != Verdict::Kind::RunError) {  // after a fault the context may be spoilt: nothing to shrink with
      kiln::fuzz::ShrinkOptions options;
      options.max_attempts = a.shrink_attempts;
      small = kiln::fuzz::shrink_graph(
          g,
          [&](const kiln::ir::Graph& c) {  // past the budget the shrinker stops: nothing more is accepted
            return !out_of_time() && check(c, seed).kind == v.kind;
          },
          options, &stats);
    }
    Verdict still = check(small, seed);
    write_text(stem + ".kiln",
               commented(fmt::format("kiln-difftest seed {}: {}, shrunk from {} to {} nodes ({} changes in {} "
                                     "tries)\n{}\nrerun: kiln run {}.kiln{}",
                                     seed, kiln::fuzz::verdict_name(still.kind), g.num_nodes(), small.num_nodes(),
                                     stats.accepted, stats.attempts, still.detail, stem,
                                     gpu ? "" : " --compile-only")) +
                   kiln::ir::print(small));
    std::cout << fmt::format("seed {}: reproducer {}.kiln ({} nodes; the original: {}-original.kiln)\n", seed, stem,
                             small.num_nodes(), stem)
              << std::flush;  // a run cut short keeps what it found
    if (v.kind == Verdict::Kind::RunError) break;
  }

  const double wall = std::chrono::duration<double>(Clock::now() - start).count();
  std::cout << fmt::format("kiln-difftest: {} graphs in {:.1f} s ({}), seeds {}..{}\n", graphs, wall,
                           a.print_only ? "printed" : gpu ? "on the GPU" : "compile-only", a.seed, a.seed + (graphs ? graphs - 1 : 0));
  for (const auto& [kind, n] : counts) std::cout << fmt::format("  {}: {}\n", kiln::fuzz::verdict_name(kind), n);
  for (const auto& [what, n] : rejections) std::cout << fmt::format("  rejected {}x: {}\n", n, what);
  return failures == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  CLI::App app{"kiln-difftest: random graphs compiled and run on the GPU, checked against the reference "
               "interpreter; failures shrunk to small .kiln reproducers",
               "kiln-difftest"};
  app.add_option("--seconds", a.seconds, "time budget (0: none)")->capture_default_str();
  app.add_option("--count", a.count, "graphs to test (0: until the time budget ends)")->capture_default_str();
  app.add_option("--seed", a.seed, "the first graph's seed; graph i has seed + i")->capture_default_str();
  app.add_option("--out", a.out, "folder for the reproducers")->capture_default_str();
  app.add_flag("--compile-only", a.compile_only, "check the compile path only, even with a GPU");
  app.add_flag("--no-nvrtc", a.no_nvrtc, "compile-only: stop at the CUDA source (a quick sweep of the passes)");
  app.add_flag("--print", a.print_only, "write each graph to OUT/seed-N-original.kiln and check nothing");
  app.add_flag("--verbose", a.verbose, "name the seed of every rejected, unstable or wide-intermediate graph too");
  app.add_flag("--save-outputs", a.save_outputs,
               "write the GPU's outputs of every graph the plain comparison did not settle to "
               "OUT/seed-N-gpu-outI.npy");
  app.add_option("--rejudge", a.rejudge,
                 "judge the outputs saved in this folder again without a GPU: every seed saved there, or those "
                 "from --seed to --seed + --count when --count is given");
  app.add_option("--max-ops", a.max_ops, "ops drawn per graph")->capture_default_str();
  app.add_option("--max-elements", a.max_elements, "elements per tensor at most")->capture_default_str();
  app.add_option("--shrink-attempts", a.shrink_attempts, "checks the shrinker may spend per failure")
      ->capture_default_str();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  try {
    return run(a);
  } catch (const std::exception& e) {
    std::cerr << "kiln-difftest: " << e.what() << "\n";
    return 1;
  }
}
