// Comparisons against the reference: verdicts by dtype, NaN handling, and the
// byte-wise range form (split across threads by the autotuner) agreeing with the whole.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "frontend/kiln.h"
#include "ir/compare.h"

namespace kiln {
namespace {

TEST(Compare, F16WithinBoundPassesAndUnexpectedNanFails) {
  HostTensor want = random_tensor({DType::f16, {1001}}, 1);
  HostTensor got = want;
  got.values[3] = round_to(DType::f16, got.values[3] * 1.001);
  EXPECT_TRUE(compare(got, want).passed);
  got.values[7] = std::nan("");
  Comparison c = compare(got, want);
  EXPECT_FALSE(c.passed);
  EXPECT_EQ(c.bad_nonfinite, 1);
}

TEST(Compare, F32BoundIsTight) {
  HostTensor want = random_tensor({DType::f32, {100}}, 2);
  HostTensor got = want;
  for (double& v : got.values) v = round_to(DType::f32, v * (1 + 1e-4));
  EXPECT_FALSE(compare(got, want).passed);  // 1e-4 relative is over f32's 1e-5
}

TEST(Compare, IntegersMustBeExact) {
  HostTensor want = random_tensor({DType::i32, {50}}, 3);
  HostTensor got = want;
  got.values[10] += 1;
  EXPECT_FALSE(compare(got, want).passed);
}

// A passing float output with rounded elements reads as passing: its differing elements
// are "not bit-equal"; an integer's are "mismatched".
TEST(Compare, TheTextCallsAFloatsDifferingElementsNotBitEqual) {
  HostTensor want = random_tensor({DType::f16, {100}}, 5);
  HostTensor got = want;
  got.values[3] = round_to(DType::f16, got.values[3] * 1.01);
  const std::string f = compare(got, want).str();
  EXPECT_NE(f.find("not bit-equal 1, bad nan/inf 0: ok"), std::string::npos) << f;
  HostTensor iwant = random_tensor({DType::i32, {50}}, 3), igot = iwant;
  igot.values[10] += 1;
  const std::string i = compare(igot, iwant).str();
  EXPECT_NE(i.find("mismatched 1, bad nan/inf 0: FAILED"), std::string::npos) << i;
}

TEST(Compare, RangesOverBytesMergeToTheWholeComparison) {
  for (DType t : {DType::f32, DType::f16, DType::bf16, DType::i32}) {
    HostTensor want = random_tensor({t, {12345}}, 4);
    HostTensor got = random_tensor({t, {12345}}, 5);  // different values: a failing check
    std::vector<std::byte> bytes = got.to_bytes();
    CompareSums sums;
    for (size_t b = 0; b < 12345; b += 1000)
      sums.merge(compare_range(bytes.data(), want, b, std::min<size_t>(12345, b + 1000)));
    Comparison split = finish_comparison(sums, want), whole = compare(got, want);
    EXPECT_NEAR(split.rel_l2, whole.rel_l2, 1e-12 * std::max(1.0, whole.rel_l2));
    EXPECT_EQ(split.max_abs, whole.max_abs);
    EXPECT_EQ(split.mismatches, whole.mismatches);
    EXPECT_EQ(split.passed, whole.passed);
    EXPECT_FALSE(whole.passed);
  }
}

TEST(Compare, MatmulBoundGrowsWithKForF32Only) {
  EXPECT_EQ(matmul_rel_l2_bound(DType::f16, 1 << 20), 1e-2);
  EXPECT_EQ(matmul_rel_l2_bound(DType::bf16, 8192), 1e-2);
  EXPECT_EQ(matmul_rel_l2_bound(DType::f32, 64), 1e-5);     // short products keep f32's bound
  EXPECT_EQ(matmul_rel_l2_bound(DType::f32, 4096), 1e-5);
  EXPECT_DOUBLE_EQ(matmul_rel_l2_bound(DType::f32, 16384), 2e-5);  // sqrt(16384 / 4096) = 2
  EXPECT_DOUBLE_EQ(matmul_rel_l2_bound(DType::f32, 8192), 1e-5 * std::sqrt(2.0));
}

TEST(Compare, BoundForAValueFollowsTheLongestMatmulUpstream) {
  kiln::Graph g("bounds");
  auto a = g.input("a", DType::f32, {8, 16384});
  auto b = g.input("b", DType::f32, {16384, 4});
  auto c = g.input("c", DType::f32, {4, 64});
  auto x = g.input("x", DType::f32, {8, 64});
  auto long_k = kiln::matmul(a, b);                // K = 16384
  auto epilogue = kiln::gelu(long_k + 1.0, "tanh");  // downstream of it
  auto short_k = kiln::matmul(epilogue, c);        // K = 4, but depends on the long one
  g.output(epilogue);
  g.output(short_k);
  g.output(kiln::exp(x));
  const ir::Graph& ir = g.ir();
  EXPECT_DOUBLE_EQ(rel_l2_bound_for(*ir.outputs()[0]), 2e-5);
  EXPECT_DOUBLE_EQ(rel_l2_bound_for(*ir.outputs()[1]), 2e-5);
  EXPECT_EQ(rel_l2_bound_for(*ir.outputs()[2]), 1e-5);  // no matmul upstream
  EXPECT_EQ(rel_l2_bound_for(*ir.inputs()[0]), 1e-5);
}

TEST(Compare, BoundReadsKFromATransposedOperand) {
  kiln::Graph g("transposed");
  auto a = g.input("a", DType::f32, {32768, 2});  // [K, M] with transpose_a
  auto b = g.input("b", DType::f32, {3, 32768});  // [N, K] with transpose_b
  g.output(kiln::matmul(a, b, true, true));
  EXPECT_DOUBLE_EQ(rel_l2_bound_for(*g.ir().outputs()[0]), 1e-5 * std::sqrt(8.0));
}

}  // namespace
}  // namespace kiln
