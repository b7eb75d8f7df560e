// kiln-difftest's judge on outputs tiny next to what their op consumed: an fp32 kernel
// knows gelu(-6) only to about one fp32 unit of 6, so such elements are checked
// absolutely (the floor), and a zero or near-zero intermediate whose sign decides what
// follows (rsqrt of -0 is -inf, of a tiny negative NaN) is unstable. A wrong answer of
// ordinary size stays a mismatch.
#include <gtest/gtest.h>

#include <cmath>

#include "ir/compare.h"
#include "ir/interpreter.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "tests/fuzz/nudge.h"
#include "tests/fuzz/random_graph.h"
#include "tests/fuzz/judge.h"
#include "tests/fuzz/magnitude.h"

namespace kiln {
namespace {

// An exact-erf GELU in fp32 through 1 + erf, whose tail cancels: the judge must accept it
// (Kiln's kernels take erfc, codegen/scalar_emit.cpp, and keep the tail).
float fp32_gelu(float x) { return 0.5f * x * (1.0f + std::erf(x * 0.70710678118654752f)); }

struct Case {
  ir::Graph graph;
  std::vector<HostTensor> inputs, reference;
  std::vector<double> bounds;
};

Case make_case(const char* text, std::vector<double> input) {
  Case c{ir::parse(text, "judge_floor_test"), {}, {}, {}};
  c.inputs.emplace_back(c.graph.inputs()[0]->type, std::move(input));
  c.reference = ir::evaluate(c.graph, c.inputs);
  for (const ir::Value* out : c.graph.outputs()) c.bounds.push_back(rel_l2_bound_for(*out));
  return c;
}

fuzz::Verdict judge(const Case& c, const HostTensor& gpu) {
  return fuzz::judge_outputs(c.graph, c.inputs, c.reference, {gpu}, c.bounds);
}

const char* kGelu = R"(func @f(%x: f32[8]) -> (f32[8]) {
  %g = gelu %x {approximate = "none"} : f32[8]
  return %g
}
)";

TEST(JudgeFloor, GeluOfALargeNegativeNumberIsCheckedAbsolutely) {
  const Case c = make_case(kGelu, {-5.5, -6, -4.75, -5, -6.5, -3.5, -5.25, -4.5});
  HostTensor gpu = c.reference[0];
  for (size_t e = 0; e < 8; ++e) gpu.values[e] = fp32_gelu(static_cast<float>(c.inputs[0].values[e]));
  EXPECT_FALSE(compare(gpu, c.reference[0], c.bounds[0]).passed);  // far apart relative to the outputs
  const fuzz::Verdict v = judge(c, gpu);
  EXPECT_EQ(v.kind, fuzz::Verdict::Kind::Pass) << v.detail;
}

TEST(JudgeFloor, TheFloorScalesWithTheInputsNotTheOutputs) {
  // Off by 1e-3 absolute at inputs of about 5: past the floor 1e-5 * 5 = 5e-5.
  const Case c = make_case(kGelu, {-5.5, -6, -4.75, -5, -6.5, -3.5, -5.25, -4.5});
  HostTensor gpu = c.reference[0];
  for (double& x : gpu.values) x = static_cast<float>(x - 1e-3);
  EXPECT_EQ(judge(c, gpu).kind, fuzz::Verdict::Kind::Mismatch);
}

TEST(JudgeFloor, OrdinaryOutputsStayRelative) {
  const Case c = make_case(kGelu, {0.5, 1, 1.5, 2, 2.5, 3, 3.5, 4});
  HostTensor gpu = c.reference[0];
  for (double& x : gpu.values) x = static_cast<float>(x * 1.001);
  EXPECT_EQ(judge(c, gpu).kind, fuzz::Verdict::Kind::Mismatch);
}

TEST(JudgeFloor, TheSignOfAZeroBeforeRsqrtIsUnstable) {
  // gelu(-6) in bf16 is -5.9e-9 per op, so rsqrt gives NaN; in fp32 erf(-4.24) is -1, a
  // 1 + erf gelu -0 and rsqrt -inf. Either is a rounding away from the other.
  const Case c = make_case(R"(func @f(%i: i32[4]) -> (bf16[4]) {
  %c = cast %i : bf16[4]
  %g = gelu %c {approximate = "none"} : bf16[4]
  %r = rsqrt %g : bf16[4]
  return %r
}
)",
                           {-6, 2, 3, 1});
  ASSERT_TRUE(std::isnan(c.reference[0].values[0]));
  HostTensor gpu = c.reference[0];
  gpu.values[0] = -INFINITY;
  const fuzz::Verdict v = judge(c, gpu);
  EXPECT_EQ(v.kind, fuzz::Verdict::Kind::Unstable) << v.detail;
  gpu.values[1] *= 1.1;  // the others are still checked
  EXPECT_EQ(judge(c, gpu).kind, fuzz::Verdict::Kind::Mismatch);
}

