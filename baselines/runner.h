// Compiling and running hand-written baselines. Compiling goes through the compile
// cache (CompileCache::global()) with the same NVRTC flags as generated kernels and
// needs no GPU; loading and launching need one.
#pragma once
#include <cuda.h>

#include <string>
#include <vector>

#include "baselines/baseline.h"
#include "ir/shape.h"
#include "ir/tensor.h"
#include "runtime/cuda_driver.h"
#include "runtime/device_buffer.h"
#include "runtime/nvrtc.h"

namespace kiln::baselines {

struct CompiledBaseline {
  BaselineKernel kernel;
  runtime::CompileResult binary;
  std::string arch;
};

// Compiles `k` for `arch` (empty: KILN_ARCH, else the GPU's). Throws kiln::Error with
// NVRTC's log when it does not compile.
CompiledBaseline compile_baseline(const BaselineKernel& k, const std::string& arch = "");

// A compiled baseline loaded on the GPU, with its workspace.
class LoadedBaseline {
public:
  explicit LoadedBaseline(const CompiledBaseline& compiled);

  // Enqueues every launch on the null stream (no synchronisation): the inputs, then
  // the outputs, as device pointers in the order of the case's graph.
  void launch(const std::vector<CUdeviceptr>& inputs, const std::vector<CUdeviceptr>& outputs, int64_t rows,
              int64_t cols);

private:
  BaselineKernel kernel_;
  runtime::Module module_;
  std::vector<CUfunction> functions_;
  runtime::DeviceBuffer workspace_;
};

// For tests: uploads `inputs`, runs once on outputs poisoned with NaNs, and reads
// back outputs of `output_types`.
std::vector<HostTensor> run_baseline(LoadedBaseline& baseline, const std::vector<HostTensor>& inputs,
                                     const std::vector<TensorType>& output_types, int64_t rows, int64_t cols);

}  // namespace kiln::baselines
