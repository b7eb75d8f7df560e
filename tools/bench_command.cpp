// `kiln bench [CASE...]`: runs each benchmark case (runtime/bench_cases.h) at each size
// as Kiln's generated kernels with the heuristic config ("kiln default"), with the
// tuned config ("kiln tuned": the tuning record, tuned now when there is none), as
// the hand-written baseline (baselines/), and, for the GEMM cases, as cuBLAS and
// cuBLASLt (runtime/bench_vendor.h). Every implementation's outputs are checked
// against the reference (runtime/reference.h) on the same random inputs before its time
// counts. Rates are set against the roofline measured in the same run: the
// device-to-device copy bandwidth and cuBLAS's GEMM rate. --compile-only needs no GPU:
// it compiles every case's generated kernels and baselines through NVRTC and says
// what compiled.
#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>

#include "baselines/baseline.h"
#include "baselines/runner.h"
#include "ir/compare.h"
#include "ir/error.h"
#include "ir/interpreter.h"
#include "runtime/autotuner.h"
#include "runtime/bench_cases.h"
#include "runtime/bench_report.h"
#include "runtime/bench_vendor.h"
#include "runtime/cuda_driver.h"
#include "runtime/device.h"
#include "runtime/device_compare.h"
#include "runtime/executable.h"
#include "runtime/gemm_rate.h"
#include "runtime/knobs.h"
#include "runtime/program.h"
#include "runtime/reference.h"
#include "runtime/timer.h"
#include "runtime/tuning_db.h"
#include "tools/commands.h"

