// The online-softmax and welford passes: the patterns they rewrite (softmax and
// log_softmax as decompose writes them or as a user writes them, with casts around;
// LayerNorm's variance), the graphs they must leave alone, and that every rewrite keeps
// the graph's numbers (checked against the reference interpreter on the original).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/interpreter.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "passes/pass.h"
#include "passes/pass_manager.h"
#include "runtime/program.h"

namespace kiln {
namespace {

using ir::OpKind;

ir::Graph after(const std::string& text, const std::string& pipeline) {
  ir::Graph g = ir::parse(text, "online_softmax_test");
  std::ostringstream quiet;
  passes::PassManager(pipeline, {}, quiet).run(g);
  ir::verify(g);
  return g;
}

int count(const ir::Graph& g, OpKind op) {
  const auto nodes = g.nodes();
  return static_cast<int>(std::count_if(nodes.begin(), nodes.end(), [&](const ir::Node* n) { return n->op == op; }));
}

// The rewritten graph computes what the original does, within `tolerance` per element.
void expect_same_numbers(const std::string& text, const ir::Graph& rewritten, double tolerance) {
  ir::Graph original = ir::parse(text, "original");
  std::vector<HostTensor> in = ir::random_inputs(original, 7);
  std::vector<HostTensor> want = ir::evaluate(original, in), got = ir::evaluate(rewritten, in);
  ASSERT_EQ(want.size(), got.size());
  for (size_t o = 0; o < want.size(); ++o)
    for (size_t i = 0; i < want[o].values.size(); ++i)
      EXPECT_NEAR(got[o].values[i], want[o].values[i], tolerance) << "output " << o << " element " << i;
}

const char* const kSoftmax = R"(func @f(%x: f32[4,16]) -> (f32[4,16]) {
  %y = softmax %x {axis = -1} : f32[4,16]
  return %y
})";

const char* const kByHand = R"(func @f(%x: f32[4,16]) -> (f32[4,16]) {
  %m = max %x {axis = [1], keepdim = true} : f32[4,1]
  %d = sub %x, %m : f32[4,16]
  %e = exp %d : f32[4,16]
  %s = sum %e {axis = [-1], keepdim = true} : f32[4,1]
  %y = div %e, %s : f32[4,16]
  return %y
})";

constexpr const char* kFront = "decompose,simplify,cse,dce,online-softmax";

TEST(OnlineSoftmax, SoftmaxBecomesExpOfXMinusLogSumExp) {
  ir::Graph g = after(kSoftmax, kFront);
  std::vector<OpKind> ops;
  for (const ir::Node* n : g.nodes()) ops.push_back(n->op);
  EXPECT_EQ(ops, (std::vector<OpKind>{OpKind::ReduceLogSumExp, OpKind::Sub, OpKind::Exp})) << ir::print(g);
  EXPECT_EQ(g.outputs()[0]->name, "y");
  expect_same_numbers(kSoftmax, g, 1e-6);
}

TEST(OnlineSoftmax, HandWrittenSoftmaxGivesTheSameGraphAsSoftmax) {
  EXPECT_EQ(ir::print(after(kByHand, kFront)), ir::print(after(kSoftmax, kFront)));
  expect_same_numbers(kByHand, after(kByHand, kFront), 1e-6);
}

TEST(OnlineSoftmax, LogSoftmaxBecomesXMinusLogSumExp) {
  const std::string text = R"(func @f(%x: f32[3,5,7]) -> (f32[3,5,7]) {
  %y = log_softmax %x {axis = 2} : f32[3,5,7]
  return %y
})";
  ir::Graph g = after(text, kFront);
  std::vector<OpKind> ops;
  for (const ir::Node* n : g.nodes()) ops.push_back(n->op);
  EXPECT_EQ(ops, (std::vector<OpKind>{OpKind::ReduceLogSumExp, OpKind::Sub})) << ir::print(g);
  EXPECT_EQ(g.nodes()[0]->attrs.get_ints("axis"), (std::vector<int64_t>{2}));
  expect_same_numbers(text, g, 1e-5);
}

