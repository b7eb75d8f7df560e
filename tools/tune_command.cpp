// `kiln tune FILE`: compiles a graph, sweeps every legal tile config of each kernel
// on the GPU (see runtime/autotuner.h), prints one table per kernel, and writes the
// results to the tuning database (and to CSV / JSON when asked). --dry-run needs no
// GPU: it lists and compiles every candidate and prints the compile times only.
#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "ir/error.h"
#include "ir/parser.h"
#include "ir/tile_config.h"
#include "runtime/autotuner.h"
#include "runtime/cuda_driver.h"
#include "runtime/device.h"
#include "runtime/knobs.h"
#include "runtime/program.h"
#include "runtime/timer.h"
#include "tools/commands.h"

namespace kiln::tools {

namespace {

struct TuneArgs {
  std::string file;
  double max_seconds = 0;
  std::string csv, json;
  bool dry_run = false;
  std::string arch;
};

// One table row's figures: GB/s from the kernel's argument bytes, and its share of
// the copy bandwidth measured in the same run (0 on a dry run).
struct Row {
  const runtime::Trial* trial;
  bool best;
  double gbs = 0, roofline_pct = 0;
};

std::vector<Row> rows_of(const runtime::TuneResult& r, double copy_gbs) {
  std::vector<Row> rows;
  for (size_t i = 0; i < r.trials.size(); ++i) {
    Row row{&r.trials[i], static_cast<int>(i) == r.best};
    const double ms = r.trials[i].median_ms;
    if (r.trials[i].status == runtime::TrialStatus::Ok && ms > 0 && std::isfinite(ms)) {
      row.gbs = r.bytes / (ms * 1e-3) / 1e9;
      row.roofline_pct = copy_gbs > 0 ? 100 * row.gbs / copy_gbs : 0;
    }
    rows.push_back(row);
  }
  return rows;
}

void print_table(const runtime::TuneResult& r, const std::vector<Row>& rows, bool dry_run) {
  const ir::Kernel& k = r.kernel;
  std::cout << fmt::format("kernel {} ({}, {} args, {:.1f} MB): {} candidates for {}, {:.2f} s\n", k.name,
                           ir::kernel_kind_name(k.kind), k.args.size(), r.bytes / 1e6, r.trials.size(), r.key.arch,
                           r.wall_s);
  if (dry_run) {
    std::cout << fmt::format("  {:<48} {:>10}  {}\n", "config", "compile ms", "status");
    for (const Row& row : rows)
      std::cout << fmt::format("  {:<48} {:>10.1f}  {}{}\n", row.trial->config.str(), row.trial->compile_ms,
                               runtime::trial_status_name(row.trial->status),
                               row.trial->detail.empty() ? "" : " (" + row.trial->detail + ")");
    return;
  }
  std::cout << fmt::format("  {:<48} {:>10} {:>10} {:>8} {:>7}  {}\n", "config", "compile ms", "median ms", "GB/s",
                           "% roof", "status / check");
  for (const Row& row : rows) {
    const runtime::Trial& t = *row.trial;
    std::string median = std::isfinite(t.median_ms) ? fmt::format("{:.4f}", t.median_ms) : "inf";
    std::cout << fmt::format("{} {:<48} {:>10.1f} {:>10} {:>8.0f} {:>7.1f}  {}: {}\n", row.best ? "*" : " ",
                             t.config.str(), t.compile_ms, median, row.gbs, row.roofline_pct,
                             runtime::trial_status_name(t.status), t.detail);
  }
}

std::string csv_quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  f << text;
  if (!f) throw Error(fmt::format("kiln tune: cannot write {}", path));
}

int tune(const TuneArgs& a) {
  using Clock = std::chrono::steady_clock;
  ir::Graph g = ir::parse_file(a.file);
  std::string why;
  const bool gpu = runtime::gpu_available(&why);
  if (!gpu && !a.dry_run)
    throw Error(fmt::format("kiln tune: no GPU found ({}); use --dry-run to list and compile the candidates "
                            "without one", why));
  runtime::ProgramOptions options;
  options.arch = a.arch.empty() && !gpu ? knobs::arch().value_or("sm_90a") : a.arch;
  runtime::Program program = runtime::Program::compile(g, options);
  const ir::TargetScope target(program.arch());  // the candidates are this GPU generation's
  std::vector<ir::Kernel> kernels;
  for (const runtime::CompiledKernel& ck : program.kernels()) kernels.push_back(ck.kernel);

  std::vector<runtime::KernelReference> refs;
  double copy_gbs = 0;
  if (!a.dry_run) {
    refs = runtime::kernel_references(program.graph(), kernels);
    copy_gbs = runtime::measure_copy_bandwidth_gbs();
    std::cout << fmt::format("tuning on {} ({}); copy bandwidth measured now: {:.0f} GB/s\n",
                             runtime::Device::get().name(), program.arch(), copy_gbs);
  }
  // --max-seconds bounds the sweeps, counted from here: the reference and the copy
  // bandwidth above are measured once, whatever the budget.
  const Clock::time_point sweep_start = Clock::now();
  std::vector<runtime::TuningRecord> tuned;
  std::string csv = "kernel,config,status,compile_ms,median_ms,gbs,roofline_pct,best,detail\n";
  nlohmann::json report = nlohmann::json::array();
  bool all_tuned = true;
  for (size_t i = 0; i < kernels.size(); ++i) {
    runtime::TuneOptions tune_options;
    tune_options.arch = program.arch();
    if (a.max_seconds > 0) {
      double left = a.max_seconds - std::chrono::duration<double>(Clock::now() - sweep_start).count();
      tune_options.max_seconds = std::max(left, 1e-3);
    }
    runtime::TuneResult r = a.dry_run ? runtime::dry_run_kernel(kernels[i], tune_options)
                                      : runtime::tune_kernel(kernels[i], refs[i], tune_options);
    std::vector<Row> rows = rows_of(r, copy_gbs);
    print_table(r, rows, a.dry_run);
    nlohmann::json trials = nlohmann::json::array();
    for (const Row& row : rows) {
      const runtime::Trial& t = *row.trial;
      std::string status(runtime::trial_status_name(t.status));
      std::string median = std::isfinite(t.median_ms) ? fmt::format("{}", t.median_ms) : "inf";
      csv += fmt::format("{},{},{},{},{},{},{},{},{}\n", r.kernel.name, csv_quote(t.config.str()), status,
                         t.compile_ms, a.dry_run ? "" : median, row.gbs, row.roofline_pct, row.best ? 1 : 0,
                         csv_quote(t.detail));
      trials.push_back({{"config", t.config.str()}, {"status", status}, {"compile_ms", t.compile_ms},
                        {"median_ms", a.dry_run ? nlohmann::json() : nlohmann::json(median)}, {"gbs", row.gbs}, {"roofline_pct", row.roofline_pct},
                        {"best", row.best}, {"detail", t.detail}});
    }
    report.push_back({{"kernel", r.kernel.name}, {"signature", r.key.signature}, {"arch", r.key.arch},
                      {"bytes", r.bytes}, {"wall_s", r.wall_s}, {"trials", trials}});
    if (a.dry_run) continue;
    if (r.best < 0) {
      all_tuned = false;
      std::cout << fmt::format("kernel {}: no candidate passed its check; nothing recorded\n", r.kernel.name);
      continue;
    }
    tuned.push_back(runtime::to_record(r));
  }
  if (!a.dry_run) {
    runtime::TuningDb::record(knobs::tune_db(), tuned);  // merged with what other processes recorded
    std::cout << fmt::format("tuning records written to {}\n", knobs::tune_db());
  } else {
    std::cout << "dry run: every candidate listed and compiled; nothing timed or recorded\n";
  }
  if (!a.csv.empty()) write_file(a.csv, csv);
  if (!a.json.empty()) write_file(a.json, report.dump(2) + "\n");
  return all_tuned ? kExitOk : kExitError;
}

}  // namespace

Command add_tune_command(CLI::App& kiln) {
  auto args = std::make_shared<TuneArgs>();
  CLI::App* app = kiln.add_subcommand(
      "tune", "Sweep the tile configs of every kernel of a graph on the GPU, check and time each, and record the "
              "best in the tuning database (KILN_TUNE_DB).");
  app->add_option("file", args->file, "a .kiln file, or - for standard input")->required();
  app->add_option("--max-seconds", args->max_seconds, "bound the whole sweep to about this many seconds (0: none)");
  app->add_option("--csv", args->csv, "also write every candidate's figures to this CSV file");
  app->add_option("--json", args->json, "also write every candidate's figures to this JSON file");
  app->add_flag("--dry-run", args->dry_run,
                "list and compile every candidate through NVRTC without a GPU; print compile times only");
  app->add_option("--arch", args->arch, "compile for this arch (default: KILN_ARCH, else the GPU's; sm_90a "
                                        "with no GPU)");
  return Command{app, [args] { return tune(*args); }};
}

}  // namespace kiln::tools
