// Executable: a Program's kernels loaded on the GPU with their buffers. The
// intermediates are allocated once; graph inputs and outputs are bound per run,
// either to caller-owned device memory or to buffers it owns for host data.
#pragma once
#include <memory>
#include <vector>

#include "ir/tensor.h"
#include "passes/lower.h"
#include "runtime/cuda_driver.h"
#include "runtime/device_buffer.h"
#include "runtime/device_tensor.h"
#include "runtime/launch_args.h"
#include "runtime/program.h"

namespace kiln::runtime {

class Executable {
public:
  // Loads every kernel's cubin (needs a GPU) and allocates the intermediates.
  Executable(const passes::Plan& plan, const std::vector<CompiledKernel>& kernels);

  // Copies the inputs to the device, runs, and copies the outputs back.
  std::vector<HostTensor> run(const std::vector<HostTensor>& inputs);
  // Runs on caller-owned buffers (graph inputs, then graph outputs, in graph order;
  // each at least as large as its tensor). Synchronises before returning.
  void run(const std::vector<const DeviceBuffer*>& inputs, const std::vector<DeviceBuffer*>& outputs);

  // Runs in place on tensors the caller owns (graph inputs, then graph outputs, in
  // graph order), enqueued on `stream` (a CUstream or cudaStream_t of Kiln's device,
  // device 0's primary context; null: the legacy default stream); returns without
  // waiting. Each tensor is checked (check_device_tensor) and must lie on that device.
  // Runs share the intermediates: enqueue them in order (one stream, or streams the
  // caller orders), from one thread at a time.
  void run(const std::vector<DeviceTensor>& inputs, const std::vector<DeviceTensor>& outputs,
           CUstream stream = nullptr);

  // For benchmarks: bind once, then launch() enqueues every kernel without syncing.
  void bind(const std::vector<const DeviceBuffer*>& inputs, const std::vector<DeviceBuffer*>& outputs);
  void launch(CUstream stream = nullptr);

  const passes::Plan& plan() const { return plan_; }
  // The bytes a run must move at least: every graph input read once, every output written once.
  int64_t min_bytes_moved() const;

private:
  struct LoadedKernel {
    std::string name;
    Module module;
    CUfunction function = nullptr;
    codegen::LaunchDims launch;
    std::vector<int> arg_buffers;  // per kernel argument: an index into plan_.buffers
    std::unique_ptr<LaunchArgs> args;  // for the buffers bound last
  };
  void check_buffer(const DeviceBuffer* b, int buffer_index, const char* what) const;
  // Points the graph's inputs and outputs at these addresses (sizes already checked).
  void bind_pointers(const std::vector<CUdeviceptr>& inputs, const std::vector<CUdeviceptr>& outputs);

  passes::Plan plan_;
  std::vector<LoadedKernel> kernels_;
  std::vector<DeviceBuffer> intermediates_;  // indexed like plan_.buffers (empty for inputs/outputs)
  std::vector<CUdeviceptr> bound_;           // per plan buffer: the pointer kernels use
  // Graph outputs that name a buffer already bound (an input, or a repeated output):
  // copied after the kernels run. (destination, source) pairs.
  std::vector<std::pair<CUdeviceptr, int>> output_copies_;
};

}  // namespace kiln::runtime