TEST(OnlineSoftmax, AnAxisOtherThanTheLastKeepsItsMax) {
  // Over a leading axis the logsumexp would be a value of its own, rounded to fp32 as
  // max + log(sum), and x - lse would lose |max| 2^-24 of every exponent: at a max of
  // 2^24 two equal maxima came out 1 and 1 rather than 0.5 and 0.5.
  const std::string text = R"(func @f(%x: f32[3,5,7]) -> (f32[3,5,7]) {
  %y = log_softmax %x {axis = 1} : f32[3,5,7]
  return %y
})";
  ir::Graph g = after(text, kFront);
  EXPECT_EQ(count(g, OpKind::ReduceMax), 1) << ir::print(g);
  ASSERT_EQ(count(g, OpKind::ReduceLogSumExp), 1) << ir::print(g);
  for (const ir::Node* n : g.nodes())  // the logsumexp of x - max, whose max is 0
    if (n->op == OpKind::ReduceLogSumExp) {
      EXPECT_EQ(n->operands[0]->producer->op, OpKind::Sub) << ir::print(g);
    }
  expect_same_numbers(text, g, 1e-5);
}

TEST(OnlineSoftmax, AnInfiniteMaxIsTheAnswerAlongEveryAxis) {
  // A +inf beside finite scores: they come out 0 (softmax) or -inf (log_softmax) and the
  // +inf NaN, as the reference says, whichever axis the softmax takes; two equal maxima
  // of 2^24 share the column.
  for (const char* op : {"softmax", "log_softmax"})
    for (const char* axis : {"0", "1"}) {
      const std::string text = std::string("func @f(%x: f32[4,3]) -> (f32[4,3]) {\n  %y = ") + op + " %x {axis = " +
                               axis + "} : f32[4,3]\n  return %y\n}";
      SCOPED_TRACE(text);
      ir::Graph original = ir::parse(text, "original");
      ir::Graph g = after(text, kFront);
      const double inf = std::numeric_limits<double>::infinity();
      std::vector<HostTensor> in = ir::random_inputs(original, 3);
      in[0].values[0] = inf;                   // row 0 and column 0
      in[0].values[4] = in[0].values[10] = 16777216;  // column 1 and row 1, row 3
      const std::vector<HostTensor> want = ir::evaluate(original, in), got = ir::evaluate(g, in);
      for (size_t i = 0; i < want[0].values.size(); ++i) {
        const double w = want[0].values[i], v = got[0].values[i];
        if (std::isnan(w)) EXPECT_TRUE(std::isnan(v)) << i;
        else if (std::isinf(w)) EXPECT_EQ(v, w) << i;
        else EXPECT_NEAR(v, w, 1e-6 * std::max(1.0, std::fabs(w))) << i;
      }
    }
}

TEST(OnlineSoftmax, CastsAroundAHalfSoftmaxStay) {
  const std::string text = R"(func @f(%x: f16[4,16]) -> (f16[4,16]) {
  %xf = cast %x : f32[4,16]
  %p = softmax %xf {axis = -1} : f32[4,16]
  %y = cast %p : f16[4,16]
  return %y
})";
  ir::Graph g = after(text, kFront);
  EXPECT_EQ(count(g, OpKind::ReduceLogSumExp), 1) << ir::print(g);
  EXPECT_EQ(count(g, OpKind::ReduceMax) + count(g, OpKind::ReduceSum), 0) << ir::print(g);
  EXPECT_EQ(count(g, OpKind::Cast), 2) << ir::print(g);
  EXPECT_EQ(g.nodes()[1]->op, OpKind::ReduceLogSumExp);
  EXPECT_EQ(g.nodes()[1]->operands[0]->name, "xf");
  expect_same_numbers(text, g, 1e-3);
}

TEST(OnlineSoftmax, HalfSoftmaxIsReducedInFp32) {
  // A logsumexp rounded to bf16 would be off by up to 2^-6 near 8; in f32 the rewritten
  // graph is as close to the composite as the kernel is.
  const std::string text = R"(func @f(%x: bf16[4,16]) -> (bf16[4,16]) {
  %y = softmax %x : bf16[4,16]
  return %y
})";
  ir::Graph g = after(text, kFront);
  ASSERT_EQ(count(g, OpKind::ReduceLogSumExp), 1) << ir::print(g);
  EXPECT_EQ(count(g, OpKind::Cast), 2) << ir::print(g);
  EXPECT_EQ(g.nodes()[1]->op, OpKind::ReduceLogSumExp) << ir::print(g);
  EXPECT_EQ(g.nodes()[1]->result->type, (TensorType{DType::f32, {4, 1}}));
  EXPECT_EQ(g.outputs()[0]->type, (TensorType{DType::bf16, {4, 16}}));
  expect_same_numbers(text, g, 1e-2);
}

