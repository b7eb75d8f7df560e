// kiln-difftest's nudges: the nudged graph moves each computed float by about one unit
// in its last place and leaves the rest alone, and the elements of an output that hang
// on such a bit (a compare right after rounding, a cancellation) are told apart from
// those that do not.
#include <gtest/gtest.h>

#include <cmath>

#include "ir/interpreter.h"
#include "ir/parser.h"
#include "tests/fuzz/nudge.h"

namespace kiln {
namespace {

TEST(Nudge, MovesComputedFloatsByAboutOneUlp) {
  ir::Graph g = ir::parse(R"(func @f(%x: f16[64], %i: i32[64]) -> (f16[64], i32[64], f16[64]) {
  %e = exp %x : f16[64]
  %j = add %i, %i : i32[64]
  return %e, %j, %x
}
)",
                          "nudge_test");
  const std::vector<HostTensor> inputs = ir::random_inputs(g, 3);
  const fuzz::Nudged n = fuzz::nudged(g, 1);
  std::vector<HostTensor> all = inputs;
  all.insert(all.end(), n.factors.begin(), n.factors.end());
  const std::vector<HostTensor> want = ir::evaluate(g, inputs), got = ir::evaluate(n.graph, all);
  int moved = 0;
  for (size_t e = 0; e < 64; ++e) {
    const double a = want[0].values[e], b = got[0].values[e];
    EXPECT_LE(std::fabs(a - b), std::fabs(a) * 3.0 / 1024) << e;  // at most a few f16 ulps
    moved += a != b;
    EXPECT_EQ(want[1].values[e], got[1].values[e]);  // integers are exact
    EXPECT_EQ(want[2].values[e], got[2].values[e]);  // inputs are given, not computed
  }
  EXPECT_GT(moved, 32);
}

TEST(Nudge, FlagsOnlyTheElementsThatHangOnALastBit) {
  // x - x rounded: exactly 0 however x rounds, so stable; (x * 3 rounded) == x * 3 in
  // double is true or false depending on the last bit, so unstable wherever it is true.
  ir::Graph g = ir::parse(R"(func @f(%x: f16[256]) -> (f16[256], i1[256]) {
  %e = exp %x : f16[256]
  %d = sub %e, %e : f16[256]
  %c = gt %e, %x : i1[256]
  return %d, %c
}
)",
                          "nudge_test");
  const std::vector<HostTensor> inputs = ir::random_inputs(g, 5);
  const std::vector<HostTensor> want = ir::evaluate(g, inputs);
  auto stable = fuzz::stable_elements(g, inputs, want, {1e-2, 1e-4});
  for (bool s : stable[0]) EXPECT_TRUE(s);
  for (bool s : stable[1]) EXPECT_TRUE(s);  // exp(x) > x by far: no flip
  // Two roundings of the same exp are equal in the reference, and unequal as soon as a
  // nudge moves them apart. The first tries move both the same way (an element's sign
  // follows its index) and the next two only snap near-zero values; in the last two each
  // value has its own signs, so about 3 in 4 elements see the two moved different ways.
  ir::Graph twin = ir::parse(R"(func @f(%x: f16[512]) -> (i1[512], f16[512]) {
  %a = exp %x : f16[512]
  %b = exp %x : f16[512]
  %c = eq %a, %b : i1[512]
  return %c, %a
}
)",
                             "nudge_test");
  const std::vector<HostTensor> in2 = ir::random_inputs(twin, 7);
  const std::vector<HostTensor> want2 = ir::evaluate(twin, in2);
  auto stable2 = fuzz::stable_elements(twin, in2, want2, {1e-4, 1e-2});
  int unstable = 0;
  for (bool s : stable2[0]) unstable += !s;
  EXPECT_GT(unstable, 340);
  for (bool s : stable2[1]) EXPECT_TRUE(s);  // one ulp is far inside f16's bound
}

TEST(Nudge, APowerLandingNextToAnIntegerMayBeThatInteger) {
  // (-0.3096721)^-9 is -38184.00213: the reference rounds it to -38184.004, a GPU's powf
  // (4 ulps) may give -38184, and pow of the negative base to that is -inf where to
  // -38184.004 it is NaN. The nudges of 4 ulps either way step over -38184; the snap
  // onto the integer finds it.
  ir::Graph g = ir::parse(R"(func @f(%x: f32[1], %n: i32[1]) -> (f32[1]) {
  %m = cast %n : f32[1]
  %p = pow %x, %m : f32[1]
  %q = pow %x, %p : f32[1]
  return %q
}
)",
                          "nudge_test");
  const std::vector<HostTensor> inputs = {HostTensor({DType::f32, {1}}, {-0.3096721}),
                                          HostTensor({DType::i32, {1}}, {-9})};
  const std::vector<HostTensor> want = ir::evaluate(g, inputs);
  ASSERT_TRUE(std::isnan(want[0].values[0]));
  EXPECT_FALSE(fuzz::stable_elements(g, inputs, want, {1e-2})[0][0]);
}

