// The wgmma schedule on the GPU: every wgmma candidate of products with tails in M, N
// and K (aligned rows, so that TMA loads them) in all four transposes, unaligned rows
// through their padded copies, split K (every candidate, and the same bits every run),
// batched products with a broadcast weight, fused epilogues with several outputs on the
// default config and on every candidate (the hand-off's epilogue warps among them), each
// against the reference.
#include <gtest/gtest.h>

#include <algorithm>

#include "codegen/emit.h"
#include "frontend/kiln.h"
#include "gemm_test_util.h"
#include "gpu_test_util.h"
#include "ir/compare.h"
#include "ir/interpreter.h"
#include "ir/printer.h"
#include "runtime/program.h"

namespace kiln {
namespace {

// wgmma candidates that passed their check (timed in full, or stopped after one run
// far behind the best: under a sanitizer, timings are anyone's).
int wgmma_trials(const runtime::TuneResult& r) {
  return static_cast<int>(std::count_if(r.trials.begin(), r.trials.end(), [](const runtime::Trial& t) {
    return t.config.schedule == ir::kWgmma &&
           (t.status == runtime::TrialStatus::Ok || t.status == runtime::TrialStatus::StoppedEarly);
  }));
}

using gpu_test::product;

TEST(GemmWgmmaGpu, EveryCandidateWithTailsInEveryTranspose) {
  KILN_REQUIRE_GPU();
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      SCOPED_TRACE(fmt::format("transpose_a {} transpose_b {}", ta, tb));
      // 200 rows (a partial 128-row tile), 328 columns (partial 256 and 64 boxes), K of
      // 136 (two full 64-deep steps and a tail of 8).
      const runtime::TuneResult r = gpu_test::every_candidate_passes(product(DType::f16, 200, 328, 136, ta, tb).ir());
      EXPECT_GE(wgmma_trials(r), 12);
    }
}

// Several tiles a block and 24 K steps a tile: consumers taking turns go round the
// stages many times.
TEST(GemmWgmmaGpu, EveryCandidateOfAProductOfSeveralTilesABlock) {
  KILN_REQUIRE_GPU();
  EXPECT_GE(wgmma_trials(gpu_test::every_candidate_passes(product(DType::bf16, 2000, 2056, 1536, true, false).ir())), 12);
}

TEST(GemmWgmmaGpu, EveryCandidateOfASplitKProduct) {
  KILN_REQUIRE_GPU();
  EXPECT_GE(wgmma_trials(gpu_test::every_candidate_passes(product(DType::f16, 200, 328, 8200, false, true).ir())), 12);
}

TEST(GemmWgmmaGpu, SplitKGivesTheSameBitsEveryRun) {
  KILN_REQUIRE_GPU();
  kiln::Graph g = product(DType::bf16, 1024, 1024, 16384, false, false);
  runtime::Program p = runtime::Program::compile(g.ir());
  const ir::TileConfig& c = p.plan().kernels[0].config;
  ASSERT_EQ(c.schedule, ir::kWgmma) << c.str();
  ASSERT_GT(c.split_k, 1) << c.str();
  std::vector<HostTensor> inputs = ir::random_inputs(g.ir(), 3);
  HostTensor first = p.run(inputs)[0];
  for (int run = 0; run < 3; ++run) EXPECT_EQ(p.run(inputs)[0].values, first.values);
  Comparison cmp = compare(first, ir::evaluate(g.ir(), inputs)[0]);
  EXPECT_TRUE(cmp.passed) << cmp.str();
}

TEST(GemmWgmmaGpu, Bf16BatchedWithABroadcastWeight) {
  KILN_REQUIRE_GPU();
  kiln::Graph g("batched");
  auto x = g.input("x", DType::bf16, {3, 2, 136, 192});
  auto w = g.input("w", DType::bf16, {192, 264});
  g.output(kiln::matmul(x, w).name("y"));
  EXPECT_GE(wgmma_trials(gpu_test::every_candidate_passes(g.ir())), 12);
}

// Rows whose length is not a multiple of 8 reach TMA through a copy into padded rows, on
// A and on B, for row lengths of every remainder mod 8 but 0 (odd lengths start rows at
// every offset from a 16-byte boundary); outputs of 1501 columns go element by element,
// through the strip's column readout.
TEST(GemmWgmmaGpu, UnalignedRowsOfEveryPhaseAreCopiedIntoPaddedRows) {
  KILN_REQUIRE_GPU();
  for (int64_t k : {129, 130, 132, 134, 263})
    for (bool tb : {false, true}) {
      SCOPED_TRACE(fmt::format("K {} transpose_b {}", k, tb));
      kiln::Graph g = product(DType::bf16, 1500, 1501, k, false, tb);  // 144 tiles: the wgmma default
      runtime::Program p = runtime::Program::compile(g.ir());
      const ir::Kernel& kernel = p.plan().kernels.at(0);
      ASSERT_EQ(kernel.config.schedule, ir::kWgmma) << ir::print(kernel);
      EXPECT_FALSE(codegen::launch_dims(kernel).staged.empty()) << ir::print(kernel);
      std::vector<HostTensor> inputs = ir::random_inputs(g.ir(), 7);
      Comparison c = compare(p.run(inputs).at(0), ir::evaluate(g.ir(), inputs).at(0),
                             rel_l2_bound_for(*g.ir().outputs()[0]));
      EXPECT_TRUE(c.passed) << c.str();
    }
}

TEST(GemmWgmmaGpu, FusedEpilogueWithSeveralOutputsOnTheDefaultConfig) {
  KILN_REQUIRE_GPU();
  kiln::Graph g("mlp");
  auto x = g.input("x", DType::f16, {2048, 1024});
  auto w = g.input("w", DType::f16, {4096, 1024});
  auto bias = g.input("bias", DType::f16, {4096});
  auto h = (kiln::matmul(x, w, false, true) + bias).name("h");
  g.output(kiln::gelu(h, "tanh").name("y"));
  g.output(h);
  runtime::Program p = runtime::Program::compile(g.ir());
  ASSERT_EQ(p.plan().kernels.size(), 1u);
  ASSERT_EQ(p.plan().kernels[0].config.schedule, ir::kWgmma) << ir::print(p.plan().kernels[0]);
  std::vector<HostTensor> inputs = ir::random_inputs(g.ir(), 5);
  std::vector<HostTensor> want = ir::evaluate(g.ir(), inputs);
  std::vector<HostTensor> got = p.run(inputs);
  ASSERT_EQ(got.size(), 2u);
  for (size_t i = 0; i < got.size(); ++i) {
    Comparison c = compare(got[i], want[i], rel_l2_bound_for(*g.ir().outputs()[i]));
    EXPECT_TRUE(c.passed) << "output " << i << ": " << c.str();
  }
}

// The hand-off's epilogue warps run the whole fused body: a bias, a GELU and the
// pre-activation as a second output, on tiles cut by M and N, in f16 and bf16.
TEST(GemmWgmmaGpu, EveryCandidateOfAFusedEpilogueWithTails) {
  KILN_REQUIRE_GPU();
  for (DType dt : {DType::f16, DType::bf16}) {
    SCOPED_TRACE(dtype_name(dt));
    kiln::Graph g("mlp");
    auto x = g.input("x", dt, {1000, 264});
    auto w = g.input("w", dt, {584, 264});
    auto bias = g.input("bias", dt, {584});
    auto h = (kiln::matmul(x, w, false, true) + bias).name("h");
    g.output(kiln::gelu(h, "tanh").name("y"));
    g.output(h);
    const runtime::TuneResult r = gpu_test::every_candidate_passes(g.ir());
    EXPECT_GE(wgmma_trials(r), 12);
    EXPECT_GE(std::count_if(r.trials.begin(), r.trials.end(),
                            [](const runtime::Trial& t) {
                              return t.config.handoff == 1 && (t.status == runtime::TrialStatus::Ok ||
                                                               t.status == runtime::TrialStatus::StoppedEarly);
                            }),
              4);
  }
}

}  // namespace
}  // namespace kiln