TEST(OnlineSoftmax, ExpWithAnotherReaderIsLeftAlone) {
  const std::string text = R"(func @f(%x: f32[4,16]) -> (f32[4,16], f32[4,16]) {
  %m = max %x {axis = [1], keepdim = true} : f32[4,1]
  %d = sub %x, %m : f32[4,16]
  %e = exp %d : f32[4,16]
  %s = sum %e {axis = [1], keepdim = true} : f32[4,1]
  %y = div %e, %s : f32[4,16]
  %z = mul %e, %e : f32[4,16]
  return %y, %z
})";
  ir::Graph g = ir::parse(text, "t");
  EXPECT_FALSE(passes::create_pass("online-softmax")->run(g));
  EXPECT_EQ(ir::print(g), ir::print(ir::parse(text, "t")));
}

TEST(OnlineSoftmax, ReturnedMaxIsLeftAlone) {
  const std::string text = R"(func @f(%x: f32[4,16]) -> (f32[4,16], f32[4,1]) {
  %m = max %x {axis = [1], keepdim = true} : f32[4,1]
  %d = sub %x, %m : f32[4,16]
  %e = exp %d : f32[4,16]
  %s = sum %e {axis = [1], keepdim = true} : f32[4,1]
  %y = div %e, %s : f32[4,16]
  return %y, %m
})";
  ir::Graph g = ir::parse(text, "t");
  EXPECT_FALSE(passes::create_pass("online-softmax")->run(g));
}

TEST(OnlineSoftmax, MismatchedAxesAreLeftAlone) {
  // The max over rows, the sum over columns: not a softmax.
  const std::string text = R"(func @f(%x: f32[8,8]) -> (f32[8,8]) {
  %m = max %x {axis = [1], keepdim = true} : f32[8,1]
  %d = sub %x, %m : f32[8,8]
  %e = exp %d : f32[8,8]
  %s = sum %e {axis = [0], keepdim = true} : f32[1,8]
  %y = div %e, %s : f32[8,8]
  return %y
})";
  ir::Graph g = ir::parse(text, "t");
  EXPECT_FALSE(passes::create_pass("online-softmax")->run(g));
}

TEST(OnlineSoftmax, MaxOfAnotherTensorIsLeftAlone) {
  const std::string text = R"(func @f(%x: f32[4,16], %w: f32[4,16]) -> (f32[4,16]) {
  %m = max %w {axis = [1], keepdim = true} : f32[4,1]
  %d = sub %x, %m : f32[4,16]
  %e = exp %d : f32[4,16]
  %s = sum %e {axis = [1], keepdim = true} : f32[4,1]
  %y = div %e, %s : f32[4,16]
  return %y
})";
  ir::Graph g = ir::parse(text, "t");
  EXPECT_FALSE(passes::create_pass("online-softmax")->run(g));
}

TEST(OnlineSoftmax, DivisionByAnotherSumIsLeftAlone) {
  // exp(x - max) / sum(x): the sum is not of the exp.
  const std::string text = R"(func @f(%x: f32[4,16]) -> (f32[4,16]) {
  %m = max %x {axis = [1], keepdim = true} : f32[4,1]
  %d = sub %x, %m : f32[4,16]
  %e = exp %d : f32[4,16]
  %s = sum %x {axis = [1], keepdim = true} : f32[4,1]
  %y = div %e, %s : f32[4,16]
  return %y
})";
  ir::Graph g = ir::parse(text, "t");
  EXPECT_FALSE(passes::create_pass("online-softmax")->run(g));
}

TEST(OnlineSoftmax, TwoSoftmaxesAreBothRewritten) {
  const std::string text = R"(func @f(%x: f32[4,16], %w: f32[4,16]) -> (f32[4,16], f32[4,16]) {
  %a = softmax %x : f32[4,16]
  %b = log_softmax %w : f32[4,16]
  return %a, %b
})";
  ir::Graph g = after(text, kFront);
  EXPECT_EQ(count(g, OpKind::ReduceLogSumExp), 2) << ir::print(g);
  EXPECT_EQ(count(g, OpKind::ReduceMax), 0) << ir::print(g);
  expect_same_numbers(text, g, 1e-5);
}

// Rows of 128 KiB: longer than one block holds in registers, where Welford's one pass pays.
const char* const kLayerNorm = R"(func @f(%x: f32[4,32768], %w: f32[32768], %b: f32[32768]) -> (f32[4,32768]) {
  %y = layer_norm %x, %w, %b {axis = -1, eps = 1e-05} : f32[4,32768]
  return %y
})";

