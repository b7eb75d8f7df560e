// Runs a graph through all of Kiln's compile path one step at a time, so that a
// failure says where: print -> parse -> print, every pass of the compile pipeline
// (verifying the IR after each), lowering, codegen and launch geometry for every
// kernel, and optionally the NVRTC compile and the reference interpreter. The
// pipeline fuzzer and kiln-difftest (in compile-only mode) share it.
#pragma once
#include <string>

#include "ir/graph.h"

namespace kiln::fuzz {

struct PipelineOptions {
  bool nvrtc = false;         // compile every kernel's CUDA (needs no GPU)
  std::string arch = "sm_90a";
  bool reference = false;     // evaluate the graph on random inputs with the interpreter
};

struct PipelineOutcome {
  enum class Kind {
    Ok,
    Rejected,  // a kiln::Error that names an op of the graph: a stated limitation
    Bug,       // a kiln::Error that names no op, or a print -> parse -> print mismatch
  };
  Kind kind = Kind::Ok;
  std::string step;     // "roundtrip", "passes", "lower", "codegen", "nvrtc", "reference"
  std::string message;  // the error, for Rejected and Bug
  size_t kernels = 0;
};

// Exceptions other than kiln::Error propagate: a valid graph must never raise them.
PipelineOutcome run_pipeline(const ir::Graph& g, const PipelineOptions& options = {});

// Whether `message` names, as a whole word, the text name of an op of `g`, or of
// `also` (the graph after the passes, which may hold ops that decompose made).
bool names_an_op(const std::string& message, const ir::Graph& g, const ir::Graph* also = nullptr);

}  // namespace kiln::fuzz
