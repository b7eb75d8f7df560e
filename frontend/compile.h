// Compiling a DSL graph: kiln::compile(graph, options) runs the pass pipeline,
// fuses and tiles, generates CUDA and compiles it with NVRTC (no GPU needed);
// Program::run then runs it on the GPU:
//   kiln::Program program = kiln::compile(g);
//   std::vector<kiln::HostTensor> outs = program.run({xs, rs, ws});
#pragma once
#include "frontend/graph.h"
#include "runtime/executable.h"
#include "runtime/program.h"

namespace kiln {

using Program = runtime::Program;
using CompileOptions = runtime::ProgramOptions;

inline Program compile(const Graph& g, const CompileOptions& options = {}) {
  return runtime::Program::compile(g.ir(), options);
}

}  // namespace kiln
