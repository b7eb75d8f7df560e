// The one-phase row kernels on the GPU against the reference interpreter: row
// logsumexp and var alone, softmax on inputs where a naive exp overflows (offset by
// 1000) and with -inf entries (masked scores), fp16 softmax near the largest fp16
// values, LayerNorm on rows far from zero, and
// every kind of tile config (sub-warp, warp and block rows; in registers and
// streamed). Each run is also compared bit for bit with a second run.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include "../unit/row_reduce_test_graphs.h"
#include "gpu_test_util.h"
#include "ir/compare.h"
#include "ir/interpreter.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "passes/pass_manager.h"
#include "runtime/program.h"

namespace kiln {
namespace {

std::string row_reduction(const std::string& op, const std::string& dt, long rows, long n) {
  const std::string full = dt + "[" + std::to_string(rows) + "," + std::to_string(n) + "]";
  const std::string per_row = dt + "[" + std::to_string(rows) + ",1]";
  return "func @" + op + "(%x: " + full + ") -> (" + per_row + ") {\n  %r = " + op +
         " %x {axis = [1], keepdim = true} : " + per_row + "\n  return %r\n}\n";
}

// Equal element by element, a NaN equal to a NaN.
bool same_values(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return false;
  for (size_t e = 0; e < a.size(); ++e)
    if (!(a[e] == b[e] || (std::isnan(a[e]) && std::isnan(b[e])))) return false;
  return true;
}

void expect_program_matches(runtime::Program& program, const ir::Graph& g, const std::vector<HostTensor>& inputs) {
  std::vector<HostTensor> want = ir::evaluate(g, inputs);
  std::vector<HostTensor> got = program.run(inputs), again = program.run(inputs);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    Comparison c = compare(got[i], want[i]);
    EXPECT_TRUE(c.passed) << "output " << i << ": " << c.str() << "\n" << ir::print(program.kernels()[0].kernel);
    EXPECT_TRUE(same_values(got[i].values, again[i].values)) << "output " << i << " differs between two runs";
  }
}

// `one_kernel`: the graph is one row_reduce kernel; false for rows of one element, which
// simplify leaves without a reduction (a logsumexp of one element is the element).
void expect_matches(const std::string& text, uint64_t seed = 5, bool one_kernel = true) {
  ir::Graph g = ir::parse(text, "online_reduce_gpu_test");
  runtime::Program program = runtime::Program::compile(g);
  if (one_kernel) {
    ASSERT_EQ(program.kernels().size(), 1u) << ir::print(program.graph());
    EXPECT_EQ(program.kernels()[0].kernel.kind, ir::KernelKind::RowReduce);
  }
  expect_program_matches(program, g, ir::random_inputs(g, seed));
}

const long kRowLengths[] = {1, 3, 127, 1000, 4096, 5120, 50257, 262144};

TEST(OnlineReduceGpu, RowLogSumExpAndVar) {
  KILN_REQUIRE_GPU();
  for (const char* op : {"logsumexp", "var"})
    for (const char* dt : {"f32", "f16", "bf16"})
      for (long n : kRowLengths) {
        SCOPED_TRACE(std::string(op) + " " + dt + " n=" + std::to_string(n));
        expect_matches(row_reduction(op, dt, n > 10000 ? 3 : 37, n), 5, n > 1 || std::string(op) == "var");
      }
}

TEST(OnlineReduceGpu, SoftmaxOfLargeAndMaskedScores) {
  KILN_REQUIRE_GPU();
  const double inf = std::numeric_limits<double>::infinity();
  for (const char* dt : {"f32", "f16"}) {
    for (long n : {1000L, 8192L, 262144L}) {
      SCOPED_TRACE(std::string(dt) + " n=" + std::to_string(n));
      ir::Graph g = ir::parse(row_reduce_test::graph_text("softmax", dt, "5", n), "online_reduce_gpu_test");
      runtime::Program program = runtime::Program::compile(g);
      std::vector<HostTensor> inputs = ir::random_inputs(g, 9);
      // Rows 0-1 near +1000 (exp overflows fp32 there), row 2 near -1000, rows 3-4 with
      // every third score masked to -inf (row 4 keeps only its last score).
      for (long j = 0; j < n; ++j) {
        std::vector<double>& v = inputs[0].values;
        v[j] += 1000;
        v[n + j] += 1000;
        v[2 * n + j] -= 1000;
        if (j % 3 == 0) v[3 * n + j] = -inf;
        if (j + 1 < n) v[4 * n + j] = -inf;
      }
      inputs[0] = HostTensor(inputs[0].type, inputs[0].values);
      expect_program_matches(program, g, inputs);
    }
  }
}

TEST(OnlineReduceGpu, SoftmaxOfRowsWithPlusInfinity) {
  // An infinite max is logsumexp's answer itself: beside a +inf the finite scores come
  // out 0 (softmax) or -inf (log_softmax) and the +inf NaN, as the reference says;
  // the sum's NaN (inf - inf) must not spread to the whole row.
  KILN_REQUIRE_GPU();
  const double inf = std::numeric_limits<double>::infinity();
  for (const char* op : {"softmax", "log_softmax"})
    for (const char* dt : {"f32", "f16"})
      for (long n : {5L, 1000L, 8192L}) {
        SCOPED_TRACE(std::string(op) + " " + dt + " n=" + std::to_string(n));
        ir::Graph g = ir::parse(row_reduce_test::graph_text(op, dt, "3", n), "online_reduce_gpu_test");
        runtime::Program program = runtime::Program::compile(g);
        std::vector<HostTensor> inputs = ir::random_inputs(g, 11);
        std::vector<double>& v = inputs[0].values;
        v[static_cast<size_t>(n / 2)] = inf;  // row 0: one +inf
        v[static_cast<size_t>(n)] = v[static_cast<size_t>(2 * n - 1)] = inf;  // row 1: two
        v[static_cast<size_t>(2 * n + 1)] = -inf;  // row 2: finite apart from one -inf
        inputs[0] = HostTensor(inputs[0].type, inputs[0].values);
        expect_program_matches(program, g, inputs);
      }
}

// fp16 maxima M whose M * log2(e) rounds to fp32 farthest from its exact value (by
// close to 2^-8, where it passes 2^16): an exp sum off by that rounding would be off
// by 0.27% in every output.
std::vector<double> maxima_that_round_worst(size_t count) {
  const double log2e = static_cast<float>(1.44269504088896341);
  std::vector<std::pair<double, double>> by_error;
  for (double m = 32768; m <= 65504; m += 32) {  // consecutive fp16 values
    const double exact = m * log2e;
    by_error.push_back({-std::fabs(exact - static_cast<float>(exact)), m});
  }
  std::sort(by_error.begin(), by_error.end());
  std::vector<double> out;
  for (size_t i = 0; i < count; ++i) out.push_back(by_error[i].second);
  return out;
}

TEST(OnlineReduceGpu, Fp16SoftmaxNearTheLargestValues) {
  KILN_REQUIRE_GPU();
  const std::vector<double> maxima = maxima_that_round_worst(4);
  for (long n : {4099L, 262144L}) {
    SCOPED_TRACE("n=" + std::to_string(n));
    ir::Graph g = ir::parse(row_reduce_test::graph_text("softmax", "f16", "4", n), "online_reduce_gpu_test");
    runtime::Program program = runtime::Program::compile(g);
    std::vector<HostTensor> inputs = ir::random_inputs(g, 3);
    // Row r: every 64th element at its maximum, the rest one fp16 step (32) below, so
    // each output is 64 / n or about 1e-14 times that: normal fp16 values, no ties.
    std::vector<double>& v = inputs[0].values;
    for (long r = 0; r < 4; ++r)
      for (long j = 0; j < n; ++j) v[r * n + j] = maxima[r] - (j % 64 == 0 ? 0 : 32);
    inputs[0] = HostTensor(inputs[0].type, v);
    std::vector<HostTensor> want = ir::evaluate(g, inputs), got = program.run(inputs);
    // fp16 rounding of the outputs alone is 3e-4; the 1e-2 default would hide 0.27%.
    Comparison c = compare(got[0], want[0], 1e-3);
    EXPECT_TRUE(c.passed) << c.str();
  }
}

TEST(OnlineReduceGpu, LayerNormOfRowsFarFromZero) {
  KILN_REQUIRE_GPU();
  for (long n : {768L, 4096L, 65536L}) {
    SCOPED_TRACE("n=" + std::to_string(n));
    ir::Graph g = ir::parse(row_reduce_test::graph_text("layer_norm", "f32", "7", n), "online_reduce_gpu_test");
    runtime::Program program = runtime::Program::compile(g);
    std::vector<HostTensor> inputs = ir::random_inputs(g, 4);
    // Rows near 10 with a variance near 0.37: E[x^2] is ~270 times the variance, so a
    // naive E[x^2] - E[x]^2 in fp32 would cancel most of its digits.
    for (double& v : inputs[0].values) v += 10;
    expect_program_matches(program, g, inputs);
  }
}

TEST(OnlineReduceGpu, EveryKindOfConfig) {
  KILN_REQUIRE_GPU();
  for (const char* which : {"softmax", "log_softmax", "layer_norm"})
    for (const char* dt : {"f32", "bf16"}) {
      const std::string text = row_reduce_test::graph_text(which, dt, "9", 1024);
      ir::Graph fused = ir::parse(text, "online_reduce_gpu_test");
      std::ostringstream quiet;
      passes::PassManager(std::string(runtime::kCompilePipeline), {}, quiet).run(fused);
      ASSERT_EQ(fused.groups().size(), 1u);
      runtime::Program first = runtime::Program::compile(fused, {.pipeline = ""});
      for (const ir::TileConfig& c : ir::candidates(first.kernels()[0].kernel)) {
        if (c.row_threads != 8 && c.row_threads != 32 && c.row_threads != 256) continue;
        SCOPED_TRACE(std::string(which) + " " + dt + " " + c.str());
        ir::Graph g = fused.clone();
        g.group(0).tile = c.to_attrs();
        runtime::Program program = runtime::Program::compile(g, {.pipeline = ""});
        ir::Graph original = ir::parse(text, "online_reduce_gpu_test");
        expect_program_matches(program, original, ir::random_inputs(original, 2));
      }
    }
}

}  // namespace
}  // namespace kiln
