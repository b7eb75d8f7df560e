// Column and full reductions on the GPU against the reference interpreter: column
// sum / max / min / mean / logsumexp / var and full reductions in f32, f16 and bf16,
// softmax and norms over a leading axis, for reduced and kept sizes among 1, 3, 127, 128, 1000, 4096, 5120 and 50257 (about 2M elements at
// most, so the reference stays quick) and one 65536-row case; a fused prologue and
// epilogue; every tile candidate of one kernel; a long rank-1 sum. Each run is checked
// twice: against the interpreter, and bit for bit against a second run (fixed order,
// no floating-point atomics; the split-K tickets must be back at zero after a run).
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <sstream>

#include "../unit/col_reduce_test_graphs.h"
#include "gpu_test_util.h"
#include "ir/compare.h"
#include "ir/interpreter.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "passes/pass_manager.h"
#include "runtime/program.h"

namespace kiln {
namespace {

// (K reduced, N kept): odd and even, one row or one column, tall and narrow, wide.
const long kShapes[][2] = {{1, 50257}, {3, 1000}, {127, 5120}, {128, 4096}, {1000, 127}, {4096, 128},
                           {5120, 3},  {50257, 1}, {1000, 1000}, {3, 3},    {65536, 32}};
const char* const kDtypes[] = {"f32", "f16", "bf16"};

void expect_program_matches(const ir::Graph& g, runtime::Program& program, uint64_t seed) {
  std::vector<HostTensor> inputs = ir::random_inputs(g, seed);
  std::vector<HostTensor> want = ir::evaluate(g, inputs);
  std::vector<HostTensor> got = program.run(inputs);
  std::vector<HostTensor> again = program.run(inputs);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    Comparison c = compare(got[i], want[i]);
    EXPECT_TRUE(c.passed) << "output " << i << ": " << c.str() << "\n" << ir::print(program.kernels()[0].kernel);
    EXPECT_TRUE(got[i].values == again[i].values) << "output " << i << " differs between two runs";
  }
}

void expect_case_matches(const std::string& text, ir::KernelKind kind) {
  SCOPED_TRACE(text);
  ir::Graph g = ir::parse(text, "col_reduce_gpu_test");
  runtime::Program program = runtime::Program::compile(g);
  ASSERT_EQ(program.kernels().size(), 1u) << ir::print(program.graph());
  EXPECT_EQ(program.kernels()[0].kernel.kind, kind) << ir::print(program.kernels()[0].kernel);
  expect_program_matches(g, program, 17);
}

// A column of one row has nothing to reduce: simplify leaves a pointwise copy.
void expect_columns_match(const std::string& op) {
  for (const char* dt : kDtypes)
    for (const auto& s : kShapes)
      expect_case_matches(col_reduce_test::column_graph(op, dt, s[0], s[1]),
                          s[0] == 1 && op != "var" ? ir::KernelKind::Pointwise : ir::KernelKind::ColReduce);
}

// Every full reduction of a matrix is a col_reduce kernel with one column.
void expect_full_match(const std::string& op) {
  for (const char* dt : kDtypes)
    for (const auto& s : kShapes)
      expect_case_matches(col_reduce_test::full_graph(op, dt, s[0], s[1]), ir::KernelKind::ColReduce);
}

TEST(ColReduceGpu, ColumnSum) {
  KILN_REQUIRE_GPU();
  expect_columns_match("sum");
}

TEST(ColReduceGpu, ColumnMax) {
  KILN_REQUIRE_GPU();
  expect_columns_match("max");
}

TEST(ColReduceGpu, ColumnMean) {
  KILN_REQUIRE_GPU();
  expect_columns_match("mean");
}

TEST(ColReduceGpu, ColumnMin) {
  KILN_REQUIRE_GPU();
  for (const char* dt : kDtypes) expect_case_matches(col_reduce_test::column_graph("min", dt, 4096, 128),
                                                     ir::KernelKind::ColReduce);
}

TEST(ColReduceGpu, ColumnLogSumExp) {
  KILN_REQUIRE_GPU();
  expect_columns_match("logsumexp");
}

TEST(ColReduceGpu, ColumnVar) {
  KILN_REQUIRE_GPU();
  expect_columns_match("var");
}

TEST(ColReduceGpu, FullLogSumExpAndVar) {
  KILN_REQUIRE_GPU();
  expect_full_match("logsumexp");
  expect_full_match("var");
}

// Softmax, log-softmax and layer norm over a leading axis run on column kernels.
TEST(ColReduceGpu, NormalisationsOverALeadingAxis) {
  KILN_REQUIRE_GPU();
  for (const char* dt : kDtypes)
    for (const char* text : {"func @f(%x: {t}[1000,37]) -> ({t}[1000,37]) {{\n  %y = softmax %x {{axis = 0}} : {t}[1000,37]\n"
                             "  return %y\n}}\n",
                             "func @f(%x: {t}[7,3,33,5]) -> ({t}[7,3,33,5]) {{\n  %y = log_softmax %x {{axis = 0}} : "
                             "{t}[7,3,33,5]\n  return %y\n}}\n",
                             "func @f(%x: {t}[517,9], %w: {t}[517]) -> ({t}[517,9]) {{\n  %y = layer_norm %x, %w, %w "
                             "{{axis = 0, eps = 1e-05}} : {t}[517,9]\n  return %y\n}}\n"}) {
      const std::string graph = fmt::format(fmt::runtime(text), fmt::arg("t", dt));
      SCOPED_TRACE(graph);
      ir::Graph g = ir::parse(graph, "col_reduce_gpu_test");
      runtime::Program program = runtime::Program::compile(g);
      expect_program_matches(g, program, 23);
    }
}

TEST(ColReduceGpu, FullSum) {
  KILN_REQUIRE_GPU();
  expect_full_match("sum");
}

TEST(ColReduceGpu, FullMax) {
  KILN_REQUIRE_GPU();
  expect_full_match("max");
}

TEST(ColReduceGpu, FullMean) {
  KILN_REQUIRE_GPU();
  expect_full_match("mean");
}

TEST(ColReduceGpu, LongRankOneSumIsSplitAcrossTheGpu) {
  KILN_REQUIRE_GPU();
  for (const char* dt : {"f32", "bf16"}) {
    const std::string t = std::string(dt) + "[]";
    expect_case_matches("func @long(%x: " + std::string(dt) + "[33554432]) -> (" + t +
                            ") {\n  %s = sum %x {axis = [0]} : " + t + "\n  return %s\n}\n",
                        ir::KernelKind::ColReduce);
  }
}

TEST(ColReduceGpu, FusedPrologueAndEpilogue) {
  KILN_REQUIRE_GPU();
  expect_case_matches(R"(func @f(%x: f16[3000,1000], %r: f16[3000,1], %w: bf16[1000]) -> (bf16[1000], f32[1,1000]) {
  %a = add %x, %r : f16[3000,1000]
  %f = cast %a : f32[3000,1000]
  %q = mul %f, %f : f32[3000,1000]
  %s = mean %q {axis = [0], keepdim = true} : f32[1,1000]
  %m = max %a {axis = [0], keepdim = true} : f16[1,1000]
  %c = cast %s : bf16[1,1000]
  %rc = reshape %c : bf16[1000]
  %y = mul %rc, %w : bf16[1000]
  %o = cast %m : f32[1,1000]
  return %y, %o
})",
                      ir::KernelKind::ColReduce);
}

