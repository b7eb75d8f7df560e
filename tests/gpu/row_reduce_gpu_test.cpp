// Fused row-reduction kernels on the GPU against the reference interpreter: softmax,
// log_softmax, LayerNorm, RMSNorm, add+RMSNorm and row sum / max / min / mean, in f32,
// f16 and bf16, for row lengths from 1 to 262144 (odd ones take scalar loads, long
// ones a block per row, the longest are streamed), with one row and with several.
// Each run is checked twice: against the interpreter, and bit for bit against a
// second run (fixed reduction order, no atomics).
#include <gtest/gtest.h>

#include <algorithm>

#include "../unit/row_reduce_test_graphs.h"
#include "gpu_test_util.h"
#include "reduction_bound.h"
#include "ir/compare.h"
#include "ir/interpreter.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "runtime/program.h"

namespace kiln {
namespace {

const long kRowLengths[] = {1, 3, 127, 128, 1000, 4096, 5120, 50257, 65536, 262144};
const char* const kDtypes[] = {"f32", "f16", "bf16"};
constexpr long kElementsPerCase = 2 << 20;  // keeps the reference interpreter quick

using gpu_test::reduction_bound;

void expect_case_matches(const std::string& which, const std::string& dt, long rows, long n) {
  SCOPED_TRACE(which + " " + dt + " rows=" + std::to_string(rows) + " n=" + std::to_string(n));
  ir::Graph g = ir::parse(row_reduce_test::graph_text(which, dt, std::to_string(rows), n), "row_reduce_gpu_test");
  runtime::Program program = runtime::Program::compile(g);
  ASSERT_EQ(program.kernels().size(), 1u) << ir::print(program.graph());
  // A row of one element has nothing to reduce: simplify takes the reductions away.
  const ir::KernelKind want_kind = n == 1 ? ir::KernelKind::Pointwise : ir::KernelKind::RowReduce;
  EXPECT_EQ(program.kernels()[0].kernel.kind, want_kind);
  std::vector<HostTensor> inputs = ir::random_inputs(g, 11);
  std::vector<HostTensor> want = ir::evaluate(g, inputs);
  std::vector<HostTensor> got = program.run(inputs);
  std::vector<HostTensor> again = program.run(inputs);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    Comparison c = compare(got[i], want[i], reduction_bound(which, inputs[0], rows, n));
    EXPECT_TRUE(c.passed) << "output " << i << ": " << c.str() << "\n" << ir::print(program.kernels()[0].kernel);
    EXPECT_TRUE(got[i].values == again[i].values) << "output " << i << " differs between two runs";
  }
}

void expect_matches_everywhere(const std::string& which) {
  for (const char* dt : kDtypes)
    for (long n : kRowLengths) {
      expect_case_matches(which, dt, 1, n);
      expect_case_matches(which, dt, std::clamp(kElementsPerCase / n, 2L, 300L) | 1, n);  // odd, several rows
    }
}

TEST(RowReduceGpu, Softmax) {
  KILN_REQUIRE_GPU();
  expect_matches_everywhere("softmax");
}

TEST(RowReduceGpu, LogSoftmax) {
  KILN_REQUIRE_GPU();
  expect_matches_everywhere("log_softmax");
}

TEST(RowReduceGpu, LayerNorm) {
  KILN_REQUIRE_GPU();
  expect_matches_everywhere("layer_norm");
}

TEST(RowReduceGpu, RmsNorm) {
  KILN_REQUIRE_GPU();
  expect_matches_everywhere("rms_norm");
}

TEST(RowReduceGpu, AddRmsNormBothOutputs) {
  KILN_REQUIRE_GPU();
  expect_matches_everywhere("add_rms_norm");
}

TEST(RowReduceGpu, RowSumMaxMinMean) {
  KILN_REQUIRE_GPU();
  for (const char* which : {"sum", "max", "min", "mean"}) expect_matches_everywhere(which);
}

TEST(RowReduceGpu, HigherRankRows) {
  KILN_REQUIRE_GPU();
  ir::Graph g = ir::parse(row_reduce_test::graph_text("layer_norm", "bf16", "3,5", 700), "row_reduce_gpu_test");
  runtime::Program program = runtime::Program::compile(g);
  std::vector<HostTensor> inputs = ir::random_inputs(g, 3);
  Comparison c = compare(program.run(inputs)[0], ir::evaluate(g, inputs)[0]);
  EXPECT_TRUE(c.passed) << c.str();
}

TEST(RowReduceGpu, ReductionsOfTheSameRowsInOneKernel) {
  KILN_REQUIRE_GPU();
  for (const char* dt : {"f32", "f16"})
    for (long n : {1000L, 65536L}) {
      SCOPED_TRACE(std::string(dt) + " n=" + std::to_string(n));
      const std::string full = std::string(dt) + "[37," + std::to_string(n) + "]";
      const std::string per_row = std::string(dt) + "[37]";
      ir::Graph g = ir::parse("func @siblings(%x: " + full + ") -> (" + per_row + ", " + per_row + ", " + full +
                                  ") {\n  %s = max %x {axis = [1]} : " + per_row + "\n  %m = mean %x {axis = [1]} : " +
                                  per_row + "\n  %y = softmax %x {axis = -1} : " + full + "\n  return %s, %m, %y\n}\n",
                              "siblings");
      runtime::Program program = runtime::Program::compile(g);
      ASSERT_EQ(program.kernels().size(), 1u) << ir::print(program.graph());
      std::vector<HostTensor> inputs = ir::random_inputs(g, 5);
      std::vector<HostTensor> want = ir::evaluate(g, inputs);
      std::vector<HostTensor> got = program.run(inputs);
      ASSERT_EQ(got.size(), 3u);
      for (size_t i = 0; i < got.size(); ++i) {
        const double bound = i == 1 ? reduction_bound("mean", inputs[0], 37, n) : -1;
        Comparison c = compare(got[i], want[i], bound);
        EXPECT_TRUE(c.passed) << "output " << i << ": " << c.str();
      }
    }
}

}  // namespace
}  // namespace kiln
