// libFuzzer target for the whole compile path: the input's bytes decode into a random
// valid graph (random_graph.h), which goes through every pass, lowering and codegen
// (pipeline_check.h); one input in 64 is also compiled by NVRTC, and one in 4 is
// evaluated by the reference interpreter. A kiln::Error is fine only when it names an
// op of the graph (a stated limit); any other error, exception or crash is a bug.
//   KILN_FUZZ_NVRTC_EVERY=N compiles one input in N instead (0: never).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "ir/printer.h"
#include "tests/fuzz/decisions.h"
#include "tests/fuzz/pipeline_check.h"
#include "tests/fuzz/random_graph.h"

namespace {

uint64_t fnv1a(const uint8_t* data, size_t size) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < size; ++i) h = (h ^ data[i]) * 1099511628211ull;
  return h;
}

uint64_t nvrtc_every = 64;

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  setenv("KILN_TUNE", "off", 1);  // no tuning database is read: the run depends on the input alone
  if (const char* every = std::getenv("KILN_FUZZ_NVRTC_EVERY")) nvrtc_every = std::strtoull(every, nullptr, 10);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  kiln::fuzz::Decisions d(data, size);
  kiln::ir::Graph g = kiln::fuzz::random_graph(d);
  const uint64_t h = fnv1a(data, size);
  kiln::fuzz::PipelineOptions options;
  options.nvrtc = nvrtc_every > 0 && h % nvrtc_every == 0;
  options.reference = (h >> 16) % 4 == 0;
  kiln::fuzz::PipelineOutcome r = kiln::fuzz::run_pipeline(g, options);
  if (r.kind == kiln::fuzz::PipelineOutcome::Kind::Bug) {
    std::fprintf(stderr, "pipeline fuzzer: %s: %s\n--- graph ---\n%s\n", r.step.c_str(), r.message.c_str(),
                 kiln::ir::print(g).c_str());
    std::abort();
  }
  return 0;
}
