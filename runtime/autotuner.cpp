// The autotuner's sweep: parallel compiles, then on the GPU one checked run and a
// timing per candidate. See autotuner.h.
#include "runtime/autotuner.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <memory>

#include "ir/compare.h"
#include "ir/error.h"
#include "ir/interpreter.h"
#include "ir/tile_config.h"
#include "runtime/compile_cache.h"
#include "runtime/cuda_driver.h"
#include "runtime/device.h"
#include "runtime/device_buffer.h"
#include "runtime/device_compare.h"
#include "runtime/reference.h"
#include "runtime/knobs.h"
#include "runtime/launch_args.h"
#include "runtime/thread_pool.h"
#include "runtime/timer.h"

namespace kiln::runtime {

namespace {

using Clock = std::chrono::steady_clock;
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr int kMaxInputSets = 8;
// Finalists: the candidates within 10% of the best after the first pass, at most 64,
// timed again over 7 interleaved rounds; then candidates within 3% of the fastest
// count as tied: the default config wins a tie, else the first in candidate order.
// Only finalists can be picked: a first-pass time alone never decides.
constexpr double kFinalistMargin = 0.10;
constexpr size_t kMaxFinalists = 64;
constexpr int kFinalRounds = 7;
// GPU time a candidate runs untimed before its first timing: long enough for the clocks
// to come back up after the host's compile and check (bench/NOTES.md, 2026-12-02).
constexpr float kWarmUpMs = 20.0f;
constexpr double kTie = 0.03;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// Without a GPU (dry runs) the arch comes from the caller or KILN_ARCH, else sm_90a.
std::string tuning_arch(const TuneOptions& options) {
  if (!options.arch.empty()) return options.arch;
  if (auto a = knobs::arch()) return *a;
  return gpu_available() ? default_arch() : "sm_90a";
}

// Errors a launch raises when the config asks for more than the GPU has; they leave
// the context usable, so the sweep goes on with the candidate scored as infinity.
bool is_out_of_resources(const std::string& message) {
  return message.find("OUT_OF_RESOURCES") != std::string::npos ||
         message.find("CUDA_ERROR_INVALID_VALUE") != std::string::npos;
}

// Input and output buffers for one set of the kernel's arguments, and their pointers
// (a candidate's LaunchArgs adds its tensor maps to them).
struct ArgSet {
  std::vector<DeviceBuffer> buffers;  // per kernel argument
  std::vector<CUdeviceptr> ptrs;