namespace kiln::tools {

namespace {

using runtime::BenchCase;
using runtime::BenchRow;
using runtime::BenchSize;

constexpr const char* kDefaultImpl = "kiln default";
constexpr const char* kTunedImpl = "kiln tuned";
constexpr const char* kHandImpl = "hand-written";

struct BenchArgs {
  std::vector<std::string> cases;
  std::string sizes;
  std::string csv, json, peers;
  bool compile_only = false;
  bool no_tune = false;
  double max_seconds = 30;
  std::string arch;
  uint64_t seed = 1;
  int reps = 50;
  bool graph_timing = false;  // every launch timed in a CUDA graph, not only the short ones
};

// One case at one dtype and size.
struct Job {
  const BenchCase* c;
  DType dtype;
  BenchSize size;
  std::string str() const { return fmt::format("{} {} {}", c->name, dtype_name(dtype), size.str()); }
};

std::vector<Job> jobs_of(const BenchArgs& a) {
  std::vector<const BenchCase*> cases;
  if (a.cases.empty())
    for (const BenchCase& c : runtime::bench_cases()) cases.push_back(&c);
  for (const std::string& name : a.cases) cases.push_back(&runtime::find_bench_case(name));
  std::optional<std::vector<BenchSize>> sizes;
  if (!a.sizes.empty()) sizes = runtime::parse_bench_sizes(a.sizes);
  // --sizes runs each size in the cases (named, or all) that take its form, so that one
  // list can serve `attention attention_causal`; a size that no named case takes is an error.
  if (sizes && !a.cases.empty())
    for (const BenchSize& s : *sizes) {
      bool taken = false;
      for (const BenchCase* c : cases) taken = taken || c->takes(s);
      if (taken) continue;
      if (cases.size() == 1) runtime::check_size_form(*cases.front(), s);
      throw Error(fmt::format("size {} fits none of the benchmark cases named ({})", s.str(), fmt::join(a.cases, ", ")));
    }
  std::vector<Job> jobs;
  for (const BenchCase* c : cases)
    for (DType t : c->dtypes)
      for (const BenchSize& s : sizes.value_or(c->sizes))
        if (c->takes(s)) jobs.push_back({c, t, s});
  return jobs;
}

// The compile pipeline without `tile`: lowering then gives every kernel the
// heuristic's config, whatever the tuning database holds.
std::string heuristic_pipeline() {
  std::vector<std::string> names;
  for (const std::string& n : passes::split_pipeline(runtime::kCompilePipeline))
    if (n != "tile") names.push_back(n);
  return fmt::format("{}", fmt::join(names, ","));
}

std::string kernel_configs(const runtime::Program& p) {
  std::vector<std::string> parts;
  for (const runtime::CompiledKernel& k : p.kernels())
    parts.push_back(fmt::format("{} {}", k.kernel.name, k.kernel.config.str()));
  return fmt::format("{}", fmt::join(parts, "; "));
}

// The first line of an error, for a table cell.
std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

baselines::Problem problem_of(const Job& j, int sm_count) {
  baselines::Problem p{j.c->name, j.dtype, j.size.rows, j.size.cols, sm_count};
  if (j.size.is_gemm()) {
    p.depth = j.size.depth;
    p.batch = j.size.batches();
  }
  if (j.size.is_attention()) {
    p.batch = j.size.batch;
    p.heads = j.size.heads;
    p.kv_heads = j.size.kv_heads;
    p.kv_len = j.size.kv_len;
    p.causal = j.size.causal;
  }
  return p;
}

// ---- --compile-only ----

int compile_only(const BenchArgs& a, const std::vector<Job>& jobs) {
  std::string why;
  const bool gpu = runtime::gpu_available(&why);
  const std::string arch = !a.arch.empty() ? a.arch : knobs::arch().value_or(gpu ? "" : "sm_90a");
  const int sm_count = gpu ? runtime::Device::get().sm_count() : 132;
  bool ok = true;
  for (const Job& j : jobs) {
    std::cout << fmt::format("== {}\n", j.str());
    try {
      runtime::ProgramOptions options;
      options.pipeline = heuristic_pipeline();
      options.arch = arch;
      runtime::Program p = runtime::Program::compile(runtime::bench_graph(*j.c, j.dtype, j.size), options);
      std::cout << fmt::format("  {}: compiled {} kernel(s) for {}: {}\n", kDefaultImpl, p.kernels().size(),
                               p.arch(), kernel_configs(p));
    } catch (const Error& e) {
      std::cout << fmt::format("  {}: not supported: {}\n", kDefaultImpl, first_line(e.what()));
    }
    const baselines::Problem problem = problem_of(j, sm_count);
    const auto variants = baselines::for_op(j.c->name, j.dtype);
    if (variants.empty()) std::cout << fmt::format("  {}: none for {}\n", kHandImpl, dtype_name(j.dtype));
    for (const baselines::Baseline* b : variants) {
      if (std::string no = b->why_unsupported(problem); !no.empty()) {
        std::cout << fmt::format("  {} {}: skipped: {}\n", kHandImpl, b->name, no);
        continue;
      }
      try {
        baselines::CompiledBaseline c = baselines::compile_baseline(b->build(problem), arch);
        std::cout << fmt::format("  {} {}: compiled for {}: {} bytes of cubin {}\n", kHandImpl, b->name, c.arch,
                                 c.binary.cubin.size(), c.kernel.config);
      } catch (const Error& e) {
        ok = false;  // a baseline that does not compile is a bug, unlike a case Kiln cannot lower yet
        std::cout << fmt::format("  {} {}: FAILED: {}\n", kHandImpl, b->name, e.what());
      }
    }
    for (const std::string& vendor : runtime::vendor_impls(*j.c)) {
      if (vendor != runtime::kCublasEpilogueImpl) {
        std::cout << fmt::format("  {}: not run with --compile-only (a vendor library)\n", vendor);
        continue;
      }
      // Kiln's half of this row compiles here; a failure is Kiln's bug, as a baseline's is.
      try {
        runtime::ProgramOptions options;
        options.arch = arch;
        runtime::Program p = runtime::Program::compile(runtime::vendor_epilogue_graph(j.dtype, j.size), options);
        std::cout << fmt::format("  {}: cuBLAS not run with --compile-only; Kiln's epilogue compiled {} kernel(s) "
                                 "for {}: {}\n", vendor, p.kernels().size(), p.arch(), kernel_configs(p));
      } catch (const Error& e) {
        ok = false;
        std::cout << fmt::format("  {}: FAILED: Kiln's epilogue: {}\n", vendor, e.what());
      }
    }
  }
  std::cout << (ok ? "compile-only: every baseline compiled; nothing ran on a GPU\n"
                   : "compile-only: some baselines failed to compile\n");
  return ok ? kExitOk : kExitError;
}

// ---- running on the GPU ----

// The roofs every row is placed under, measured once per run: the stream ceilings
// (copy, read-only, write-only) and the GEMM rate.
struct Roof {
  runtime::StreamCeilings streams;
  double gemm_tflops = 0;  // 0: not measured
};

// What a job's implementations share: its inputs on the device, its output buffers,
// and the reference outputs (evaluated once per job).
struct JobData {
  ir::Graph graph;
  std::vector<HostTensor> reference;
  std::vector<runtime::DeviceReference> want;  // the reference on the GPU, where outputs are compared
  std::vector<runtime::DeviceBuffer> inputs, outputs;
  std::vector<CUdeviceptr> input_ptrs, output_ptrs;
};

JobData prepare(const Job& j, uint64_t seed) {
  JobData d{runtime::bench_graph(*j.c, j.dtype, j.size), {}, {}, {}, {}, {}, {}};
  std::vector<HostTensor> inputs = ir::random_inputs(d.graph, seed);
  d.reference = runtime::reference_outputs(d.graph, inputs);
  for (const HostTensor& t : inputs) {
    d.inputs.push_back(runtime::DeviceBuffer::from_host(t));
    d.input_ptrs.push_back(d.inputs.back().ptr());
  }
  for (size_t i = 0; i < d.reference.size(); ++i) {
    const HostTensor& t = d.reference[i];
    d.want.emplace_back(t, rel_l2_bound_for(*d.graph.outputs()[i], knobs::tf32()));
    d.outputs.emplace_back(static_cast<size_t>(t.type.bytes()));
    d.output_ptrs.push_back(d.outputs.back().ptr());
  }
  return d;
}

// A row with the job's key and byte count filled in.
BenchRow new_row(const Job& j, const std::string& impl) {
  BenchRow row;
  row.case_name = j.c->name;
  row.dtype = dtype_name(j.dtype);
  row.shape = j.size.dims();
  row.impl = impl;
  row.bytes = runtime::bench_bytes(*j.c, j.dtype, j.size);
  row.flops = runtime::bench_flops(*j.c, j.dtype, j.size);
  row.written_bytes = runtime::bench_written_bytes(*j.c, j.dtype, j.size);
  return row;
}

// Runs `launch` once on poisoned outputs and compares each with the reference.
std::string check_outputs(JobData& d, const std::function<void()>& launch, std::string* detail) {
  for (runtime::DeviceBuffer& b : d.outputs) b.fill_bytes(0xFF);
  launch();
  runtime::Device::get().synchronize();
  bool passed = true;
  std::vector<std::string> notes;
  const std::string arch = runtime::Device::get().compile_target();
  for (size_t i = 0; i < d.outputs.size(); ++i) {
    // Compared on the GPU: a download and a host pass over 2^27 elements would cost
    // seconds per implementation.
    Comparison c = d.want[i].compare(d.outputs[i], arch);
    passed = passed && c.passed;
    if (!c.passed) notes.push_back(fmt::format("output {}: {}", i, c.str()));
  }
  *detail = fmt::format("{}", fmt::join(notes, "; "));
  return passed ? "passed" : "failed";
}

// Checks, then (when the check passed) times one implementation: CUDA events around each
// launch, or, for launches shorter than kGraphTimingBelowMs (every launch with
// --graph-timing), a CUDA graph of 20 of them.
BenchRow measure(const Job& j, JobData& d, const std::string& impl, const std::string& config,
                 const std::function<void()>& launch, const BenchArgs& a, const Roof& roof) {
  BenchRow row = new_row(j, impl);
  row.config = config;
  std::string detail;
  row.check = check_outputs(d, launch, &detail);
  if (row.check == "passed") {
    row.median_ms = runtime::time_kernel_ms(launch, 5, a.reps);
    if (a.graph_timing || row.median_ms < runtime::kGraphTimingBelowMs) {
      // Short: the launch from the host would dominate; time it in a CUDA graph as
      // peers.py times torch's (a launch that cannot be captured keeps its event time).
      try {
        row.median_ms = runtime::time_in_graph_ms(launch, 3, a.reps);
        row.config += row.config.empty() ? "timed in a CUDA graph" : "; timed in a CUDA graph";
      } catch (const Error&) {
      }
    }
    runtime::fill_rates(row, roof.streams.copy_gbs, roof.gemm_tflops);
    runtime::place_under_ceiling(row, roof.streams, roof.gemm_tflops);
  } else {
    row.config += " [" + detail + "]";
  }
  return row;
}

BenchRow unsupported_row(const Job& j, const std::string& impl, const std::string& why) {
  BenchRow row = new_row(j, impl);
  row.config = "not supported: " + first_line(why);
  row.check = "skipped";
  return row;
}

// A row for an implementation that compiled but failed while running.
BenchRow error_row(const Job& j, const std::string& impl, const std::string& what) {
  BenchRow row = new_row(j, impl);
  row.config = "error: " + first_line(what);
  row.check = "failed";
  return row;
}

BenchRow run_program(const Job& j, JobData& d, runtime::Program& p, const std::string& impl,
                     const std::string& note, const BenchArgs& a, const Roof& roof) {
  runtime::Executable& exe = p.executable();
  std::vector<const runtime::DeviceBuffer*> ins;
  std::vector<runtime::DeviceBuffer*> outs;
  for (auto& b : d.inputs) ins.push_back(&b);
  for (auto& b : d.outputs) outs.push_back(&b);
  exe.bind(ins, outs);
  return measure(j, d, impl, kernel_configs(p) + note, [&] { exe.launch(); }, a, roof);
}

// Compiles with the tuning database's configs, first tuning (within the time left)
// every kernel that has no record; KILN_TUNE=refresh tunes them all again.
runtime::Program tuned_program(const ir::Graph& g, const runtime::Program& heuristic, const BenchArgs& a,
                               std::string* note) {
  runtime::ProgramOptions options;
  options.arch = a.arch;
  const knobs::TuneMode mode = knobs::tune_mode();
  if (mode == knobs::TuneMode::Off) {
    *note = " (KILN_TUNE=off: heuristic configs)";
    return runtime::Program::compile(g, options);
  }
  runtime::TuningDb db = runtime::TuningDb::load(knobs::tune_db());
  std::vector<ir::Kernel> kernels;
  std::vector<size_t> todo;
  for (const runtime::CompiledKernel& k : heuristic.kernels()) {
    if (mode == knobs::TuneMode::Refresh || !db.find(runtime::current_key(k.kernel, heuristic.arch()))) todo.push_back(kernels.size());
    kernels.push_back(k.kernel);
  }
  if (todo.empty()) {
    *note = " (from the tuning database)";
  } else if (a.no_tune) {
    *note = fmt::format(" ({} of {} kernel(s) without a tuning record: heuristic configs)", todo.size(),
                        kernels.size());
  } else {
    using Clock = std::chrono::steady_clock;
    // The budget is the sweeps' (as kiln tune counts it): the CPU reference of a large
    // case alone can take seconds, and would leave no time to time any candidate.
    std::vector<runtime::KernelReference> refs = runtime::kernel_references(heuristic.graph(), kernels, a.seed);
    const Clock::time_point start = Clock::now();
    std::vector<runtime::TuningRecord> tuned;
    for (size_t i : todo) {
      runtime::TuneOptions t;
      t.arch = heuristic.arch();
      const double left = a.max_seconds - std::chrono::duration<double>(Clock::now() - start).count();
      if (a.max_seconds > 0) t.max_seconds = std::max(left, 1e-3);
      runtime::TuneResult r = runtime::tune_kernel(kernels[i], refs[i], t);
      if (r.best >= 0) tuned.push_back(runtime::to_record(r));
    }
    runtime::TuningDb::record(knobs::tune_db(), tuned);  // merged with what other processes recorded
    *note = fmt::format(" (tuned now: {:.1f} s)", std::chrono::duration<double>(Clock::now() - start).count());
  }
  return runtime::Program::compile(g, options);
}

std::vector<BenchRow> run_job(const Job& j, const BenchArgs& a, const Roof& roof, int sm_count) {
  std::vector<BenchRow> rows;
  JobData d = prepare(j, a.seed);
  std::optional<runtime::Program> heuristic;
  try {
    runtime::ProgramOptions options;
    options.pipeline = heuristic_pipeline();
    options.arch = a.arch;
    heuristic.emplace(runtime::Program::compile(d.graph, options));
  } catch (const Error& e) {
    rows.push_back(unsupported_row(j, kDefaultImpl, e.what()));
    rows.push_back(unsupported_row(j, kTunedImpl, e.what()));
  }
  if (heuristic) {
    try {
      rows.push_back(run_program(j, d, *heuristic, kDefaultImpl, "", a, roof));
    } catch (const Error& e) {
      rows.push_back(error_row(j, kDefaultImpl, e.what()));
    }
    std::optional<runtime::Program> tuned;
    std::string note;
    try {
      tuned.emplace(tuned_program(d.graph, *heuristic, a, &note));
    } catch (const Error& e) {
      rows.push_back(unsupported_row(j, kTunedImpl, e.what()));
    }
    if (tuned) {
      try {
        rows.push_back(run_program(j, d, *tuned, kTunedImpl, note, a, roof));
      } catch (const Error& e) {
        rows.push_back(error_row(j, kTunedImpl, e.what()));
      }
    }
  }
  const baselines::Problem problem = problem_of(j, sm_count);
  if (const baselines::Baseline* b = baselines::find(problem)) {
    std::optional<baselines::CompiledBaseline> compiled;
    try {
      compiled.emplace(baselines::compile_baseline(b->build(problem), a.arch));
    } catch (const Error& e) {
      rows.push_back(unsupported_row(j, kHandImpl, e.what()));
    }
    if (compiled) {
      try {
        baselines::LoadedBaseline loaded(*compiled);
        rows.push_back(measure(j, d, kHandImpl, b->name + " " + compiled->kernel.config,
                               [&] { loaded.launch(d.input_ptrs, d.output_ptrs, j.size.rows, j.size.cols); },
                               a, roof));
      } catch (const Error& e) {
        rows.push_back(error_row(j, kHandImpl, e.what()));
      }
    }
  } else {
    rows.push_back(unsupported_row(j, kHandImpl, "no hand-written baseline for this dtype and size"));
  }
  for (const std::string& impl : runtime::vendor_impls(*j.c)) {
    std::optional<runtime::VendorRun> vendor;
    try {
      vendor.emplace(runtime::make_vendor_run(impl, *j.c, j.dtype, j.size, d.inputs, d.outputs, a.arch));
    } catch (const Error& e) {
      rows.push_back(unsupported_row(j, impl, e.what()));
    }
    if (vendor) {
      try {
        rows.push_back(measure(j, d, impl, vendor->config, vendor->launch, a, roof));
      } catch (const Error& e) {
        rows.push_back(error_row(j, impl, e.what()));
      }
    }
  }
  return rows;
}

// ---- the table ----

// Speed relative to the hand-written baseline of the same case, dtype and shape:
// baseline time / this time (above 1: faster than the baseline).
std::string vs_hand(const runtime::BenchReport& r, const BenchRow& row) {
  for (const BenchRow& h : r.rows)
    if (h.impl == kHandImpl && h.case_name == row.case_name && h.dtype == row.dtype && h.shape == row.shape &&
        h.median_ms > 0 && row.median_ms > 0)
      return fmt::format("{:.2f}x", h.median_ms / row.median_ms);
  return "-";
}

void print_table(const runtime::BenchReport& r) {
  // Groups in the order they first appear.
  std::vector<const BenchRow*> heads;
  for (const BenchRow& row : r.rows) {
    bool seen = false;
    for (const BenchRow* h : heads)
      seen = seen || (h->case_name == row.case_name && h->dtype == row.dtype && h->shape == row.shape);
    if (!seen) heads.push_back(&row);
  }
  for (const BenchRow* h : heads) {
    std::cout << fmt::format("{} {} [{}]: {:.1f} MB moved at least\n", h->case_name, h->dtype,
                             fmt::join(h->shape, ", "), static_cast<double>(h->bytes) / 1e6);
    std::cout << fmt::format("  {:<14} {:>10} {:>8} {:>8} {:>8} {:>14} {:>7} {:>8}  {:<7}  {}\n", "impl",
                             "median ms", "GB/s", "TFLOP/s", "flop/B", "% roofline", "% ceil", "vs hand", "check",
                             "config");
    for (const BenchRow& row : r.rows) {
      if (row.case_name != h->case_name || row.dtype != h->dtype || row.shape != h->shape) continue;
      const double intensity = row.bytes > 0 ? static_cast<double>(row.flops) / static_cast<double>(row.bytes) : 0;
      std::string roof = row.median_ms > 0 ? fmt::format("{:.1f}", row.pct_roofline) : "-";
      if (row.peer_pct_roofline) roof += fmt::format(" ({:.1f})", *row.peer_pct_roofline);
      std::string ms = row.median_ms > 0 ? fmt::format("{:.4f}", row.median_ms) : "-";
      const std::string ceil = row.ceiling_gbs > 0 && row.median_ms > 0 ? fmt::format("{:.1f}", row.pct_ceiling) : "-";
      std::cout << fmt::format("  {:<14} {:>10} {:>8.0f} {:>8.2f} {:>8.2f} {:>14} {:>7} {:>8}  {:<7}  {}\n", row.impl,
                               ms, row.gb_s, row.tflop_s, intensity, roof, ceil, vs_hand(r, row), row.check,
                               row.config);
    }
  }
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  f << text;
  if (!f) throw Error(fmt::format("kiln bench: cannot write {}", path));
}

int bench(const BenchArgs& a) {
  const std::vector<Job> jobs = jobs_of(a);
  if (a.reps < 1) throw Error(fmt::format("kiln bench: --reps must be at least 1, got {}", a.reps));
  if (a.compile_only) return compile_only(a, jobs);
  std::string why;
  if (!runtime::gpu_available(&why))
    throw Error(fmt::format("kiln bench: no GPU found ({}); use --compile-only to compile every case's kernels and "
                            "baselines without one", why));
  runtime::Device& device = runtime::Device::get();
  runtime::BenchReport report;
  report.gpu = device.name();
  report.date = runtime::today();
  const runtime::StreamCeilings streams = runtime::measure_stream_ceilings();
  report.copy_gbs = streams.copy_gbs;
  report.read_gbs = streams.read_gbs;
  report.write_gbs = streams.write_gbs;
  const runtime::GemmRate gemm = runtime::measure_gemm_rate();
  report.gemm_tflops = gemm.tflops;
  report.gemm_source = gemm.tflops > 0 ? gemm.source : gemm.why_not;
  std::cout << fmt::format("kiln bench on {} ({}), {}; measured now: copy {:.0f} GB/s, read-only {:.0f} GB/s, "
                           "write-only {:.0f} GB/s; ", device.name(), device.compile_target(), report.date,
                           report.copy_gbs, report.read_gbs, report.write_gbs);
  std::cout << (gemm.tflops > 0 ? fmt::format("GEMM rate: {:.0f} TFLOP/s ({})\n", gemm.tflops, gemm.source)
                                : fmt::format("GEMM rate not measured: {}\n", gemm.why_not));
  const Roof roof{streams, report.gemm_tflops};
  for (const Job& j : jobs) {
    std::cout << fmt::format("== {}\n", j.str()) << std::flush;
    for (BenchRow& row : run_job(j, a, roof, device.sm_count())) {
      std::string figures = row.config;
      if (row.median_ms > 0)
        figures = row.flops > 0 ? fmt::format("{:.4f} ms, {:.1f} TFLOP/s, {:.1f}% of the roofline", row.median_ms,
                                              row.tflop_s, row.pct_roofline)
                  : row.ceiling_gbs > 0
                      ? fmt::format("{:.4f} ms, {:.0f} GB/s, {:.1f}% of copy, {:.1f}% of its read/write ceiling "
                                    "({:.0f} GB/s)", row.median_ms, row.gb_s, row.pct_roofline, row.pct_ceiling,
                                    row.ceiling_gbs)
                      : fmt::format("{:.4f} ms, {:.1f}% of the roofline", row.median_ms, row.pct_roofline);
      std::cout << fmt::format("  {}: {} {}\n", row.impl, row.check, figures);
      report.rows.push_back(std::move(row));
    }
    // Written after every job, so that an interrupted run keeps what it measured.
    if (!a.json.empty()) runtime::write_bench_report(a.json, report);
    if (!a.csv.empty()) write_text(a.csv, runtime::to_csv(report));
  }
  if (!a.peers.empty()) {
    runtime::merge_peers(report, runtime::read_bench_report(a.peers));
    std::cout << fmt::format("merged the peer rows of {} (% roofline against this run's copy bandwidth; the peer's "
                             "own figure in parentheses)\n", a.peers);
  }
  print_table(report);
  if (!a.json.empty()) runtime::write_bench_report(a.json, report);
  if (!a.csv.empty()) write_text(a.csv, runtime::to_csv(report));
  bool ok = true;
  for (const BenchRow& row : report.rows) ok = ok && row.check != "failed";
  return ok ? kExitOk : kExitError;
}

}  // namespace

Command add_bench_command(CLI::App& kiln) {
  auto args = std::make_shared<BenchArgs>();
  CLI::App* app = kiln.add_subcommand(
      "bench", "Run the benchmark cases as Kiln's default and tuned kernels, as hand-written baselines and (GEMM "
               "cases) as cuBLAS and cuBLASLt; check each against the reference and report time, GB/s, TFLOP/s and "
               "% of the roofline (copy bandwidth, GEMM rate).");
  std::string names;
  for (const BenchCase& c : runtime::bench_cases()) names += (names.empty() ? "" : ", ") + c.name;
  app->add_option("cases", args->cases, "cases to run (default: all): " + names);
  app->add_option("--sizes", args->sizes,
                  "sizes instead of each case's defaults: RxC for the memory-bound cases, MxNxK or BxMxNxK for "
                  "the GEMM cases, BxHxSqxSkvxD (or BxHxSxD) with c for causal and gN for N K/V heads for attention "
                  "(with no case named, each size runs in the cases that take its form)");
  app->add_option("--csv", args->csv, "also write the rows to this CSV file");
  app->add_option("--json", args->json, "also write the report (rows, device, date, copy bandwidth) as JSON");
  app->add_option("--peers", args->peers, "merge a peers JSON report (bench/peers.py) into the table");
  app->add_flag("--compile-only", args->compile_only,
                "compile every case's generated kernels and baselines through NVRTC; needs no GPU");
  app->add_flag("--no-tune", args->no_tune, "kiln tuned uses tuning records only; never tunes now");
  app->add_option("--max-seconds", args->max_seconds, "tuning budget per case and size, in seconds (0: none)")
      ->capture_default_str();
  app->add_option("--arch", args->arch, "compile for this arch (default: KILN_ARCH, else the GPU's; sm_90a "
                                        "with --compile-only and no GPU)");
  app->add_option("--seed", args->seed, "seed of the random inputs (never zeros)")->capture_default_str();
  app->add_option("--reps", args->reps, "timed runs per implementation (the median counts)")->capture_default_str();
  app->add_flag("--graph-timing", args->graph_timing,
                "time every launch in a CUDA graph of 20 (by default only launches under 50 us), as "
                "bench/peers.py's compile-graph and kiln-graph rows are timed");
  return Command{app, [args] { return bench(*args); }};
}

}  // namespace kiln::tools
