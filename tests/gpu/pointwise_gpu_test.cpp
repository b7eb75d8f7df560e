// Fused element-wise kernels on the GPU against the reference interpreter:
// every element-wise op, f32/f16/bf16 (and i32, i1 where they apply), sizes 1, 7
// and 1000003, broadcast along each axis, views folded into index arithmetic,
// several outputs. Outputs are poisoned before each run (Executable::run).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "gpu_test_util.h"
#include "ir/compare.h"
#include "ir/graph.h"
#include "ir/interpreter.h"
#include "ir/printer.h"
#include "runtime/program.h"

namespace kiln {
namespace {

using ir::OpKind;

// Compiles and runs `g` on random inputs and checks every output.
void expect_matches_reference(const ir::Graph& g, uint64_t seed = 7) {
  runtime::Program program = runtime::Program::compile(g);
  ASSERT_FALSE(program.kernels().empty()) << ir::print(g);
  std::vector<HostTensor> inputs = ir::random_inputs(g, seed);
  std::vector<HostTensor> want = ir::evaluate(g, inputs);
  std::vector<HostTensor> got = program.run(inputs);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    Comparison c = compare(got[i], want[i]);
    EXPECT_TRUE(c.passed) << "output " << i << ": " << c.str() << "\n" << ir::print(g);
  }
}

ir::Attrs attrs_with(const std::string& name, ir::AttrValue v) {
  ir::Attrs a;
  a.set(name, std::move(v));
  return a;
}

const DType kFloatTypes[] = {DType::f32, DType::f16, DType::bf16};
const int64_t kSizes[] = {1, 7, 1000003};

TEST(PointwiseGpu, EveryUnaryOpEveryFloatTypeOddSizes) {
  KILN_REQUIRE_GPU();
  const OpKind unary[] = {OpKind::Neg,  OpKind::Abs,     OpKind::Exp,  OpKind::Exp2, OpKind::Log,  OpKind::Sqrt,
                          OpKind::Rsqrt, OpKind::Tanh, OpKind::Sigmoid, OpKind::Relu, OpKind::Gelu, OpKind::Silu};
  for (DType dt : kFloatTypes)
    for (int64_t n : kSizes)
      for (OpKind op : unary) {
        ir::Graph g("unary");
        ir::Value* x = g.add_input("x", {dt, {n}});
        // log, sqrt and rsqrt see positive values; the others see both signs.
        bool positive = op == OpKind::Log || op == OpKind::Sqrt || op == OpKind::Rsqrt;
        ir::Value* in = positive ? g.add(OpKind::Abs, {x}) : x;
        g.add_output(g.add(op, {in}));
        SCOPED_TRACE(std::string(ir::op_name(op)) + " " + std::string(dtype_name(dt)) + " n=" + std::to_string(n));
        expect_matches_reference(g);
      }
}

TEST(PointwiseGpu, GeluTanhApproximation) {
  KILN_REQUIRE_GPU();
  for (DType dt : kFloatTypes) {
    ir::Graph g("gelu_tanh");
    ir::Value* x = g.add_input("x", {dt, {3, 1001}});
    g.add_output(g.add(OpKind::Gelu, {x}, attrs_with("approximate", std::string("tanh"))));
    expect_matches_reference(g);
  }
}

// A 16-bit gelu (erf) runs the short form of the helper kiln_gelu_erf_short, not erfcf:
// over every value of the dtype (infinities and NaN too) each result must be the
// reference's or its neighbour (the fp32 value may fall on the other side of a rounding
// boundary), and neighbours must be rare.
TEST(PointwiseGpu, GeluErfOfEverySixteenBitValue) {
  KILN_REQUIRE_GPU();
  for (DType dt : {DType::f16, DType::bf16}) {
    SCOPED_TRACE(std::string(dtype_name(dt)));
    std::vector<double> every;
    for (uint32_t bits = 0; bits < 65536; ++bits) {
      const auto b = static_cast<uint16_t>(bits);
      every.push_back(dt == DType::f16 ? half_bits_to_float(b) : bf16_bits_to_float(b));
    }
    ir::Graph g("gelu_erf");
    ir::Value* x = g.add_input("x", {dt, {static_cast<int64_t>(every.size())}});
    g.add_output(g.add(OpKind::Gelu, {x}, attrs_with("approximate", std::string("none"))));
    runtime::Program program = runtime::Program::compile(g);
    ASSERT_NE(program.kernels().at(0).source.find("kiln_gelu_erf_short("), std::string::npos);
    const std::vector<HostTensor> inputs = {HostTensor({dt, {static_cast<int64_t>(every.size())}}, every)};
    const HostTensor want = ir::evaluate(g, inputs).at(0);
    const HostTensor got = program.run(inputs).at(0);
    int neighbours = 0;
    for (size_t i = 0; i < every.size(); ++i) {
      const double w = want.values[i], v = got.values[i];
      if (std::isnan(w) || std::isnan(v)) {
        EXPECT_TRUE(std::isnan(w) && std::isnan(v)) << "gelu(" << every[i] << "): got " << v << ", want " << w;
        continue;
      }
      if (v == w) continue;
      // The kernels' approximate exp2 flushes values below fp32's least normal to zero, as
      // every Kiln kernel may: Phi(-|x|) there, |x| < 16, so results below 16 times it.
      if (v == 0 && std::fabs(w) < 0x1p-122) continue;
      // One spacing of the dtype at |w| (10 or 7 stored mantissa bits; subnormals: the least).
      const int mantissa = dt == DType::f16 ? 10 : 7, least = dt == DType::f16 ? -24 : -133;
      const double spacing = std::ldexp(1.0, std::max(std::ilogb(std::max(std::fabs(w), 1e-300)) - mantissa, least));
      EXPECT_LE(std::fabs(v - w), spacing) << "gelu(" << every[i] << "): got " << v << ", want " << w;
      ++neighbours;
    }
    EXPECT_LT(neighbours, 650) << "results one spacing off, of 65536";  // under 1%
  }
}

TEST(PointwiseGpu, BinaryOpsBroadcastAlongEachAxis) {
  KILN_REQUIRE_GPU();
  const OpKind binary[] = {OpKind::Add, OpKind::Sub, OpKind::Mul, OpKind::Div, OpKind::Max, OpKind::Min, OpKind::Pow};
  const Shape full = {5, 7, 9};
  const Shape partial[] = {{5, 7, 9}, {1, 7, 9}, {5, 1, 9}, {5, 7, 1}, {7, 1}, {9}, {}};
  for (DType dt : kFloatTypes)
    for (const Shape& bs : partial)
      for (OpKind op : binary) {
        ir::Graph g("binary");
        ir::Value* a = g.add_input("a", {dt, full});
        ir::Value* b = g.add_input("b", {dt, bs});
        ir::Value* lhs = op == OpKind::Pow ? g.add(OpKind::Abs, {a}) : a;
        g.add_output(g.add(op, {lhs, b}));
        // The broadcast operand on the left too.
        ir::Value* rhs_first = op == OpKind::Pow ? g.add(OpKind::Abs, {b}) : b;
        g.add_output(g.add(op, {rhs_first, a}));
        SCOPED_TRACE(std::string(ir::op_name(op)) + " " + std::string(dtype_name(dt)) + " b" + shape_str(bs));
        expect_matches_reference(g);
      }
}

TEST(PointwiseGpu, ComparisonsAndSelect) {
  KILN_REQUIRE_GPU();
  const OpKind compares[] = {OpKind::Lt, OpKind::Le, OpKind::Gt, OpKind::Ge, OpKind::Eq, OpKind::Ne};
  for (DType dt : kFloatTypes)
    for (OpKind op : compares) {
      ir::Graph g("compare");
      ir::Value* a = g.add_input("a", {dt, {13, 77}});
      ir::Value* b = g.add_input("b", {dt, {77}});
      ir::Value* c = g.add(op, {a, b});
      g.add_output(c);  // an i1 output
      g.add_output(g.add(OpKind::Select, {c, a, b}));
      SCOPED_TRACE(std::string(ir::op_name(op)) + " " + std::string(dtype_name(dt)));
      expect_matches_reference(g);
    }
}

// NaN compares false however the compiler knows its operand's sign: a square and an abs
// of log(x) (NaN where x < 0) against zero, which ptxas once folded to true.
TEST(PointwiseGpu, OrderedComparesOfNaNAreFalseWhereTheOperandCannotBeNegative) {
  KILN_REQUIRE_GPU();
  ir::Graph g("nan_compare");
  ir::Value* x = g.add_input("x", {DType::f32, {1001}});
  ir::Value* n = g.add(OpKind::Log, {x});
  ir::Value* zero = g.constant(0.0, DType::f32);
  ir::Value* square = g.add(OpKind::Mul, {n, n});
  ir::Value* size = g.add(OpKind::Abs, {n});
  g.add_output(g.add(OpKind::Le, {zero, square}));
  g.add_output(g.add(OpKind::Ge, {size, zero}));
  g.add_output(g.add(OpKind::Gt, {size, g.constant(-1.0, DType::f32)}));
  g.add_output(g.add(OpKind::Eq, {size, size}));
  const std::vector<HostTensor> inputs = ir::random_inputs(g, 7);
  int negative = 0;
  for (double v : inputs[0].values) negative += v < 0;
  ASSERT_GT(negative, 100) << "the inputs must hold negative values for log to give NaN";
  expect_matches_reference(g);
}

TEST(PointwiseGpu, IntegerOps) {
  KILN_REQUIRE_GPU();
  const OpKind ops[] = {OpKind::Add, OpKind::Sub, OpKind::Mul, OpKind::Div, OpKind::Max, OpKind::Min};
  for (OpKind op : ops) {
    ir::Graph g("int");
    ir::Value* a = g.add_input("a", {DType::i32, {1000003}});
    ir::Value* b = g.add_input("b", {DType::i32, {1000003}});
    g.add_output(g.add(OpKind::Abs, {g.add(op, {a, g.add(OpKind::Neg, {b})})}));
    SCOPED_TRACE(std::string(ir::op_name(op)));
    expect_matches_reference(g);
  }
}

TEST(PointwiseGpu, Casts) {
  KILN_REQUIRE_GPU();
  const DType all[] = {DType::f32, DType::f16, DType::bf16, DType::i32};
  for (DType from : all)
    for (DType to : all) {
      if (from == to) continue;
      ir::Graph g("cast");
      ir::Value* x = g.add_input("x", {from, {7, 131}});
      ir::Value* scaled = is_float(from) ? g.add(OpKind::Mul, {x, g.constant(37.0, from)}) : x;
      g.add_output(g.add(OpKind::Cast, {scaled}, {}, TensorType{to, {7, 131}}));
      SCOPED_TRACE(std::string(dtype_name(from)) + " -> " + std::string(dtype_name(to)));
      expect_matches_reference(g);
    }
}

TEST(PointwiseGpu, ChainWithBroadcastConstantsAndTwoOutputs) {
  KILN_REQUIRE_GPU();
  for (DType dt : kFloatTypes) {
    // gelu_tanh(x * s + b) + r, also returning x * s + b.
    ir::Graph g("chain");
    ir::Value* x = g.add_input("x", {dt, {129, 1000}});
    ir::Value* r = g.add_input("r", {dt, {129, 1000}});
    ir::Value* s = g.add_input("s", {dt, {1000}});
    ir::Value* b = g.add_input("b", {dt, {1000}});
    ir::Value* h = g.add(OpKind::Add, {g.add(OpKind::Mul, {x, s}), b});
    ir::Value* y = g.add(OpKind::Add, {g.add(OpKind::Gelu, {h}, attrs_with("approximate", std::string("tanh"))), r});
    g.add_output(y);
    g.add_output(h);
    expect_matches_reference(g);
  }
}

TEST(PointwiseGpu, ViewsFoldIntoIndexing) {
  KILN_REQUIRE_GPU();
  for (DType dt : kFloatTypes) {
    ir::Graph g("views");
    ir::Value* x = g.add_input("x", {dt, {33, 65}});
    ir::Value* y = g.add_input("y", {dt, {65, 33}});
    ir::Attrs perm = attrs_with("perm", std::vector<int64_t>{1, 0});
    ir::Value* xt = g.add(OpKind::Transpose, {x}, perm);                       // [65,33]
    ir::Value* sum = g.add(OpKind::Add, {xt, y});                              // [65,33]
    ir::Value* flat = g.add(OpKind::Reshape, {sum}, {}, TensorType{dt, {2145}});
    ir::Value* col = g.add_input("c", {dt, {65, 1}});
    ir::Value* bc = g.add(OpKind::Broadcast, {col}, {}, TensorType{dt, {65, 33}});
    g.add_output(g.add(OpKind::Exp, {flat}));
    g.add_output(g.add(OpKind::Mul, {sum, bc}));
    expect_matches_reference(g);
  }
}

TEST(PointwiseGpu, RandomShapesAndBroadcasts) {
  KILN_REQUIRE_GPU();
  std::mt19937 rng(2026);
  std::uniform_int_distribution<int64_t> dim(1, 37), rank(1, 4), coin(0, 2);
  for (int trial = 0; trial < 24; ++trial) {
    Shape full;
    for (int64_t i = 0, r = rank(rng); i < r; ++i) full.push_back(dim(rng));
    Shape part = full;
    for (int64_t& d : part)
      if (coin(rng) == 0) d = 1;
    DType dt = kFloatTypes[trial % 3];
    ir::Graph g("random");
    ir::Value* a = g.add_input("a", {dt, full});
    ir::Value* b = g.add_input("b", {dt, part});
    ir::Value* t = g.add(OpKind::Sigmoid, {g.add(OpKind::Sub, {a, b})});
    g.add_output(g.add(OpKind::Mul, {t, b}));
    SCOPED_TRACE(shape_str(full) + " with " + shape_str(part));
    expect_matches_reference(g, 100 + trial);
  }
}

}  // namespace
}  // namespace kiln
