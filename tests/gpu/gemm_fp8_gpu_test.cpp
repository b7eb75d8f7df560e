// fp8 products on the GPU, against the reference (which widens the fp8 values exactly
// and sums in double): every candidate of a scaled e4m3 product with tails in M, N and
// K, the default config of mixed e4m3 x e5m2 operands, the fallback that widens in its
// operand loads, and the bench case's shape on sampled rows.
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
#include "runtime/reference.h"

namespace kiln {
namespace {

// y = bf16(bf16(a) @ bf16(b)^T * sa * sb), b stored [N, K] unless `transpose_b` is false.
kiln::Graph scaled_product(DType a_type, DType b_type, int64_t m, int64_t n, int64_t k, bool transpose_b = true) {
  kiln::Graph g("fp8");
  auto a = g.input("a", a_type, {m, k});
  auto b = g.input("b", b_type, transpose_b ? Shape{n, k} : Shape{k, n});
  auto sa = g.input("sa", DType::f32, {m, 1});
  auto sb = g.input("sb", DType::f32, {1, n});
  auto p = kiln::matmul(kiln::cast(a, DType::bf16), kiln::cast(b, DType::bf16), false, transpose_b);
  g.output(kiln::cast(kiln::cast(p, DType::f32) * sa * sb, DType::bf16).name("y"));
  return g;
}

void expect_matches_reference(const kiln::Graph& g, runtime::Program& p, uint64_t seed) {
  std::vector<HostTensor> inputs = ir::random_inputs(g.ir(), seed);
  Comparison c = compare(p.run(inputs).at(0), ir::evaluate(g.ir(), inputs).at(0),
                         rel_l2_bound_for(*g.ir().outputs()[0]));
  EXPECT_TRUE(c.passed) << c.str();
}

// 200 rows (a partial 128-row tile), 328 columns (partial 256 and 64 boxes), K of 272
// (two full 128-deep steps and a tail of 16).
TEST(GemmFp8Gpu, EveryCandidateOfAScaledE4m3ProductWithTails) {
  KILN_REQUIRE_GPU();
  const runtime::TuneResult r =
      gpu_test::every_candidate_passes(scaled_product(DType::f8e4m3, DType::f8e4m3, 200, 328, 272).ir());
  EXPECT_GE(std::count_if(r.trials.begin(), r.trials.end(),
                          [](const runtime::Trial& t) {
                            return t.config.schedule == ir::kWgmma && t.status == runtime::TrialStatus::Ok;
                          }),
            12);
}

TEST(GemmFp8Gpu, MixedE4m3AndE5m2OnTheDefaultConfig) {
  KILN_REQUIRE_GPU();
  // 256 tiles of 128 x 128 (the 128 x 256 tiles would leave SMs idle), K of 1040: a tail of 16.
  const kiln::Graph g = scaled_product(DType::f8e4m3, DType::f8e5m2, 2000, 2048, 1040);
  runtime::Program p = runtime::Program::compile(g.ir());
  ASSERT_EQ(p.plan().kernels.size(), 1u);
  const ir::Kernel& k = p.plan().kernels[0];
  ASSERT_EQ(k.config.schedule, ir::kWgmma) << ir::print(k);
  ASSERT_TRUE(ir::gemm_fp8_products(k)) << ir::print(k);
  expect_matches_reference(g, p, 11);
}

// B stored [K, N] (no fp8 wgmma: its tiles would be N-major) and K of 1001 (rows TMA
// cannot address): mma_sync widens each loaded element; every candidate passes.
TEST(GemmFp8Gpu, OtherLayoutsWidenInTheOperandLoads) {
  KILN_REQUIRE_GPU();
  for (bool tb : {false, true}) {
    SCOPED_TRACE(fmt::format("transpose_b {}", tb));
    const kiln::Graph g = scaled_product(DType::f8e5m2, DType::f8e4m3, 136, 200, tb ? 1001 : 264, tb);
    const runtime::TuneResult r = gpu_test::every_candidate_passes(g.ir());
    EXPECT_TRUE(std::none_of(r.trials.begin(), r.trials.end(),
                             [](const runtime::Trial& t) { return t.config.schedule == ir::kWgmma; }));
  }
}

// The bench case's product on the default config (4 waves of 128 x 256 tiles, 32 K steps
// each): the whole output against the reference, whose product runs on the GPU in fp32.
TEST(GemmFp8Gpu, TheBenchShapeOnTheDefaultConfig) {
  KILN_REQUIRE_GPU();
  const kiln::Graph g = scaled_product(DType::f8e4m3, DType::f8e4m3, 4096, 4096, 4096);
  runtime::Program p = runtime::Program::compile(g.ir());
  ASSERT_EQ(p.plan().kernels.at(0).config.schedule, ir::kWgmma);
  std::vector<HostTensor> inputs = ir::random_inputs(g.ir(), 5);
  Comparison c = compare(p.run(inputs).at(0), runtime::reference_outputs(g.ir(), inputs).at(0),
                         rel_l2_bound_for(*g.ir().outputs()[0]));
  EXPECT_TRUE(c.passed) << c.str();
}

}  // namespace
}  // namespace kiln