  ArgSet(const ir::Kernel& k, const std::vector<HostTensor>& inputs) {
    size_t next_input = 0;
    for (const ir::KernelArg& a : k.args) {
      if (a.is_output) buffers.emplace_back(static_cast<size_t>(a.type.bytes()));
      else buffers.push_back(DeviceBuffer::from_host(inputs.at(next_input++)));
    }
    for (const DeviceBuffer& b : buffers) ptrs.push_back(b.ptr());
  }
};

// Runs `b` once on set 0 with poisoned outputs and compares every output with the
// reference, on the GPU. Returns the comparisons' text; sets `passed`.
std::string check_outputs(const ir::Kernel& k, CUfunction fn, const CandidateBuild& b, ArgSet& set,
                          const std::vector<DeviceReference>& want, const std::string& arch, bool& passed) {
  for (size_t i = 0; i < k.args.size(); ++i)
    if (k.args[i].is_output) set.buffers[i].fill_bytes(0xFF);  // NaN in every float dtype
  const LaunchArgs args(b.launch, set.ptrs, k.name);
  args.stage();
  launch_kernel(fn, Dim3{b.launch.grid[0], b.launch.grid[1], b.launch.grid[2]},
                Dim3{b.launch.block[0], b.launch.block[1], b.launch.block[2]}, b.launch.shared_bytes, args.pointers(),
                k.name);
  passed = true;
  std::string text;
  size_t next_output = 0;
  for (size_t i = 0; i < k.args.size(); ++i) {
    if (!k.args[i].is_output) continue;
    Comparison c = want.at(next_output++).compare(set.buffers[i], arch);
    passed = passed && c.passed;
    text += (text.empty() ? "" : "; ") + c.str();
  }
  return text;
}

// A candidate that passed its check, kept loaded so that the finalists can be timed again.
struct Loaded {
  Module module;
  CUfunction fn = nullptr;
  Dim3 grid, block;
  unsigned shared_bytes = 0;
  std::vector<std::unique_ptr<LaunchArgs>> args;  // per argument set
};

// The median of `samples` (not empty).
double median_of(std::vector<double> samples) {
  std::sort(samples.begin(), samples.end());
  return samples[samples.size() / 2];
}

// One launch of a candidate on the next input set in turn.
void launch_candidate(const ir::Kernel& k, const Loaded& l, const std::vector<ArgSet>& sets, size_t& turn) {
  const LaunchArgs& args = *l.args[turn++ % sets.size()];
  args.stage();  // a staged operand's copy is part of the kernel's time
  launch_kernel(l.fn, l.grid, l.block, l.shared_bytes, args.pointers(), k.name);
}

// Times one loaded candidate, rotating the input sets; the median of `reps` runs.
// A launch shorter than kGraphTimingBelowMs is timed again in a CUDA graph: event pairs
// around it measure the host's launch as much as the kernel and rank candidates wrongly.
double time_candidate(const ir::Kernel& k, const Loaded& l, std::vector<ArgSet>& sets, int warmup, int reps) {
  size_t turn = 0;
  auto launch = [&] { launch_candidate(k, l, sets, turn); };
  const double ms = time_kernel_ms(launch, warmup, reps);
  if (ms >= kGraphTimingBelowMs) return ms;
  return time_in_graph_ms(launch, 1, reps, static_cast<int>(std::max<size_t>(sets.size(), 10)));
}

// The first pass times each candidate once, in a row; clock and power drift between
// candidates then decide near-ties, and two sweeps could pick differently. The
// candidates within kFinalistMargin of the best are timed again in turns, several
// rounds, and each keeps the median of its rounds: drift hits every finalist alike.
// Returns the finalists (none when fewer than two).
std::vector<size_t> retime_finalists(const ir::Kernel& k, std::vector<Trial>& trials,
                                     std::vector<std::unique_ptr<Loaded>>& loaded, std::vector<ArgSet>& sets,
                                     const TuneOptions& options) {
  double best = kInf;
  for (const Trial& t : trials)
    if (t.status == TrialStatus::Ok) best = std::min(best, t.median_ms);
  std::vector<size_t> finalists;
  for (size_t i = 0; i < trials.size(); ++i)
    if (trials[i].status == TrialStatus::Ok && loaded[i] && trials[i].median_ms <= best * (1 + kFinalistMargin))
      finalists.push_back(i);
  std::sort(finalists.begin(), finalists.end(),
            [&](size_t a, size_t b) { return trials[a].median_ms < trials[b].median_ms; });
  if (finalists.size() > kMaxFinalists) finalists.resize(kMaxFinalists);
  if (finalists.size() < 2) return {};
  std::vector<std::vector<double>> rounds(finalists.size());
  for (int round = 0; round < kFinalRounds; ++round)
    for (size_t f = 0; f < finalists.size(); ++f)
      rounds[f].push_back(time_candidate(k, *loaded[finalists[f]], sets, 1, options.reps));
  for (size_t f = 0; f < finalists.size(); ++f) trials[finalists[f]].median_ms = median_of(rounds[f]);
  return finalists;
}

// The pick among the finalists (among every timed candidate when there are none).
int choose_among(const std::vector<Trial>& trials, const std::vector<size_t>& finalists, int default_index) {
  if (finalists.empty()) return choose_best(trials, kTie, default_index);
  std::vector<Trial> eligible = trials;
  for (size_t i = 0; i < eligible.size(); ++i)
    if (std::find(finalists.begin(), finalists.end(), i) == finalists.end()) eligible[i].status = TrialStatus::NotTimed;
  return choose_best(eligible, kTie, default_index);
}

}  // namespace

double kernel_bytes(const ir::Kernel& k) {
  double bytes = 0;
  for (const ir::KernelArg& a : k.args) bytes += static_cast<double>(a.type.bytes());
  return bytes;
}

std::vector<CandidateBuild> compile_candidates(const ir::Kernel& k, const std::string& arch, int threads,
                                               double deadline_s) {
  const Clock::time_point start = Clock::now();
  std::vector<ir::TileConfig> configs = ir::candidates(k);
  std::vector<CandidateBuild> builds(configs.size());
  parallel_for(configs.size(), threads, [&](size_t i) {
    CandidateBuild& b = builds[i];
    b.trial.config = configs[i];
    b.trial.median_ms = kInf;
    // The kernel's own (default) config is always compiled: the sweep times it first.
    if (deadline_s > 0 && seconds_since(start) > deadline_s && !(configs[i] == k.config)) {
      b.trial.status = TrialStatus::OverBudget;
      return;
    }
    ir::Kernel variant = k;
    variant.config = configs[i];
    try {
      ir::validate(variant, variant.config);  // an illegal config never reaches NVRTC
      b.source = codegen::emit_cuda(variant);
      b.launch = codegen::launch_dims(variant);
      b.binary = CompileCache::global().compile(b.source, k.name, CompileOptions{arch, {}});
      b.trial.compile_ms = b.binary.compile_ms;
    } catch (const Error& e) {
      b.trial.status = TrialStatus::CompileFailed;
      b.trial.detail = e.what();
    }
  });
  return builds;
}

std::vector<KernelReference> kernel_references(const ir::Graph& g, const std::vector<ir::Kernel>& kernels,
                                               uint64_t seed) {
  ir::Graph probe = g.clone();
  std::map<int, ir::Value*> by_id;
  for (ir::Value* v : probe.inputs()) by_id[v->id] = v;
  for (ir::Node* n : probe.nodes()) by_id[n->result->id] = n->result;
  // Every tensor a kernel touches becomes an output of the probe graph, once.
  std::map<int, size_t> slot;
  std::vector<ir::Value*> outputs;
  for (const ir::Kernel& k : kernels)
    for (const ir::KernelArg& a : k.args) {
      if (slot.count(a.value_id)) continue;
      auto it = by_id.find(a.value_id);
      if (it == by_id.end())
        throw Error(fmt::format("kernel @{}: argument %{} is no value of graph '{}'", k.name, a.name, g.name()));
      slot[a.value_id] = outputs.size();
      outputs.push_back(it->second);
    }
  probe.set_outputs(outputs);
  std::vector<HostTensor> inputs = ir::random_inputs(probe, seed);
  std::vector<HostTensor> values = reference_outputs(probe, inputs);

  std::vector<KernelReference> refs;
  for (const ir::Kernel& k : kernels) {
    KernelReference r;
    for (const ir::KernelArg& a : k.args) {
      (a.is_output ? r.outputs : r.inputs).push_back(values[slot.at(a.value_id)]);
      if (a.is_output) r.output_bounds.push_back(rel_l2_bound_for(*by_id.at(a.value_id), knobs::tf32()));
    }
    refs.push_back(std::move(r));
  }
  return refs;
}

TuneResult dry_run_kernel(const ir::Kernel& k, const TuneOptions& options) {
  const Clock::time_point start = Clock::now();
  TuneResult r;
  r.kernel = k;
  r.key = current_key(k);
  r.key.arch = tuning_arch(options);
  r.bytes = kernel_bytes(k);
  for (CandidateBuild& b : compile_candidates(k, r.key.arch, options.compile_threads, options.max_seconds)) {
    if (b.trial.status == TrialStatus::NotTimed) b.trial.detail = b.binary.from_cache ? "cached" : "";
    r.trials.push_back(std::move(b.trial));
  }
  r.wall_s = seconds_since(start);
  return r;
}

TuneResult tune_kernel(const ir::Kernel& k, const KernelReference& ref, const TuneOptions& options) {
  std::string why;
  if (!gpu_available(&why))
    throw Error(fmt::format("kernel @{}: tuning needs a GPU ({}); `kiln tune --dry-run` compiles the candidates "
                            "without one",
                            k.name, why));
  const Clock::time_point start = Clock::now();
  Device& device = Device::get();
  TuneResult r;
  r.kernel = k;
  r.key = current_key(k);
  r.key.arch = options.arch.empty() ? default_arch() : options.arch;
  r.bytes = kernel_bytes(k);
  std::vector<CandidateBuild> builds = compile_candidates(k, r.key.arch, options.compile_threads, options.max_seconds);

  // Several input sets when one fits in L2 many times over, so that timed runs read
  // from memory rather than from the cache; set 0 holds the reference's inputs.
  const double l2 = static_cast<double>(device.l2_bytes());
  const int sets = std::clamp(static_cast<int>(std::ceil(2 * l2 / std::max(r.bytes, 1.0))), 1, kMaxInputSets);
  std::vector<ArgSet> arg_sets;
  arg_sets.emplace_back(k, ref.inputs);
  for (int s = 1; s < sets; ++s) {
    std::vector<HostTensor> inputs;
    for (const ir::KernelArg& a : k.args)
      if (!a.is_output) inputs.push_back(random_tensor(a.type, 7919u * static_cast<uint64_t>(s) + inputs.size()));
    arg_sets.emplace_back(k, inputs);
  }

  // Time the kernel's default config first, so that a sweep cut short by its budget or
  // its early stop still knows the default's time and never picks something slower.
  int default_index = -1;
  std::vector<size_t> order;
  for (size_t i = 0; i < builds.size(); ++i)
    if (builds[i].trial.config == k.config) {
      default_index = static_cast<int>(i);
      order.insert(order.begin(), i);
    } else {
      order.push_back(i);
    }
  std::vector<DeviceReference> want;
  for (size_t i = 0; i < ref.outputs.size(); ++i)
    want.emplace_back(ref.outputs[i], i < ref.output_bounds.size() ? ref.output_bounds[i] : -1.0);
  r.trials.resize(builds.size());
  std::vector<std::unique_ptr<Loaded>> loaded(builds.size());
  double best_ms = kInf;
  for (size_t index : order) {
    CandidateBuild& b = builds[index];
    Trial& t = b.trial;
    if (t.status != TrialStatus::NotTimed) {
      r.trials[index] = t;
      continue;
    }
    // Past the budget, stop once some candidate has a time: a sweep always has a pick.
    if (options.max_seconds > 0 && best_ms < kInf && seconds_since(start) > options.max_seconds) {
      t.status = TrialStatus::OverBudget;
      r.trials[index] = t;
      continue;
    }
    try {
      auto l = std::make_unique<Loaded>();
      l->module = Module(b.binary.cubin.data(), b.binary.cubin.size(), k.name);
      l->fn = l->module.function(k.name);
      prefer_shared_blocks(l->fn, b.launch.blocks_per_sm);
      l->grid = Dim3{b.launch.grid[0], b.launch.grid[1], b.launch.grid[2]};
      l->block = Dim3{b.launch.block[0], b.launch.block[1], b.launch.block[2]};
      l->shared_bytes = b.launch.shared_bytes;
      for (const ArgSet& set : arg_sets) l->args.push_back(std::make_unique<LaunchArgs>(b.launch, set.ptrs, k.name));
      bool passed = false;
      t.detail = check_outputs(k, l->fn, b, arg_sets[0], want, r.key.arch, passed);
      if (!passed) {
        t.status = TrialStatus::CheckFailed;
      } else {
        // Clocks drop while the host compiles and checks: run the candidate until they are
        // back up before its first timing.
        size_t turn = 0;
        warm_up_for_ms([&] { launch_candidate(k, *l, arg_sets, turn); }, kWarmUpMs);
        double first = time_candidate(k, *l, arg_sets, options.warmup, 1);
        if (first > options.early_stop * best_ms) {
          t.status = TrialStatus::StoppedEarly;
          t.median_ms = first;
        } else {
          t.median_ms = time_candidate(k, *l, arg_sets, 0, options.reps);
          t.status = TrialStatus::Ok;
          best_ms = std::min(best_ms, t.median_ms);
          loaded[index] = std::move(l);
        }
      }
    } catch (const Error& e) {
      device.synchronize();  // throws when the context is lost: then the sweep cannot go on
      if (!is_out_of_resources(e.what())) throw;
      t.status = TrialStatus::OutOfResources;
      t.median_ms = kInf;
      t.detail = e.what();
    }
    r.trials[index] = t;
  }
  const std::vector<size_t> finalists = retime_finalists(k, r.trials, loaded, arg_sets, options);
  r.best = choose_among(r.trials, finalists, default_index);
  if (r.best >= 0) r.kernel.config = r.trials[static_cast<size_t>(r.best)].config;
  r.wall_s = seconds_since(start);
  return r;
}

TuningRecord to_record(const TuneResult& r) {
  if (r.best < 0) throw Error(fmt::format("kernel @{}: no candidate passed its check; nothing to record", r.kernel.name));
  TuningRecord rec;
  rec.key = r.key;
  ir::Kernel bare = r.kernel;
  bare.config = ir::TileConfig{};
  rec.kernel = ir::print(bare);
  rec.trials = r.trials;
  rec.chosen = r.kernel.config;
  return rec;
}

}  // namespace kiln::runtime
