// The C++ DSL (frontend/): the IR it builds, scalars and operators, several outputs,
// and errors that name the op, the operand types and the user's call site.
#include <gtest/gtest.h>

#include <string>

#include "frontend/kiln.h"
#include "ir/parser.h"

namespace {

// Substring checks that print both strings when they fail.
::testing::AssertionResult Contains(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "\"" << text << "\"\ndoes not contain\n\"" << part << "\"";
}
::testing::AssertionResult StartsWith(const std::string& text, const std::string& prefix) {
  if (text.rfind(prefix, 0) == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "\"" << text << "\"\ndoes not start with\n\"" << prefix << "\"";
}

// Runs `build` and returns the kiln::Error it throws ("" when it throws none).
template <class F>
std::string error_of(F&& build) {
  try {
    build();
  } catch (const kiln::Error& e) {
    return e.what();
  }
  return "";
}

std::string at(int line) { return std::string(__FILE__) + ":" + std::to_string(line) + ": "; }

TEST(Dsl, BuildsDesignAddRmsnorm) {
  kiln::Graph g("add_rmsnorm");
  auto x = g.input("x", kiln::f16, {8192, 4096});
  auto r = g.input("r", kiln::f16, {8192, 4096});
  auto w = g.input("w", kiln::f16, {4096});
  auto h = (x + r).name("h");
  g.output(kiln::rms_norm(h, w, 1e-6).name("y"));
  g.output(h);
  EXPECT_EQ(g.str(),
            "func @add_rmsnorm(%x: f16[8192,4096], %r: f16[8192,4096], %w: f16[4096]) -> "
            "(f16[8192,4096], f16[8192,4096]) {\n"
            "  %h = add %x, %r : f16[8192,4096]\n"
            "  %y = rms_norm %h, %w {axis = -1, eps = 1e-06} : f16[8192,4096]\n"
            "  return %y, %h\n"
            "}\n");
}

TEST(Dsl, PrintedGraphParsesBackToTheSameText) {
  kiln::Graph g("chain");
  auto x = g.input("x", kiln::bf16, {16, 32});
  auto b = g.input("b", kiln::bf16, {32});
  g.output(kiln::softmax(kiln::gelu(x * 0.5 + b, "tanh")));
  std::string text = g.str();
  EXPECT_EQ(kiln::ir::print(kiln::ir::parse(text)), text);
}

TEST(Dsl, ScalarOnTheRightBecomesConstOfTheTensorDtype) {
  kiln::Graph g("scale");
  auto x = g.input("x", kiln::f16, {4, 8});
  g.output(x * 0.5);
  EXPECT_TRUE(Contains(g.str(), "  %0 = const 0.5 : f16[]\n"
                                 "  %1 = mul %x, %0 : f16[4,8]\n"));
}

TEST(Dsl, ScalarOnTheLeftKeepsOperandOrder) {
  kiln::Graph g("rsub");
  auto x = g.input("x", kiln::f32, {3});
  g.output(1 - x);
  EXPECT_TRUE(Contains(g.str(), "  %0 = const 1.0 : f32[]\n"
                                 "  %1 = sub %0, %x : f32[3]\n"));
}

TEST(Dsl, IntegerTensorTakesIntegerConstants) {
  kiln::Graph g("ints");
  auto i = g.input("i", kiln::i32, {4});
  g.output(i / 2);
  EXPECT_TRUE(Contains(g.str(), ": i32[]\n  %1 = div %i, %0 : i32[4]\n"));
}

TEST(Dsl, UnaryMinusIsNeg) {
  kiln::Graph g("neg");
  auto x = g.input("x", kiln::f32, {3});
  g.output(-x);
  EXPECT_TRUE(Contains(g.str(), "%0 = neg %x : f32[3]"));
}

TEST(Dsl, ComparisonOperatorsGiveI1) {
  kiln::Graph g("cmp");
  auto x = g.input("x", kiln::f32, {3});
  auto y = g.input("y", kiln::f32, {3});
  g.output(x < y);
  g.output(x <= y);
  g.output(x > y);
  g.output(x >= y);
  g.output(kiln::eq(x, y));
  g.output(kiln::ne(x, y));
  std::string text = g.str();
  EXPECT_TRUE(Contains(text, "%0 = lt %x, %y : i1[3]"));
  EXPECT_TRUE(Contains(text, "%1 = le %x, %y : i1[3]"));
  EXPECT_TRUE(Contains(text, "%2 = gt %x, %y : i1[3]"));
  EXPECT_TRUE(Contains(text, "%3 = ge %x, %y : i1[3]"));
  EXPECT_TRUE(Contains(text, "%4 = eq %x, %y : i1[3]"));
  EXPECT_TRUE(Contains(text, "%5 = ne %x, %y : i1[3]"));
}

TEST(Dsl, SelectScalarTakesTheValuesDtypeNotI1) {
  kiln::Graph g("relu_by_hand");
  auto x = g.input("x", kiln::f16, {8});
  g.output(kiln::select(x > 0, x, 0.0));
  EXPECT_TRUE(Contains(g.str(), "  %2 = const 0.0 : f16[]\n"
                                 "  %3 = select %1, %x, %2 : f16[8]\n"));
}

TEST(Dsl, MaxOfTwoTensorsIsBinaryAndMaxOverAxesReduces) {
  kiln::Graph g("maxes");
  auto x = g.input("x", kiln::f32, {4, 8});
  auto y = g.input("y", kiln::f32, {8});
  g.output(kiln::max(x, y));
  g.output(kiln::max(x, {1}, /*keepdim=*/true));
  g.output(kiln::min(x, {0, 1}));
  std::string text = g.str();
  EXPECT_TRUE(Contains(text, "%0 = max %x, %y : f32[4,8]"));
  EXPECT_TRUE(Contains(text, "%1 = max %x {axis = [1], keepdim = true} : f32[4,1]"));
  EXPECT_TRUE(Contains(text, "%2 = min %x {axis = [0, 1], keepdim = false} : f32[]"));
}

TEST(Dsl, LogSumExpAndVarianceAreReductions) {
  kiln::Graph g("stats");
  auto x = g.input("x", kiln::f16, {4, 8});
  g.output(kiln::logsumexp(x, {1}, /*keepdim=*/true));
  g.output(kiln::var(x, {1}));
  std::string text = g.str();
  EXPECT_TRUE(Contains(text, "%0 = logsumexp %x {axis = [1], keepdim = true} : f16[4,1]")) << text;
  EXPECT_TRUE(Contains(text, "%1 = var %x {axis = [1], keepdim = false} : f16[4]")) << text;
  kiln::Graph ints("ints");
  auto i = ints.input("i", kiln::i32, {4});
  EXPECT_THROW(kiln::var(i, {0}), kiln::Error);  // float dtypes only
}

TEST(Dsl, SeveralOutputsReturnInCallOrder) {
  kiln::Graph g("two");
  auto x = g.input("x", kiln::f32, {16, 4});
  g.output(kiln::sum(x, {1}).name("rows"));
  g.output(kiln::mean(x, {0}).name("cols"));
  g.output(x);
  EXPECT_TRUE(StartsWith(g.str(), "func @two(%x: f32[16,4]) -> (f32[16], f32[4], f32[16,4]) {\n"));
  EXPECT_TRUE(Contains(g.str(), "  return %rows, %cols, %x\n"));
  EXPECT_EQ(g.ir().outputs().size(), 3u);
}

TEST(Dsl, AttentionScaleDefaultsToOneOverSqrtHeadDim) {
  kiln::Graph g("attn");
  auto q = g.input("q", kiln::f16, {2, 128, 16});
  auto k = g.input("k", kiln::f16, {2, 64, 16});
  auto v = g.input("v", kiln::f16, {2, 64, 32});
  g.output(kiln::attention(q, k, v));
  EXPECT_TRUE(Contains(g.str(), "attention %q, %k, %v {scale = 0.25, causal = false} : f16[2,128,32]"));
}

TEST(Dsl, ViewsMatmulAndSourcesCarryTheirAttributes) {
  kiln::Graph g("views");
  auto a = g.input("a", kiln::f32, {8, 4});
  auto b = g.input("b", kiln::f32, {8, 6});
  g.output(kiln::matmul(a, b, /*transpose_a=*/true));
  g.output(kiln::transpose(a, {1, 0}));
  g.output(kiln::reshape(a, {2, 16}));
  g.output(kiln::broadcast_to(kiln::cast(a, kiln::f16), {3, 8, 4}));
  g.output(kiln::iota(g, kiln::i32, {8, 4}, 1));
  std::string text = g.str();
  EXPECT_TRUE(Contains(text, "matmul %a, %b {transpose_a = true, transpose_b = false} : f32[4,6]"));
  EXPECT_TRUE(Contains(text, "transpose %a {perm = [1, 0]} : f32[4,8]"));
  EXPECT_TRUE(Contains(text, "reshape %a : f32[2,16]"));
  EXPECT_TRUE(Contains(text, "cast %a : f16[8,4]"));
  EXPECT_TRUE(Contains(text, "broadcast %3 : f16[3,8,4]"));
  EXPECT_TRUE(Contains(text, "iota {axis = 1} : i32[8,4]"));
}

TEST(Dsl, NodesRecordTheCallSite) {
  kiln::Graph g("loc");
  auto x = g.input("x", kiln::f32, {3});
  const int line = __LINE__ + 1;
  auto y = kiln::exp(x) + 1.0;
  std::string where = std::string(__FILE__) + ":" + std::to_string(line);
  for (const kiln::ir::Node* n : g.ir().nodes()) EXPECT_EQ(n->loc, where) << kiln::ir::op_name(n->op);
  EXPECT_EQ(g.ir().num_nodes(), 3u);  // exp, const, add
  (void)y;
}

TEST(Dsl, OperatorErrorNamesOpShapesAndCallSite) {
  kiln::Graph g("bad");
  auto x = g.input("x", kiln::f16, {4, 8});
  auto y = g.input("y", kiln::f16, {3});
  int line = 0;
  std::string message = error_of([&] {
    line = __LINE__ + 1;
    (void)(x + y);
  });
  EXPECT_TRUE(StartsWith(message, at(line) + "add(f16[4,8], f16[3]): shapes do not broadcast"));
}

TEST(Dsl, FunctionErrorNamesOpShapesAndCallSite) {
  kiln::Graph g("bad");
  auto a = g.input("a", kiln::f32, {8, 4});
  auto b = g.input("b", kiln::f32, {5, 6});
  int line = 0;
  std::string message = error_of([&] {
    line = __LINE__ + 1;
    (void)kiln::matmul(a, b);
  });
  EXPECT_TRUE(StartsWith(message, at(line) + "matmul(f32[8,4], f32[5,6]): contraction sizes differ"));
}

TEST(Dsl, FailedCallLeavesTheGraphUnchanged) {
  kiln::Graph g("bad");
  auto i = g.input("i", kiln::i32, {4});
  size_t before = g.ir().num_nodes();
  std::string message = error_of([&] { (void)kiln::pow(i, 2.0); });  // pow needs floats
  EXPECT_TRUE(Contains(message, "pow(i32[4], i32[]): operands must be floating point"));
  EXPECT_EQ(g.ir().num_nodes(), before);  // no stray const for the scalar
}

TEST(Dsl, MixingTensorsOfTwoGraphsThrows) {
  kiln::Graph g1("first"), g2("second");
  auto x = g1.input("x", kiln::f32, {4});
  auto y = g2.input("y", kiln::f32, {4});
  int line = 0;
  std::string message = error_of([&] {
    line = __LINE__ + 1;
    (void)kiln::mul(x, y);
  });
  EXPECT_EQ(message, at(line) + "mul: operands belong to different graphs ('first' and 'second')");
  EXPECT_TRUE(
      Contains(error_of([&] { g2.output(x); }), "output: the tensor belongs to graph 'first', not to 'second'"));
}

TEST(Dsl, ScalarsAloneAreRejected) {
  EXPECT_TRUE(Contains(error_of([] { (void)kiln::add(1.0, 2.0); }), "add: at least one operand must be a tensor"));
}

TEST(Dsl, EmptyHandleThrows) {
  kiln::Tensor empty;
  EXPECT_FALSE(empty.valid());
  EXPECT_TRUE(Contains(error_of([&] { (void)kiln::exp(empty); }), "exp: an operand is an empty tensor handle"));
  EXPECT_THROW((void)empty.type(), kiln::Error);
}

TEST(Dsl, NamesMustBeUniqueIdentifiers) {
  kiln::Graph g("names");
  auto x = g.input("x", kiln::f32, {4});
  auto y = kiln::exp(x);
  EXPECT_TRUE(Contains(error_of([&] { y.name("x"); }), "name 'x' is already used in graph 'names'"));
  EXPECT_TRUE(Contains(error_of([&] { y.name("2y"); }), "name '2y' is not an identifier"));
  EXPECT_TRUE(Contains(error_of([&] { g.input("x", kiln::f32, {4}); }), "name 'x' is already used"));
  y.name("e");
  EXPECT_EQ(y.name(), "e");
  EXPECT_TRUE(Contains(g.str(), "%e = exp %x : f32[4]"));
}

TEST(Dsl, InputErrorsCarryTheCallSite) {
  kiln::Graph g("inputs");
  int line = 0;
  std::string message = error_of([&] {
    line = __LINE__ + 1;
    g.input("x", kiln::f32, {4, 0});
  });
  EXPECT_TRUE(StartsWith(message, at(line) + "input 'x': dimensions must be positive"));
}

}  // namespace
