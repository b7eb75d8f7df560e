// Compiling a DSL graph: kiln::compile(graph, options) runs the pass pipeline,
// fuses and tiles, generates CUDA and compiles it with NVRTC (no GPU needed);
// Program::run then runs it on the GPU, on host tensors (copied) or in place on
// device memory the caller owns, on the caller's stream:
//   kiln::Program program = kiln::compile(g);
//   std::vector<kiln::HostTensor> outs = program.run({xs, rs, ws});
//   program.run({{x_ptr, kiln::f16, {8192, 4096}}, ...}, {{y_ptr, kiln::f16, {8192, 4096}}}, stream);
#pragma once
#include "frontend/graph.h"
#include "runtime/executable.h"
#include "runtime/program.h"

namespace kiln {

using Program = runtime::Program;
using CompileOptions = runtime::ProgramOptions;
using DeviceTensor = runtime::DeviceTensor;

inline Program compile(const Graph& g, const CompileOptions& options = {}) {
  return runtime::Program::compile(g.ir(), options);
}

}  // namespace kiln
