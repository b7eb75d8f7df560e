// Compiling baselines through the compile cache, loading and launching them.
#include "baselines/runner.h"

#include <fmt/format.h>

#include "ir/error.h"
#include "runtime/compile_cache.h"
#include "runtime/device.h"
#include "runtime/timer.h"

namespace kiln::baselines {

CompiledBaseline compile_baseline(const BaselineKernel& k, const std::string& arch) {
  CompiledBaseline c;
  c.kernel = k;
  c.arch = runtime::resolve_arch(runtime::CompileOptions{arch, {}});
  c.binary = runtime::CompileCache::global().compile(k.source, "baseline_" + k.name,
                                                     runtime::CompileOptions{c.arch, {}});
  return c;
}

LoadedBaseline::LoadedBaseline(const CompiledBaseline& compiled) : kernel_(compiled.kernel) {
  runtime::Device::get();  // the primary context must be current before the module loads
  module_ = runtime::Module(compiled.binary.cubin.data(), compiled.binary.cubin.size(), "baseline_" + kernel_.name);
  for (const BaselineLaunch& l : kernel_.launches) functions_.push_back(module_.function(l.entry));
  if (kernel_.workspace_bytes > 0) workspace_ = runtime::DeviceBuffer(kernel_.workspace_bytes);
}

void LoadedBaseline::launch(const std::vector<CUdeviceptr>& inputs, const std::vector<CUdeviceptr>& outputs,
                            int64_t rows, int64_t cols) {
  // cuLaunchKernel takes a pointer to each argument's value.
  std::vector<CUdeviceptr> pointers = inputs;
  pointers.insert(pointers.end(), outputs.begin(), outputs.end());
  pointers.push_back(workspace_.ptr());
  long long rows_arg = rows, cols_arg = cols;
  std::vector<void*> args;
  for (CUdeviceptr& p : pointers) args.push_back(&p);
  args.push_back(&rows_arg);
  args.push_back(&cols_arg);
  for (size_t i = 0; i < functions_.size(); ++i) {
    const BaselineLaunch& l = kernel_.launches[i];
    runtime::launch_kernel(functions_[i], {l.grid.x, l.grid.y, l.grid.z}, {l.block.x, l.block.y, l.block.z},
                           l.shared_bytes, args, l.entry);
  }
}

std::vector<HostTensor> run_baseline(LoadedBaseline& baseline, const std::vector<HostTensor>& inputs,
                                     const std::vector<TensorType>& output_types, int64_t rows, int64_t cols) {
  std::vector<runtime::DeviceBuffer> in_bufs, out_bufs;
  std::vector<CUdeviceptr> ins, outs;
  for (const HostTensor& t : inputs) {
    in_bufs.push_back(runtime::DeviceBuffer::from_host(t));
    ins.push_back(in_bufs.back().ptr());
  }
  for (const TensorType& t : output_types) {
    out_bufs.emplace_back(static_cast<size_t>(t.bytes()));
    out_bufs.back().fill_bytes(0xFF);  // NaN in f16 and f32: an element never written fails the check
    outs.push_back(out_bufs.back().ptr());
  }
  baseline.launch(ins, outs, rows, cols);
  runtime::Device::get().synchronize();
  std::vector<HostTensor> results;
  for (size_t i = 0; i < output_types.size(); ++i) results.push_back(out_bufs[i].to_host(output_types[i]));
  return results;
}

}  // namespace kiln::baselines
