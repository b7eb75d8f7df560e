// kiln-difftest's verdicts on made-up GPU outputs: a result that follows the fused
// kernels' fp32 intermediates where the per-op reference overflowed is told apart
// from one that matches neither reference, which stays a mismatch.
#include <gtest/gtest.h>

#include <cmath>

#include "ir/compare.h"
#include "ir/interpreter.h"
#include "ir/parser.h"
#include "tests/fuzz/judge.h"
#include "tests/fuzz/wide_reference.h"

namespace kiln {
namespace {

// exp(12 x) passes f16's 65504 where x > 0.925: inf per op there, finite in fp32, and
// back in range after the divide. %z stays in range everywhere.
const char* kOverflowingExp = R"(func @f(%x: f16[256]) -> (f16[256], f16[256]) {
  %k = const 12.0 : f16[]
  %a = mul %x, %k : f16[256]
  %e = exp %a : f16[256]
  %h = const 1000.0 : f16[]
  %y = div %e, %h : f16[256]
  %z = exp %x : f16[256]
  return %y, %z
}
)";

struct Case {
  ir::Graph graph;
  std::vector<HostTensor> inputs, reference, wide;
  std::vector<double> bounds;
};

Case make_case(const char* text, uint64_t seed) {
  Case c{ir::parse(text, "judge_test"), {}, {}, {}, {}};
  c.inputs = ir::random_inputs(c.graph, seed);
  c.reference = ir::evaluate(c.graph, c.inputs);
  c.wide = fuzz::wide_reference(c.graph, c.inputs);
  for (const ir::Value* out : c.graph.outputs()) c.bounds.push_back(rel_l2_bound_for(*out));
  return c;
}

fuzz::Verdict judge(const Case& c, const std::vector<HostTensor>& gpu) {
  return fuzz::judge_outputs(c.graph, c.inputs, c.reference, gpu, c.bounds);
}

HostTensor scaled(const HostTensor& t, double factor) {
  HostTensor out = t;
  for (double& v : out.values) v = round_to(t.type.dtype, v * factor);
  return out;
}

TEST(Judge, TheExampleOverflowsPerOpOnly) {
  const Case c = make_case(kOverflowingExp, 21);
  int overflowed = 0;
  for (size_t e = 0; e < 256; ++e) {
    overflowed += std::isinf(c.reference[0].values[e]);
    EXPECT_TRUE(std::isfinite(c.wide[0].values[e])) << e;
  }
  EXPECT_GT(overflowed, 0);
  EXPECT_LT(overflowed, 64);
}

TEST(Judge, TheWideResultWhereThePerOpReferenceOverflowed) {
  const Case c = make_case(kOverflowingExp, 21);
  const fuzz::Verdict v = judge(c, c.wide);
  EXPECT_EQ(v.kind, fuzz::Verdict::Kind::WideIntermediate) << v.detail;
  EXPECT_NE(v.detail.find("output 0 %y"), std::string::npos) << v.detail;
  EXPECT_EQ(v.detail.find("output 1"), std::string::npos) << v.detail;  // %z passed as it is
}

TEST(Judge, ThePerOpResultPasses) {
  const Case c = make_case(kOverflowingExp, 21);
  EXPECT_EQ(judge(c, c.reference).kind, fuzz::Verdict::Kind::Pass);
}

TEST(Judge, AResultThatMatchesNeitherReferenceIsAMismatch) {
  const Case c = make_case(kOverflowingExp, 21);
  const fuzz::Verdict v = judge(c, {scaled(c.wide[0], 1.1), c.wide[1]});
  EXPECT_EQ(v.kind, fuzz::Verdict::Kind::Mismatch) << v.detail;
  // Finite where the per-op reference overflowed, wrong elsewhere: still no excuse.
  HostTensor half_right = c.wide[0];
  for (size_t e = 0; e < 256; ++e)
    if (std::isfinite(c.reference[0].values[e]))
      half_right.values[e] = round_to(DType::f16, 1.1 * half_right.values[e]);
  EXPECT_EQ(judge(c, {half_right, c.wide[1]}).kind, fuzz::Verdict::Kind::Mismatch);
}

TEST(Judge, AMismatchInAnotherOutputFailsTheGraph) {
  const Case c = make_case(kOverflowingExp, 21);
  const fuzz::Verdict v = judge(c, {c.wide[0], scaled(c.wide[1], 1.1)});
  EXPECT_EQ(v.kind, fuzz::Verdict::Kind::Mismatch) << v.detail;
  EXPECT_NE(v.detail.find("output 0 %y"), std::string::npos) << v.detail;
}

TEST(Judge, ASkippedRoundingIsAMismatch) {
  // A cast reads its operand rounded to f16, so a kernel that kept %b in fp32 through
  // the cast (x itself, finite) is wrong under either reference.
  const Case c = make_case(R"(func @f(%x: f16[64]) -> (f32[64]) {
  %k = const 1000.0 : f16[]
  %a = mul %x, %k : f16[64]
  %b = mul %a, %k : f16[64]
  %c = cast %b : f32[64]
  %m = const 1000000.0 : f32[]
  %y = div %c, %m : f32[64]
  return %y
}
)",
                           22);
  HostTensor unrounded = c.reference[0];
  unrounded.values = c.inputs[0].values;
  const fuzz::Verdict v = judge(c, {unrounded});
  EXPECT_EQ(v.kind, fuzz::Verdict::Kind::Mismatch) << v.detail;
  EXPECT_NE(v.detail.find("within the bound of the per-op one"), std::string::npos) << v.detail;
}

TEST(Judge, WithoutF16IntermediatesAMismatchStaysOne) {
  const Case c = make_case(R"(func @f(%x: f32[64]) -> (f32[64]) {
  %e = exp %x : f32[64]
  return %e
}
)",
                           23);
  const fuzz::Verdict v = judge(c, {scaled(c.reference[0], 1.01)});
  EXPECT_EQ(v.kind, fuzz::Verdict::Kind::Mismatch) << v.detail;
  EXPECT_NE(v.detail.find("no f16 / bf16 intermediate"), std::string::npos) << v.detail;
}

}  // namespace
}  // namespace kiln