TEST(JudgeFloor, AWrongProductOfABroadcastOperandStaysAMismatch) {
  // What a gemm that stepped past a broadcast row read: the second row of the product
  // made of other elements.
  const Case c = make_case(R"(func @f(%v: f32[2]) -> (f32[2,2]) {
  %b = broadcast %v : f32[2,2]
  %w = const 0.75 : f32[2,2]
  %m = matmul %b, %w : f32[2,2]
  return %m
}
)",
                           {0.3, -0.8});
  HostTensor gpu = c.reference[0];
  gpu.values[2] = gpu.values[3] = 0.0;
  EXPECT_EQ(judge(c, gpu).kind, fuzz::Verdict::Kind::Mismatch);
}

TEST(Magnitude, IsWhatTheCancellingOpsConsumed) {
  ir::Graph g = ir::parse(R"(func @f(%x: f32[2,3], %y: f32[3]) -> (f32[2,3], f32[2], f32[2,3], f32[2,3]) {
  %s = sub %x, %y : f32[2,3]
  %m = mean %x {axis = [1], keepdim = false} : f32[2]
  %l = log_softmax %x {axis = 1} : f32[2,3]
  %e = exp %x : f32[2,3]
  return %s, %m, %l, %e
}
)",
                          "judge_floor_test");
  const std::vector<HostTensor> in = {HostTensor({DType::f32, {2, 3}}, {1, -2, 3, -4, 5, -6}),
                                      HostTensor({DType::f32, {3}}, {-3, 1, 1})};
  const fuzz::Intermediates at = fuzz::evaluate_intermediates(g, in);
  const auto& outs = g.outputs();
  EXPECT_EQ(at.magnitudes.at(outs[0]).values, (std::vector<double>{3, 2, 3, 4, 5, 6}));
  EXPECT_EQ(at.magnitudes.at(outs[1]).values, (std::vector<double>{2, 5}));
  EXPECT_EQ(at.magnitudes.at(outs[2]).values, (std::vector<double>{3, 3, 3, 6, 6, 6}));
  EXPECT_EQ(at.magnitudes.count(outs[3]), 0u);  // exp errs relative to its result
  EXPECT_EQ(at.values.at(outs[3]).values.size(), 6u);
}

TEST(Magnitude, NearZeroIsWithinOneFp32UnitOfIt) {
  const HostTensor m({DType::f32, {2}}, {6, 6});
  EXPECT_TRUE(fuzz::near_zero(-5.9e-9, &m, 0));
  EXPECT_FALSE(fuzz::near_zero(-1e-5, &m, 0));
  EXPECT_TRUE(fuzz::near_zero(-0.0, nullptr, 0));  // a zero's sign hangs on roundings anywhere
  EXPECT_FALSE(fuzz::near_zero(1e-30, nullptr, 0));
}

TEST(Magnitude, RandomGraphsGiveAMagnitudeOfEachValuesShapeAndNudge) {
  int with_magnitude = 0;
  for (uint64_t seed = 1; seed <= 200; ++seed) {
    fuzz::Decisions d = fuzz::Decisions::from_seed(seed);
    const ir::Graph g = fuzz::random_graph(d);
    const std::vector<HostTensor> inputs = ir::random_inputs(g, seed);
    fuzz::Intermediates at;
    ASSERT_NO_THROW(at = fuzz::evaluate_intermediates(g, inputs)) << ir::print(g);
    for (const auto& [v, m] : at.magnitudes) EXPECT_EQ(m.type.shape, v->type.shape) << seed;
    with_magnitude += !at.magnitudes.empty();
    const fuzz::Nudged n = fuzz::nudged(g, seed, &at);
    std::vector<HostTensor> all = inputs;
    all.insert(all.end(), n.factors.begin(), n.factors.end());
    EXPECT_NO_THROW(ir::evaluate(n.graph, all)) << ir::print(g);
  }
  EXPECT_GT(with_magnitude, 50);
}

}  // namespace
}  // namespace kiln
