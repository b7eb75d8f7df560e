// The autotuner: for one kernel, every legal tile config (ir::candidates) is compiled
// in parallel, then each is run on the GPU on random inputs of the kernel's own shapes,
// its outputs checked against the reference interpreter's (compared on the GPU, see
// device_compare.h) before its time counts, and timed with CUDA events (warm-up, then
// the median of several runs, rotating input sets when they fit in L2).
// Out-of-resources launches score infinity; candidates far slower than the best so
// far stop after one timed run. The finalists (near the best) are timed again in
// interleaved rounds; the fastest, with near-ties broken by candidate order, becomes
// the kernel's config and a record in the tuning database.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "codegen/emit.h"
#include "ir/graph.h"
#include "ir/kernel.h"
#include "ir/tensor.h"
#include "runtime/nvrtc.h"
#include "runtime/tuning_db.h"

namespace kiln::runtime {

struct TuneOptions {
  std::string arch;           // empty: KILN_ARCH, else the GPU's (sm_90a with neither, for dry runs)
  int warmup = 3;             // untimed runs before timing
  int reps = 15;              // timed runs; the median counts
  double early_stop = 3.0;    // a candidate whose first timed run is this much slower than the best stops there
  double max_seconds = 0;     // bound on one kernel's sweep (compiles included); 0: none
  int compile_threads = 0;    // 0: one per hardware thread
};

// One candidate compiled (or not: trial.status CompileFailed and trial.detail say why).
struct CandidateBuild {
  Trial trial;
  std::string source;
  CompileResult binary;
  codegen::LaunchDims launch;
};

// Lists ir::candidates(k), rejects any that ir::validate refuses before compiling,
// and compiles the rest in parallel through the compile cache. Candidates not started
// before `deadline_s` (seconds from now; <= 0: none) are OverBudget. Needs no GPU.
std::vector<CandidateBuild> compile_candidates(const ir::Kernel& k, const std::string& arch, int threads = 0,
                                               double deadline_s = 0);

// A kernel's arguments on one input set and the outputs the reference interpreter
// gives for them: inputs per input argument, outputs per output argument (args order).
struct KernelReference {
  std::vector<HostTensor> inputs;
  std::vector<HostTensor> outputs;
  std::vector<double> output_bounds;  // per output: the rel-L2 bound of its check (< 0: the dtype's)
};
// Evaluates `g` (lowered into `kernels`) once on random inputs (never zeros), through
// runtime::reference_outputs (large matmuls on the GPU when there is one), and
// collects, per kernel, every tensor it reads and writes.
std::vector<KernelReference> kernel_references(const ir::Graph& g, const std::vector<ir::Kernel>& kernels,
                                               uint64_t seed = 1);

struct TuneResult {
  ir::Kernel kernel;  // with the chosen config (the original one when nothing passed)
  TuningKey key;
  std::vector<Trial> trials;  // in candidate order
  int best = -1;              // index into trials; -1 when none passed
  double bytes = 0;           // the sizes of the kernel's arguments
  double wall_s = 0;          // the sweep's wall time, compiles included
};

// Tunes `k` on the GPU (throws "tuning needs a GPU: ..." without one).
TuneResult tune_kernel(const ir::Kernel& k, const KernelReference& reference, const TuneOptions& options = {});
// Lists and compiles every candidate without a GPU; trials hold compile times only.
TuneResult dry_run_kernel(const ir::Kernel& k, const TuneOptions& options = {});

// The database record for a finished sweep (best >= 0).
TuningRecord to_record(const TuneResult& r);

// The bytes a kernel moves at least: the sizes of its arguments.
double kernel_bytes(const ir::Kernel& k);

}  // namespace kiln::runtime
