// Reductions over any set of axes on the GPU against the reference interpreter: sum,
// max, min, mean, logsumexp and var over a middle axis, outer and inner axes, two axes
// apart of a rank-4 tensor and all axes, with and without keepdim, in f32, f16 and
// bf16, on odd sizes ([3, 1000, 7], [5, 33, 17, 9], ...); every tile candidate of a
// middle-axis and a row-like kernel (the split path included); tall column means; and
// composites over a non-innermost axis. Each run is checked against the interpreter
// (random inputs, the dtype's bound, grown for sums with cancelling terms) and bit for
// bit against a second run (fixed order, no floating-point atomics).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <utility>
#include <vector>
#include <sstream>

#include "../unit/col_reduce_test_graphs.h"
#include "../unit/reduce_axes_test_graphs.h"
#include "gpu_test_util.h"
#include "ir/compare.h"
#include "ir/interpreter.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "passes/pass_manager.h"
#include "runtime/program.h"

namespace kiln {
namespace {

using reduce_axes_test::reduce_graph;

const char* const kDtypes[] = {"f32", "f16", "bf16"};

double l2(const HostTensor& t) {
  double s = 0;
  for (double v : t.values) s += v * v;
  return std::sqrt(s);
}

// A sum whose terms cancel is ill-conditioned: fp32 accumulation is exact to a few
// ulps of the sum of |x|, not of the (small) result. The bound grows with
// ||sum |x||| / ||sum x||, computed by the interpreter over the same axes.
double bound_for(const std::string& op, const reduce_axes_test::AxesCase& c,
                 const HostTensor& x, const HostTensor& want) {
  const double bound = default_rel_l2_bound(x.type.dtype);
  if (op != "sum" && op != "mean") return bound;
  std::string axes;
  for (size_t i = 0; i < c.axes.size(); ++i) axes += (i ? ", " : "") + std::to_string(c.axes[i]);
  const std::string in = "f32" + reduce_axes_test::dims_str(c.shape);
  const std::string out = "f32" + reduce_axes_test::dims_str(reduce_axes_test::reduced_shape(c.shape, c.axes, false));
  ir::Graph abs_sum = ir::parse("func @a(%x: " + in + ") -> (" + out + ") {\n  %a = abs %x : " + in + "\n  %s = " + op +
                                    " %a {axis = [" + axes + "]} : " + out + "\n  return %s\n}\n",
                                "reduce_axes_gpu_test");
  HostTensor x32 = x;
  x32.type.dtype = DType::f32;
  const double denom = l2(want);
  return denom > 0 ? bound * std::max(1.0, l2(ir::evaluate(abs_sum, {x32}).at(0)) / denom) : bound;
}

void expect_program_matches(const ir::Graph& g, runtime::Program& program, uint64_t seed,
                            const std::function<double(const HostTensor&, const HostTensor&)>& bound = {}) {
  std::vector<HostTensor> inputs = ir::random_inputs(g, seed);
  std::vector<HostTensor> want = ir::evaluate(g, inputs);
  std::vector<HostTensor> got = program.run(inputs);
  std::vector<HostTensor> again = program.run(inputs);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    Comparison c = compare(got[i], want[i], bound ? bound(inputs[0], want[i]) : -1);
    std::string kernels;
    for (const auto& k : program.kernels()) kernels += ir::print(k.kernel);
    EXPECT_TRUE(c.passed) << "output " << i << ": " << c.str() << "\n" << kernels;
    EXPECT_TRUE(got[i].values == again[i].values) << "output " << i << " differs between two runs";
  }
}

void expect_op_matches(const std::string& op) {
  for (const char* dt : kDtypes)
    for (const auto& c : reduce_axes_test::kCases)
      for (bool keepdim : {false, true}) {
        const std::string text = reduce_graph(op, dt, c.shape, c.axes, keepdim);
        SCOPED_TRACE(text);
        ir::Graph g = ir::parse(text, "reduce_axes_gpu_test");
        runtime::Program program = runtime::Program::compile(g);
        ASSERT_EQ(program.kernels().size(), 1u) << ir::print(program.graph());
        expect_program_matches(g, program, 23, [&](const HostTensor& x, const HostTensor& want) {
          return bound_for(op, c, x, want);
        });
      }
}

TEST(ReduceAxesGpu, Sum) {
  KILN_REQUIRE_GPU();
  expect_op_matches("sum");
}

TEST(ReduceAxesGpu, Max) {
  KILN_REQUIRE_GPU();
  expect_op_matches("max");
}

TEST(ReduceAxesGpu, Min) {
  KILN_REQUIRE_GPU();
  expect_op_matches("min");
}

TEST(ReduceAxesGpu, Mean) {
  KILN_REQUIRE_GPU();
  expect_op_matches("mean");
}

TEST(ReduceAxesGpu, LogSumExp) {
  KILN_REQUIRE_GPU();
  expect_op_matches("logsumexp");
}

TEST(ReduceAxesGpu, Var) {
  KILN_REQUIRE_GPU();
  expect_op_matches("var");
}

// Every candidate of a middle-axis and of a row-like kernel, split or not.
TEST(ReduceAxesGpu, EveryTileCandidateMatches) {
  KILN_REQUIRE_GPU();
  for (const std::string& text : {reduce_graph("sum", "f16", {6, 777, 40}, {1}, true),
                                  reduce_graph("logsumexp", "f32", {5, 300, 17, 64}, {1, 3}, false),
                                  reduce_graph("var", "bf16", {3, 1000, 8}, {0, 2}, false)}) {
    ir::Graph fused = ir::parse(text, "reduce_axes_gpu_test");
    std::ostringstream quiet;
    passes::PassManager("decompose,simplify,cse,dce,fuse", {}, quiet).run(fused);
    ASSERT_EQ(fused.groups().size(), 1u);
    runtime::ProgramOptions options;
    options.pipeline = "";
    std::vector<ir::TileConfig> configs = ir::candidates(runtime::Program::compile(fused, options).kernels()[0].kernel);
    ASSERT_FALSE(configs.empty());
    for (const ir::TileConfig& c : configs) {
      SCOPED_TRACE(text + c.str());
      fused.group(0).tile = c.to_attrs();
      runtime::Program program = runtime::Program::compile(fused, options);
      ASSERT_EQ(program.kernels()[0].kernel.config, c);
      expect_program_matches(fused, program, 5, [](const HostTensor& x, const HostTensor&) {
        return 4 * default_rel_l2_bound(x.type.dtype);  // f16 sums of up to 777 terms of either sign
      });
    }
  }
}

TEST(ReduceAxesGpu, TallColumnMeans) {
  KILN_REQUIRE_GPU();
  const std::vector<std::pair<long, long>> shapes = {{65536, 256}, {50000, 1024}, {40000, 7}};
  for (const auto& [rows, cols] : shapes) {
    const std::string text = col_reduce_test::column_graph("mean", "f32", rows, cols);
    SCOPED_TRACE(text);
    ir::Graph g = ir::parse(text, "reduce_axes_gpu_test");
    runtime::Program program = runtime::Program::compile(g);
    ASSERT_EQ(program.kernels().size(), 1u);
    EXPECT_GT(program.kernels()[0].kernel.config.k_split, 1);
    reduce_axes_test::AxesCase c{{rows, cols}, {0}};
    expect_program_matches(g, program, 3,
                           [&](const HostTensor& x, const HostTensor& want) { return bound_for("mean", c, x, want); });
  }
}

TEST(ReduceAxesGpu, MiddleAxisWithAFusedPrologueAndEpilogue) {
  KILN_REQUIRE_GPU();
  ir::Graph g = ir::parse(reduce_axes_test::kFusedMiddleAxis, "reduce_axes_gpu_test");
  runtime::Program program = runtime::Program::compile(g);
  ASSERT_EQ(program.kernels().size(), 1u);
  expect_program_matches(g, program, 31);
}

TEST(ReduceAxesGpu, CompositesOverANonInnermostAxis) {
  KILN_REQUIRE_GPU();
  for (const std::string& text : {
           std::string(R"(func @f(%x: f32[33,1,7,4]) -> (f32[33,1,1,4]) {
  %0 = logsumexp %x {axis = [2], keepdim = true} : f32[33,1,1,4]
  return %0
})"),
           std::string(R"(func @f(%x: f32[128,9,1,1]) -> (f32[128,1,1,1]) {
  %2 = logsumexp %x {axis = [1], keepdim = true} : f32[128,1,1,1]
  return %2
})"),
           std::string(R"(func @f(%x: f16[4,300,24]) -> (f16[4,300,24]) {
  %y = softmax %x {axis = 1} : f16[4,300,24]
  return %y
})"),
           std::string(R"(func @f(%x: bf16[4,300,24]) -> (bf16[4,300,24]) {
  %y = log_softmax %x {axis = 0} : bf16[4,300,24]
  return %y
})"),
           std::string(R"(func @f(%x: f32[4,300,24], %w: f32[300], %b: f32[300]) -> (f32[4,300,24]) {
  %y = layer_norm %x, %w, %b {axis = 1, eps = 1e-05} : f32[4,300,24]
  return %y
})"),
           std::string(R"(func @f(%x: f16[4,300,24], %w: f16[300]) -> (f16[4,300,24]) {
  %y = rms_norm %x, %w {axis = 1, eps = 1e-06} : f16[4,300,24]
  return %y
})"),
       }) {
    SCOPED_TRACE(text);
    ir::Graph g = ir::parse(text, "reduce_axes_gpu_test");
    runtime::Program program = runtime::Program::compile(g);
    expect_program_matches(g, program, 29);
  }
}

}  // namespace
}  // namespace kiln
