// Shared by the gemm GPU tests: a product's graph, and every candidate config of a
// product's kernel checked against the reference by the tuner.
#pragma once
#include <gtest/gtest.h>

#include "frontend/kiln.h"
#include "ir/graph.h"
#include "runtime/autotuner.h"
#include "runtime/program.h"

namespace kiln::gpu_test {

// c = a @ b with a [m, k] (or [k, m] with transpose_a) and b [k, n] (or [n, k]).
inline kiln::Graph product(DType dt, int64_t m, int64_t n, int64_t k, bool ta, bool tb) {
  kiln::Graph g("gemm");
  auto a = g.input("a", dt, ta ? Shape{k, m} : Shape{m, k});
  auto b = g.input("b", dt, tb ? Shape{n, k} : Shape{k, n});
  g.output(kiln::matmul(a, b, ta, tb).name("c"));
  return g;
}

// Tunes the graph's one kernel with a single timed run a candidate; none may fail its
// check or its compile. Returns the sweep.
inline runtime::TuneResult every_candidate_passes(const ir::Graph& g) {
  runtime::Program p = runtime::Program::compile(g);
  EXPECT_EQ(p.plan().kernels.size(), 1u);
  std::vector<runtime::KernelReference> refs = runtime::kernel_references(p.graph(), p.plan().kernels);
  runtime::TuneOptions options;
  options.warmup = 0;
  options.reps = 1;
  runtime::TuneResult r = runtime::tune_kernel(p.plan().kernels.at(0), refs.at(0), options);
  EXPECT_GE(r.trials.size(), 8u);
  for (const runtime::Trial& t : r.trials)
    EXPECT_TRUE(t.status == runtime::TrialStatus::Ok || t.status == runtime::TrialStatus::StoppedEarly ||
                t.status == runtime::TrialStatus::OutOfResources)
        << t.config.str() << ": " << runtime::trial_status_name(t.status) << " " << t.detail;
  EXPECT_GE(r.best, 0);
  return r;
}

}  // namespace kiln::gpu_test