TEST(Nudge, AnIntegerExponentMayBeOneUnitOff) {
  // exp2(22.25) is 4987896 in f32 (a unit of 0.5): pow of a negative base to it is a
  // number, and to a GPU's exp2f one unit off it is NaN. The nudges of 2 units either way
  // round to the integers 4987897 and 4987895; the neighbour above, 4987896.5, finds it.
  ir::Graph g = ir::parse(R"(func @f(%x: f32[1], %d: f32[1]) -> (f32[1]) {
  %e = exp2 %d : f32[1]
  %p = pow %x, %e : f32[1]
  return %p
}
)",
                          "nudge_test");
  const std::vector<HostTensor> inputs = {HostTensor({DType::f32, {1}}, {-0.2119140625}),
                                          HostTensor({DType::f32, {1}}, {22.25})};
  const std::vector<HostTensor> want = ir::evaluate(g, inputs);
  ASSERT_FALSE(std::isnan(want[0].values[0]));
  EXPECT_FALSE(fuzz::stable_elements(g, inputs, want, {1e-5})[0][0]);
}

TEST(Nudge, ASixteenBitResultMovesToItsNeighbour) {
  // exp(-1.4765625) rounds to 0.228515625 (234 / 1024) in bf16; a kernel rounding the
  // other way gives 233 / 1024, which is y, and `ne` turns false. A factor of 1 - 2^-7
  // rounds to 232 / 1024 and 1 + 2^-7 to 236 / 1024, so neither try flips the compare;
  // a move of one spacing does.
  ir::Graph g = ir::parse(R"(func @f(%x: bf16[1], %y: bf16[1]) -> (i1[1]) {
  %e = exp %x : bf16[1]
  %c = ne %e, %y : i1[1]
  return %c
}
)",
                          "nudge_test");
  const std::vector<HostTensor> inputs = {HostTensor({DType::bf16, {1}}, {-1.4765625}),
                                          HostTensor({DType::bf16, {1}}, {233.0 / 1024})};
  const std::vector<HostTensor> want = ir::evaluate(g, inputs);
  ASSERT_EQ(want[0].values[0], 1.0);
  EXPECT_FALSE(fuzz::stable_elements(g, inputs, want, {1e-4})[0][0]);
}

TEST(Nudge, AnEqualityWithinItsOperandsReachMayGoEitherWay) {
  // q = 0 weighs both keys by 1/2: the output is (1 - 0.54296875) / 2 = 0.228515625
  // (234 / 1024) in bf16. Attention's error is a bf16 unit of its largest |v| (2^-7,
  // eight spacings here), so a kernel may give 233 / 1024, which is y. The nudges move
  // the output nine spacings either way, past y; `ne` against a value that close takes
  // the other answer in one try.
  ir::Graph g = ir::parse(R"(func @f(%q: bf16[1,3], %k: bf16[2,3], %v: bf16[2,1], %y: bf16[1,1]) -> (i1[1,1]) {
  %a = attention %q, %k, %v {scale = 1.0, causal = false} : bf16[1,1]
  %c = ne %a, %y : i1[1,1]
  return %c
}
)",
                          "nudge_test");
  const std::vector<HostTensor> inputs = {HostTensor({DType::bf16, {1, 3}}, {0, 0, 0}),
                                          HostTensor({DType::bf16, {2, 3}}, {0.5, -1, 2, 0.25, 1, -3}),
                                          HostTensor({DType::bf16, {2, 1}}, {1.0, -0.54296875}),
                                          HostTensor({DType::bf16, {1, 1}}, {233.0 / 1024})};
  const std::vector<HostTensor> want = ir::evaluate(g, inputs);
  ASSERT_EQ(want[0].values[0], 1.0);
  EXPECT_FALSE(fuzz::stable_elements(g, inputs, want, {1e-4})[0][0]);
  // Far from y (by more than the reach), the answer holds.
  std::vector<HostTensor> far = inputs;
  far[3] = HostTensor({DType::bf16, {1, 1}}, {0.25});
  EXPECT_TRUE(fuzz::stable_elements(g, far, ir::evaluate(g, far), {1e-4})[0][0]);
}

}  // namespace
}  // namespace kiln