TEST(ColReduceGpu, EveryTileCandidateMatches) {
  KILN_REQUIRE_GPU();
  // Every candidate of a sum and a max (about 400 and 120); of the multi-float states
  // (logsumexp, var) every eighth, split ones and not, which keeps the test's time in bounds.
  for (const std::string& text : {col_reduce_test::column_graph("sum", "f16", 1000, 520),
                                  col_reduce_test::full_graph("max", "f32", 1000, 520),
                                  col_reduce_test::column_graph("logsumexp", "bf16", 1000, 520),
                                  col_reduce_test::column_graph("var", "f32", 1000, 520)}) {
    const bool sampled = text.find("logsumexp") != std::string::npos || text.find("var") != std::string::npos;
    ir::Graph fused = ir::parse(text, "col_reduce_gpu_test");
    std::ostringstream quiet;
    passes::PassManager("decompose,simplify,cse,dce,fuse", {}, quiet).run(fused);
    ASSERT_EQ(fused.groups().size(), 1u);
    runtime::ProgramOptions options;
    options.pipeline = "";
    std::vector<ir::TileConfig> configs = ir::candidates(runtime::Program::compile(fused, options).kernels()[0].kernel);
    ASSERT_FALSE(configs.empty());
    for (size_t i = 0; i < configs.size(); ++i) {
      const ir::TileConfig& c = configs[i];
      if (sampled && i % 8 != 0) continue;
      SCOPED_TRACE(text + c.str());
      fused.group(0).tile = c.to_attrs();
      runtime::Program program = runtime::Program::compile(fused, options);
      ASSERT_EQ(program.kernels()[0].kernel.config, c);
      expect_program_matches(fused, program, 5);
    }
  }
}

}  // namespace
}  // namespace kiln