TEST(Welford, RowsHeldInRegistersKeepTheirTwoPhases) {
  const char* const short_rows = R"(func @f(%x: f32[4,32], %w: f32[32], %b: f32[32]) -> (f32[4,32]) {
  %y = layer_norm %x, %w, %b {axis = -1, eps = 1e-05} : f32[4,32]
  return %y
})";
  ir::Graph g = after(short_rows, "decompose,simplify,cse,dce,welford");
  EXPECT_EQ(count(g, OpKind::ReduceVar), 0) << ir::print(g);
  EXPECT_EQ(count(g, OpKind::ReduceMean), 2) << ir::print(g);
  expect_same_numbers(short_rows, g, 1e-5);
}

TEST(Welford, LayerNormVarianceBecomesVarOfX) {
  ir::Graph g = after(kLayerNorm, "decompose,simplify,cse,dce,welford");
  EXPECT_EQ(count(g, OpKind::ReduceVar), 1) << ir::print(g);
  EXPECT_EQ(count(g, OpKind::ReduceMean), 1) << ir::print(g);
  for (const ir::Node* n : g.nodes())
    if (n->op == OpKind::ReduceVar || n->op == OpKind::ReduceMean) {
      EXPECT_EQ(n->operands[0]->name, "x");
    }
  // The square of the centred row is gone; the centred row stays (the normalised output).
  EXPECT_EQ(count(g, OpKind::Mul), 2) << ir::print(g);
  expect_same_numbers(kLayerNorm, g, 1e-5);
}

TEST(Welford, RmsNormIsLeftAlone) {
  const std::string text = R"(func @f(%x: f32[4,32], %w: f32[32]) -> (f32[4,32]) {
  %y = rms_norm %x, %w : f32[4,32]
  return %y
})";
  ir::Graph g = after(text, "decompose,simplify,cse,dce");
  EXPECT_FALSE(passes::create_pass("welford")->run(g));
}

TEST(Welford, CentringByAMeanOverOtherAxesIsLeftAlone) {
  const std::string text = R"(func @f(%x: f32[8,8]) -> (f32[8,1]) {
  %mu = mean %x {axis = [0], keepdim = true} : f32[1,8]
  %c = sub %x, %mu : f32[8,8]
  %q = mul %c, %c : f32[8,8]
  %v = mean %q {axis = [1], keepdim = true} : f32[8,1]
  return %v
})";
  ir::Graph g = ir::parse(text, "t");
  EXPECT_FALSE(passes::create_pass("welford")->run(g));
}

TEST(Welford, MeanWithoutKeepdimOnTheLastAxisIsLeftAlone) {
  // mean over axis 1 without keepdim broadcasts as a row: x[i, j] - mu[j] is no centring.
  const std::string text = R"(func @f(%x: f32[8,8]) -> (f32[8]) {
  %mu = mean %x {axis = [1]} : f32[8]
  %c = sub %x, %mu : f32[8,8]
  %q = mul %c, %c : f32[8,8]
  %v = mean %q {axis = [1]} : f32[8]
  return %v
})";
  ir::Graph g = ir::parse(text, "t");
  EXPECT_FALSE(passes::create_pass("welford")->run(g));
}

TEST(Welford, VarianceOverLeadingAxisWithoutKeepdim) {
  const std::string text = R"(func @f(%x: f32[6,3]) -> (f32[3], f32[6,3]) {
  %mu = mean %x {axis = [0]} : f32[3]
  %c = sub %x, %mu : f32[6,3]
  %q = mul %c, %c : f32[6,3]
  %v = mean %q {axis = [0]} : f32[3]
  return %v, %c
})";
  ir::Graph g = ir::parse(text, "t");
  EXPECT_TRUE(passes::create_pass("welford")->run(g));
  ir::verify(g);
  EXPECT_EQ(count(g, OpKind::ReduceVar), 1) << ir::print(g);
  EXPECT_EQ(g.outputs()[0]->name, "v");
  expect_same_numbers(text, g, 1e-5);
}

TEST(DefaultPipelines, RunOnlineSoftmaxAndWelfordAfterDceAndBeforeFuse) {
  for (std::string_view pipeline : {passes::kDefaultPipeline, runtime::kCompilePipeline}) {
    auto names = passes::split_pipeline(pipeline);
    auto at = [&](const char* name) { return std::find(names.begin(), names.end(), name) - names.begin(); };
    const auto size = static_cast<std::ptrdiff_t>(names.size());
    ASSERT_LT(at("online-softmax"), size) << pipeline;
    ASSERT_LT(at("welford"), size) << pipeline;
    EXPECT_LT(at("dce"), at("online-softmax")) << pipeline;
    EXPECT_LT(at("dce"), at("welford")) << pipeline;
    EXPECT_GT(at("fuse"), at("welford")) << pipeline;  // fuse is missing (size) or later
  }
}

}  // namespace
}  // namespace kiln
