// Program: a graph compiled end to end. compile() runs the pass pipeline on a copy
// of the graph, lowers the fused groups to kernels, generates CUDA for each and
// compiles it through the compile cache. Nothing here needs a GPU: a Program made
// on a build machine holds PTX and cubins; run() needs the GPU (see Executable).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "codegen/emit.h"
#include "ir/graph.h"
#include "ir/kernel.h"
#include "ir/tensor.h"
#include "passes/lower.h"
#include "passes/pass_manager.h"
#include "runtime/device_tensor.h"
#include "runtime/nvrtc.h"

namespace kiln::runtime {

class Executable;

// Graph passes, then fusion and tiling: what compile() runs by default.
inline constexpr std::string_view kCompilePipeline = "decompose,simplify,cse,dce,online-softmax,welford,fuse,tile";

struct ProgramOptions {
  std::string pipeline = std::string(kCompilePipeline);
  std::string arch = {};  // empty: KILN_ARCH, else the GPU's (see default_arch())
  passes::PassManagerOptions passes = {};  // printing, timing, KILN_DUMP_DIR
  // Tune every kernel on the GPU that has no tuning record (all of them with
  // KILN_TUNE=refresh; none with KILN_TUNE=off) and record the results in the tuning
  // database. Needs a GPU: compile() throws without one.
  bool tune = false;
};

struct CompiledKernel {
  ir::Kernel kernel;
  std::string source;           // the generated CUDA C++
  CompileResult binary;         // PTX and cubin
  codegen::LaunchDims launch;
};

class Program {
public:
  // Throws kiln::Error on bad input, a failed pass, a graph that cannot be lowered
  // yet, or a failed NVRTC compile.
  static Program compile(const ir::Graph& graph, const ProgramOptions& options = {});

  Program(Program&&) noexcept;
  Program& operator=(Program&&) noexcept;
  ~Program();

  const ir::Graph& source_graph() const { return *source_; }  // as given
  const ir::Graph& graph() const { return *optimised_; }       // after the pipeline
  const passes::Plan& plan() const { return plan_; }
  const std::vector<CompiledKernel>& kernels() const { return kernels_; }
  const std::string& arch() const { return arch_; }

  // Runs on the GPU: inputs in the order of the graph's inputs; returns the outputs
  // in the order of its outputs. Loads modules and allocates buffers on first use.
  std::vector<HostTensor> run(const std::vector<HostTensor>& inputs);
  // Runs in place on device tensors the caller owns, enqueued on the caller's stream
  // (a CUstream or cudaStream_t; null: the legacy default stream), without copies or
  // a sync: see Executable::run. The tensors are checked before a GPU is needed.
  void run(const std::vector<DeviceTensor>& inputs, const std::vector<DeviceTensor>& outputs,
           CUstream stream = nullptr);
  Executable& executable();  // the device side (created on first use)

private:
  Program() = default;
  void tune_kernels();
  std::unique_ptr<ir::Graph> source_, optimised_;
  passes::Plan plan_;
  std::vector<CompiledKernel> kernels_;
  std::string arch_;
  std::unique_ptr<Executable> executable_;
};

// Writes each kernel's kernel IR, .cu and .ptx to `dir` (created if missing):
// kernels.txt, k0.cu, k0.ptx, ... Throws kiln::Error naming a path it cannot write.
void dump_kernels(const std::vector<CompiledKernel>& kernels, const std::string& dir);

}  // namespace kiln::runtime
