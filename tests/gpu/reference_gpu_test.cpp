// The GPU reference product (runtime/reference_matmul.h) against the CPU interpreter:
// odd shapes (no multiple of the 64 x 64 x 32 tile), all four transpose combinations,
// broadcast batch dims, f16, bf16 and f32; and reference_outputs handing a large
// product to it while the epilogue stays on the CPU.
//
// Bounds. The GPU sums in fp32, the interpreter in double; both round the sum to the
// dtype. f32: the two differ by the fp32 accumulation error, ~1e-7 relative for these
// K, so 1e-6. f16 and bf16: the rounded results are equal except where the exact sum
// lies within the fp32 error of a rounding boundary, where they differ by one unit in
// the last place (2^-11 or 2^-8 relative); such ties are rare (well under 1% of the
// elements), so the rel L2 stays far below 1e-3 while a wrong element would exceed it.
#include <gtest/gtest.h>

#include "frontend/kiln.h"
#include "gpu_test_util.h"
#include "ir/compare.h"
#include "ir/interpreter.h"
#include "runtime/reference.h"
#include "runtime/reference_matmul.h"

namespace kiln {
namespace {

ir::Graph product(DType t, Shape a, Shape b, bool ta, bool tb) {
  kiln::Graph g("product");
  // One statement each: the graph's inputs come in this order (a call's operands are
  // evaluated in no fixed order).
  auto x = g.input("a", t, a);
  auto y = g.input("b", t, b);
  g.output(kiln::matmul(x, y, ta, tb));
  return g.ir().clone();
}

const ir::Node& only_node(const ir::Graph& g) { return *g.outputs()[0]->producer; }

void expect_matches_interpreter(DType t, Shape a, Shape b, bool ta, bool tb) {
  SCOPED_TRACE(fmt::format("{} [{}] x [{}], transpose_a {}, transpose_b {}", dtype_name(t), fmt::join(a, ","),
                           fmt::join(b, ","), ta, tb));
  ir::Graph g = product(t, a, b, ta, tb);
  std::vector<HostTensor> in = ir::random_inputs(g, 11);
  HostTensor gpu = runtime::gpu_matmul(only_node(g), in[0], in[1]);
  HostTensor cpu = ir::evaluate(g, in)[0];
  ASSERT_EQ(gpu.type, cpu.type);
  Comparison c = compare(gpu, cpu, t == DType::f32 ? 1e-6 : 1e-3);
  EXPECT_TRUE(c.passed) << c.str();
  if (t != DType::f32) {
    EXPECT_LT(c.mismatches, cpu.numel() / 100 + 1) << c.str();
  }
}

TEST(ReferenceGpu, OddShapesEveryTransposeEveryDtype) {
  KILN_REQUIRE_GPU();
  const int64_t m = 65, n = 33, k = 129;
  for (DType t : {DType::f16, DType::bf16, DType::f32})
    for (bool ta : {false, true})
      for (bool tb : {false, true})
        expect_matches_interpreter(t, ta ? Shape{k, m} : Shape{m, k}, tb ? Shape{n, k} : Shape{k, n}, ta, tb);
}

TEST(ReferenceGpu, BroadcastBatchDims) {
  KILN_REQUIRE_GPU();
  for (DType t : {DType::f16, DType::bf16, DType::f32}) {
    expect_matches_interpreter(t, {3, 1, 65, 129}, {2, 129, 33}, false, false);  // out [3, 2, 65, 33]
    expect_matches_interpreter(t, {65, 129}, {4, 129, 33}, false, false);        // A shared by every batch
    expect_matches_interpreter(t, {2, 1, 129, 65}, {1, 3, 33, 129}, true, true);
  }
}

TEST(ReferenceGpu, OneRowOneColumnAndALongK) {
  KILN_REQUIRE_GPU();
  expect_matches_interpreter(DType::f16, {1, 300}, {300, 1}, false, false);
  expect_matches_interpreter(DType::bf16, {70, 5000}, {5000, 40}, false, false);
  expect_matches_interpreter(DType::f32, {70, 5000}, {40, 5000}, false, true);
}

TEST(ReferenceGpu, FpThirtyTwoAccumulationIsFarInsideTheBound) {
  KILN_REQUIRE_GPU();
  // f16 inputs read as f32 (exactly): the GPU's fp32 sum against the interpreter's
  // double sum rounded once to f32, i.e. the product before any 16-bit rounding.
  const int64_t m = 65, n = 33, k = 8191;
  ir::Graph g16 = product(DType::f16, {m, k}, {k, n}, false, false);
  std::vector<HostTensor> in = ir::random_inputs(g16, 7);
  ir::Graph g32 = product(DType::f32, {m, k}, {k, n}, false, false);
  std::vector<HostTensor> in32;
  for (const HostTensor& t : in) in32.push_back(HostTensor(TensorType{DType::f32, t.type.shape}, t.values));
  HostTensor gpu = runtime::gpu_matmul(only_node(g32), in32[0], in32[1]);
  Comparison c = compare(gpu, ir::evaluate(g32, in32)[0], 1e-6);
  EXPECT_TRUE(c.passed) << c.str();
  EXPECT_LT(c.rel_l2, matmul_rel_l2_bound(DType::f32, k) / 10) << c.str();
}

TEST(ReferenceGpu, ReferenceOutputsSendsALargeProductToTheGpu) {
  KILN_REQUIRE_GPU();
  kiln::Graph dsl("large");
  auto a = dsl.input("a", DType::f16, {1024, 257});
  auto b = dsl.input("b", DType::f16, {257, 1024});
  auto bias = dsl.input("bias", DType::f16, {1024});
  dsl.output(kiln::gelu(kiln::matmul(a, b) + bias, "tanh"));
  const ir::Graph& g = dsl.ir();
  std::vector<HostTensor> in = ir::random_inputs(g, 2);
  runtime::ReferenceReport how;
  HostTensor got = runtime::reference_outputs(g, in, &how)[0];
  ASSERT_EQ(how.gpu_nodes.size(), 1u);
  EXPECT_NE(how.gpu_nodes[0].find("matmul"), std::string::npos) << how.gpu_nodes[0];
  Comparison c = compare(got, ir::evaluate(g, in)[0], 1e-3);
  EXPECT_TRUE(c.passed) << c.str();
}

}  // namespace
}  // namespace kiln
