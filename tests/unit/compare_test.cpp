// Comparisons against the reference: verdicts by dtype, NaN handling, and the
// byte-wise range form (split across threads by the autotuner) agreeing with the whole.
#include <gtest/gtest.h>

#include <cmath>

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

}  // namespace
}  // namespace kiln
