// kiln-difftest's judge at the edges that random graphs on the H200 reached: the sign of
// a zero before rsqrt flipped in every element rather than by chance, layer_norm of
// equal values known only to its inputs' magnitude, and a long sum's roundings carried
// through exp2. A wrong answer of ordinary size stays a mismatch in each.
#include <gtest/gtest.h>

#include <cmath>

#include "ir/compare.h"
#include "ir/interpreter.h"
#include "ir/parser.h"
#include "tests/fuzz/judge.h"
#include "tests/fuzz/nudge.h"

namespace kiln {
namespace {

struct Case {
  ir::Graph graph;
  std::vector<HostTensor> inputs, reference;
  std::vector<double> bounds;
};

Case make_case(const char* text, std::vector<std::vector<double>> inputs) {
  Case c{ir::parse(text, "judge_edges_test"), {}, {}, {}};
  for (size_t i = 0; i < inputs.size(); ++i) c.inputs.emplace_back(c.graph.inputs()[i]->type, std::move(inputs[i]));
  c.reference = ir::evaluate(c.graph, c.inputs);
  for (const ir::Value* out : c.graph.outputs()) c.bounds.push_back(rel_l2_bound_for(*out));
  return c;
}

fuzz::Verdict judge(const Case& c, const HostTensor& gpu) {
  return fuzz::judge_outputs(c.graph, c.inputs, c.reference, {gpu}, c.bounds);
}

std::vector<double> ramp(int n, double from, double step) {
  std::vector<double> v(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) v[static_cast<size_t>(i)] = from + step * i;
  return v;
}

TEST(JudgeEdges, EveryZeroBeforeRsqrtIsUnstable) {
  // x - x is +0 in the reference and rsqrt makes it +inf; a kernel may make it -0 (and
  // -inf). The first nudge flips every such zero, so no element keeps its verdict by luck.
  const Case c = make_case(R"(func @f(%x: f32[256]) -> (f32[256]) {
  %z = sub %x, %x : f32[256]
  %r = rsqrt %z : f32[256]
  return %r
}
)",
                           {ramp(256, -3, 0.03)});
  const auto stable = fuzz::stable_elements(c.graph, c.inputs, c.reference, c.bounds);
  for (size_t e = 0; e < 256; ++e) EXPECT_FALSE(stable[0][e]) << e;
  HostTensor gpu = c.reference[0];
  for (double& v : gpu.values) v = -INFINITY;
  EXPECT_EQ(judge(c, gpu).kind, fuzz::Verdict::Kind::Unstable);
}

const char* kLayerNormOfEqualValues = R"(func @f(%x: f32[4,1], %w: f32[6], %b: f32[6]) -> (f32[4,6]) {
  %e = broadcast %x : f32[4,6]
  %n = layer_norm %e, %w, %b {axis = -1, eps = 1e-05} : f32[4,6]
  return %n
}
)";

TEST(JudgeEdges, LayerNormOfEqualValuesIsKnownToItsMagnitude) {
  // Each row holds one value six times: x - mean is 0 exactly in the reference and a unit
  // of x in fp32, which rsqrt(0 + 1e-5) multiplies by 316, then w.
  const Case c = make_case(kLayerNormOfEqualValues, {{3.7, -12.5, 0.8, 25.0}, ramp(6, 0.5, 0.25), ramp(6, -0.2, 0.07)});
  HostTensor gpu = c.reference[0];
  for (size_t e = 0; e < gpu.values.size(); ++e) {
    const double x = c.inputs[0].values[e / 6], w = c.inputs[1].values[e % 6];
    gpu.values[e] += std::fabs(x) * std::ldexp(1.0, -23) / std::sqrt(1e-5) * w;
  }
  EXPECT_FALSE(compare(gpu, c.reference[0], c.bounds[0]).passed);
  const fuzz::Verdict v = judge(c, gpu);
  EXPECT_EQ(v.kind, fuzz::Verdict::Kind::Pass) << v.detail;
  for (double& v : gpu.values) v += 0.05;  // off by far more than that
  EXPECT_EQ(judge(c, gpu).kind, fuzz::Verdict::Kind::Mismatch);
}

const char* kExp2OfASum = R"(func @f(%x: f32[8,64]) -> (f32[8]) {
  %s = sum %x {axis = [-1], keepdim = false} : f32[8]
  %p = exp2 %s : f32[8]
  return %p
}
)";

TEST(JudgeEdges, AnExp2OfALongSumCarriesTheSumsRoundings) {
  // Sums near 100: exp2 turns an absolute error d of the sum into a relative one of
  // d ln 2, so three fp32 units of the sum's magnitude (of the six that 64 terms may
  // gather) give 2.5e-5, past the f32 bound of 1e-5; forty units are a wrong sum.
  const Case c = make_case(kExp2OfASum, {ramp(512, 1.2, 0.001)});
  auto off_by = [&](double units) {
    HostTensor gpu = c.reference[0];
    for (size_t r = 0; r < 8; ++r) {
      double magnitude = 0;
      for (size_t k = 0; k < 64; ++k) magnitude += std::fabs(c.inputs[0].values[r * 64 + k]);
      gpu.values[r] *= std::exp2((r % 2 ? 1 : -1) * units * std::ldexp(magnitude, -23));
    }
    return gpu;
  };
  const HostTensor near = off_by(3);
  EXPECT_FALSE(compare(near, c.reference[0], c.bounds[0]).passed);
  const fuzz::Verdict v = judge(c, near);
  EXPECT_EQ(v.kind, fuzz::Verdict::Kind::Unstable) << v.detail;
  EXPECT_EQ(judge(c, off_by(40)).kind, fuzz::Verdict::Kind::Mismatch);
}

}  // namespace
}  // namespace kiln
