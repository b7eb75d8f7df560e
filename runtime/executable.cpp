#include "runtime/executable.h"

#include <fmt/format.h>

#include <iostream>

#include "ir/error.h"
#include "runtime/device.h"
#include "runtime/knobs.h"
#include "runtime/timer.h"

namespace kiln::runtime {

Executable::Executable(const passes::Plan& plan, const std::vector<CompiledKernel>& kernels) : plan_(plan) {
  Device::get();  // throws "no GPU: ..." before anything else
  for (const CompiledKernel& ck : kernels) {
    if (ck.binary.cubin.empty())
      throw Error(fmt::format("kernel {} has no cubin (compiled for a virtual arch?)", ck.kernel.name));
    LoadedKernel lk;
    lk.name = ck.kernel.name;
    lk.module = Module(ck.binary.cubin.data(), ck.binary.cubin.size(), ck.kernel.name);
    lk.function = lk.module.function(ck.kernel.name);
    prefer_shared_blocks(lk.function, ck.launch.blocks_per_sm);
    lk.launch = ck.launch;
    for (const ir::KernelArg& a : ck.kernel.args) {
      int b = plan_.buffer_of(a.value_id);
      if (b < 0) throw Error(fmt::format("kernel {}: argument %{} has no buffer in the plan", lk.name, a.name));
      lk.arg_buffers.push_back(b);
    }
    kernels_.push_back(std::move(lk));
  }
  intermediates_.resize(plan_.buffers.size());
  bound_.assign(plan_.buffers.size(), 0);
  for (size_t i = 0; i < plan_.buffers.size(); ++i) {
    if (plan_.buffers[i].role != passes::BufferRole::Intermediate) continue;
    intermediates_[i] = DeviceBuffer(static_cast<size_t>(plan_.buffers[i].type.bytes()));
    bound_[i] = intermediates_[i].ptr();
  }
}

void Executable::check_buffer(const DeviceBuffer* b, int index, const char* what) const {
  const passes::Buffer& buf = plan_.buffers[index];
  if (!b) throw Error(fmt::format("{} %{} is not bound to a buffer", what, buf.name));
  if (b->bytes() < static_cast<size_t>(buf.type.bytes()))
    throw Error(fmt::format("{} %{} ({}) needs {} bytes; its buffer has {}", what, buf.name, buf.type.str(),
                            buf.type.bytes(), b->bytes()));
}

void Executable::bind(const std::vector<const DeviceBuffer*>& inputs, const std::vector<DeviceBuffer*>& outputs) {
  if (inputs.size() != plan_.inputs.size() || outputs.size() != plan_.outputs.size())
    throw Error(fmt::format("the graph takes {} inputs and {} outputs; {} and {} buffers were given",
                            plan_.inputs.size(), plan_.outputs.size(), inputs.size(), outputs.size()));
  std::vector<CUdeviceptr> in_ptrs, out_ptrs;
  for (size_t i = 0; i < inputs.size(); ++i) {
    check_buffer(inputs[i], plan_.inputs[i], "input");
    in_ptrs.push_back(inputs[i]->ptr());
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    check_buffer(outputs[i], plan_.outputs[i], "output");
    out_ptrs.push_back(outputs[i]->ptr());
  }
  bind_pointers(in_ptrs, out_ptrs);
}

void Executable::bind_pointers(const std::vector<CUdeviceptr>& inputs, const std::vector<CUdeviceptr>& outputs) {
  for (size_t i = 0; i < inputs.size(); ++i) bound_[plan_.inputs[i]] = inputs[i];
  output_copies_.clear();
  std::vector<bool> written(plan_.buffers.size(), false);
  for (size_t i = 0; i < outputs.size(); ++i) {
    int b = plan_.outputs[i];
    if (plan_.buffers[b].role == passes::BufferRole::Input || written[b]) {
      output_copies_.emplace_back(outputs[i], b);
      continue;
    }
    bound_[b] = outputs[i];
    written[b] = true;
  }
  // Tensor maps hold the pointers they describe: encoded here, once per binding.
  for (LoadedKernel& k : kernels_) {
    std::vector<CUdeviceptr> ptrs;
    for (int b : k.arg_buffers) ptrs.push_back(bound_[b]);
    k.args = std::make_unique<LaunchArgs>(k.launch, ptrs, k.name);
  }
}

void Executable::run(const std::vector<DeviceTensor>& inputs, const std::vector<DeviceTensor>& outputs,
                     CUstream stream) {
  check_device_tensors(plan_, inputs, outputs);
  Device::get();          // the primary context current on this thread, which the pointer queries need
  const int device = 0;   // Device::get() is device 0
  auto check_device = [&](const DeviceTensor& t, const std::string& what) {
    std::string why;
    int ordinal = cu::pointer_device_ordinal(t.data, &why);
    if (ordinal < 0)
      throw Error(fmt::format("{}: 0x{:x} is not CUDA device memory ({}); Kiln runs on device pointers", what, t.data,
                              why));
    if (ordinal != device)
      throw Error(fmt::format("{}: the tensor is on CUDA device {}; Kiln runs on device {}", what, ordinal, device));
  };
  std::vector<CUdeviceptr> in_ptrs, out_ptrs;
  for (size_t i = 0; i < inputs.size(); ++i) {
    check_device(inputs[i], fmt::format("input {} %{}", i, plan_.buffers[plan_.inputs[i]].name));
    in_ptrs.push_back(inputs[i].data);
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    check_device(outputs[i], fmt::format("output {} %{}", i, plan_.buffers[plan_.outputs[i]].name));
    out_ptrs.push_back(outputs[i].data);
  }
  bind_pointers(in_ptrs, out_ptrs);
  launch(stream);
}

void Executable::launch(CUstream stream) {
  const bool trace = knobs::debug_level() >= 1;
  for (const LoadedKernel& k : kernels_) {
    if (!k.args) throw Error(fmt::format("kernel {}: launched before its buffers were bound", k.name));
    const std::vector<void*>& args = k.args->pointers();
    k.args->stage(stream);
    Dim3 grid{k.launch.grid[0], k.launch.grid[1], k.launch.grid[2]};
    Dim3 block{k.launch.block[0], k.launch.block[1], k.launch.block[2]};
    if (!trace) {
      launch_kernel(k.function, grid, block, k.launch.shared_bytes, args, k.name, stream);
      continue;
    }
    Event start, stop;
    start.record(stream);
    launch_kernel(k.function, grid, block, k.launch.shared_bytes, args, k.name, stream);
    stop.record(stream);
    stop.synchronize();
    std::cerr << fmt::format("kiln: launched {} grid ({},{},{}) block ({},{},{}) in {:.3f} ms\n", k.name, grid.x,
                             grid.y, grid.z, block.x, block.y, block.z, stop.elapsed_ms_since(start));
  }
  for (const auto& [dst, src] : output_copies_)
    cu::memcpy_dtod_async(dst, bound_[src], static_cast<size_t>(plan_.buffers[src].type.bytes()), stream);
}

void Executable::run(const std::vector<const DeviceBuffer*>& inputs, const std::vector<DeviceBuffer*>& outputs) {
  bind(inputs, outputs);
  launch();
  Device::get().synchronize();
}

std::vector<HostTensor> Executable::run(const std::vector<HostTensor>& inputs) {
  if (inputs.size() != plan_.inputs.size())
    throw Error(fmt::format("the graph takes {} inputs; {} were given", plan_.inputs.size(), inputs.size()));
  std::vector<DeviceBuffer> in_bufs, out_bufs;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const passes::Buffer& b = plan_.buffers[plan_.inputs[i]];
    if (inputs[i].type != b.type)
      throw Error(fmt::format("input {} '%{}' expects {}, got {}", i, b.name, b.type.str(), inputs[i].type.str()));
    in_bufs.push_back(DeviceBuffer::from_host(inputs[i]));
  }
  for (int b : plan_.outputs) {
    out_bufs.emplace_back(static_cast<size_t>(plan_.buffers[b].type.bytes()));
    out_bufs.back().fill_bytes(0xFF);  // poison: an element no kernel writes reads as NaN
  }
  std::vector<const DeviceBuffer*> ins;
  std::vector<DeviceBuffer*> outs;
  for (auto& b : in_bufs) ins.push_back(&b);
  for (auto& b : out_bufs) outs.push_back(&b);
  run(ins, outs);
  std::vector<HostTensor> results;
  for (size_t i = 0; i < out_bufs.size(); ++i)
    results.push_back(out_bufs[i].to_host(plan_.buffers[plan_.outputs[i]].type));
  return results;
}

int64_t Executable::min_bytes_moved() const {
  int64_t total = 0;
  for (int b : plan_.inputs) total += plan_.buffers[b].type.bytes();
  for (int b : plan_.outputs) total += plan_.buffers[b].type.bytes();
  return total;
}

}  // namespace kiln::runtime
