// The hand-written baselines on the GPU against the reference interpreter: each
// variant in each dtype it supports, at row lengths from 1 to 50257 (odd ones take
// scalar accesses, long ones stream), about 2M elements per case so that the CPU
// reference stays quick, and the GEMM baselines on small products whose sizes are
// multiples of their tile. Each is run twice: the two runs must agree bit for bit
// (fixed reduction orders, no atomics). Outputs are poisoned with NaNs before each run.
#include <gtest/gtest.h>

#include <algorithm>

#include "baselines/baseline.h"
#include "baselines/runner.h"
#include "gpu_test_util.h"
#include "ir/compare.h"
#include "ir/interpreter.h"
#include "runtime/bench_cases.h"
#include "runtime/device.h"

namespace kiln {
namespace {

const int64_t kRowLengths[] = {1, 3, 127, 128, 1000, 4096, 5120, 50257};
constexpr int64_t kElementsPerCase = int64_t{2} << 20;

void expect_matches(const baselines::Baseline& b, DType t, int64_t rows, int64_t cols) {
  const baselines::Problem p{b.op, t, rows, cols, runtime::Device::get().sm_count()};
  SCOPED_TRACE(b.name + " " + std::string(dtype_name(t)) + " " + std::to_string(rows) + "x" + std::to_string(cols));
  ir::Graph g = runtime::bench_graph(runtime::find_bench_case(b.op), t, {rows, cols});
  std::vector<HostTensor> inputs = ir::random_inputs(g, 7);
  std::vector<HostTensor> want = ir::evaluate(g, inputs);
  baselines::CompiledBaseline compiled = baselines::compile_baseline(b.build(p));
  baselines::LoadedBaseline loaded(compiled);
  std::vector<TensorType> types;
  for (const HostTensor& w : want) types.push_back(w.type);
  std::vector<HostTensor> got = baselines::run_baseline(loaded, inputs, types, rows, cols);
  std::vector<HostTensor> again = baselines::run_baseline(loaded, inputs, types, rows, cols);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    Comparison c = compare(got[i], want[i]);
    EXPECT_TRUE(c.passed) << "output " << i << ": " << c.str() << " (" << compiled.kernel.config << ")";
    EXPECT_TRUE(got[i].values == again[i].values) << "output " << i << " differs between two runs";
  }
}

// Every row length the variant supports, in each of its dtypes; `must_support`
// lists the lengths it has to accept.
void expect_all_lengths_match(const char* name, const std::vector<int64_t>& must_support) {
  const baselines::Baseline& b = baselines::by_name(name);
  for (DType t : b.dtypes)
    for (int64_t cols : kRowLengths) {
      const int64_t rows = std::max<int64_t>(1, kElementsPerCase / cols);
      const std::string why = b.why_unsupported({b.op, t, rows, cols});
      if (std::find(must_support.begin(), must_support.end(), cols) != must_support.end()) {
        EXPECT_EQ(why, "") << name << " " << cols;
      }
      if (why.empty()) expect_matches(b, t, rows, cols);
    }
}

const std::vector<int64_t> kAll(std::begin(kRowLengths), std::end(kRowLengths));

TEST(BaselinesGpu, GeluChain) {
  KILN_REQUIRE_GPU();
  expect_all_lengths_match("gelu_chain", kAll);
}

TEST(BaselinesGpu, Swiglu) {
  KILN_REQUIRE_GPU();
  expect_all_lengths_match("swiglu", kAll);
}

TEST(BaselinesGpu, MulAdd) {
  KILN_REQUIRE_GPU();
  expect_all_lengths_match("mul_add", kAll);
}

TEST(BaselinesGpu, SoftmaxTwoPassInRegisters) {
  KILN_REQUIRE_GPU();
  expect_all_lengths_match("softmax_two_pass", {1, 3, 127, 128, 1000, 4096, 5120});
}

TEST(BaselinesGpu, SoftmaxOnline) {
  KILN_REQUIRE_GPU();
  expect_all_lengths_match("softmax_online", kAll);
}

TEST(BaselinesGpu, AddRmsNorm) {
  KILN_REQUIRE_GPU();
  expect_all_lengths_match("add_rmsnorm", kAll);
}

TEST(BaselinesGpu, LayerNorm) {
  KILN_REQUIRE_GPU();
  expect_all_lengths_match("layer_norm", kAll);
}

TEST(BaselinesGpu, RowSum) {
  KILN_REQUIRE_GPU();
  expect_all_lengths_match("row_sum", kAll);
}

TEST(BaselinesGpu, ColumnSum) {
  KILN_REQUIRE_GPU();
  expect_all_lengths_match("col_sum", kAll);
}

TEST(BaselinesGpu, ColumnMean) {
  KILN_REQUIRE_GPU();
  expect_all_lengths_match("col_mean", kAll);
}

TEST(BaselinesGpu, MiddleAxisSum) {
  KILN_REQUIRE_GPU();
  expect_all_lengths_match("middle_axis_sum", kAll);
}

TEST(BaselinesGpu, MultiAxisSum) {
  KILN_REQUIRE_GPU();
  expect_all_lengths_match("multi_axis_sum", kAll);
}

TEST(BaselinesGpu, ColumnSumWithRowsNotDividingIntoSlices) {
  KILN_REQUIRE_GPU();
  expect_matches(baselines::by_name("col_sum"), DType::f32, 1001, 4100);
}

TEST(BaselinesGpu, SoftmaxWithFewerRowsThanABlockHolds) {
  KILN_REQUIRE_GPU();
  // Rows of 128 share blocks of 64 rows; 3 rows leave most of the block idle.
  expect_matches(baselines::by_name("softmax_two_pass"), DType::f16, 3, 128);
  expect_matches(baselines::by_name("softmax_online"), DType::f16, 3, 128);
}

TEST(BaselinesGpu, LongSoftmaxRowStreamed) {
  KILN_REQUIRE_GPU();
  expect_matches(baselines::by_name("softmax_online"), DType::f16, 8, 262144);
}

// The hand-written GEMM of case `op` on a small product, against the reference with the
// bound `kiln bench` uses for the case's output; run twice, bit for bit the same.
void expect_gemm_matches(const std::string& op, DType t, const runtime::BenchSize& size) {
  baselines::Problem p{op, t, size.rows, size.cols, runtime::Device::get().sm_count()};
  p.depth = size.depth;
  p.batch = size.batches();
  SCOPED_TRACE(op + " " + std::string(dtype_name(t)) + " " + size.str());
  const baselines::Baseline* b = baselines::find(p);
  ASSERT_NE(b, nullptr);
  ir::Graph g = runtime::bench_graph(runtime::find_bench_case(op), t, size);
  std::vector<HostTensor> inputs = ir::random_inputs(g, 7);
  HostTensor want = ir::evaluate(g, inputs)[0];
  baselines::CompiledBaseline compiled = baselines::compile_baseline(b->build(p));
  baselines::LoadedBaseline loaded(compiled);
  HostTensor got = baselines::run_baseline(loaded, inputs, {want.type}, size.rows, size.cols)[0];
  HostTensor again = baselines::run_baseline(loaded, inputs, {want.type}, size.rows, size.cols)[0];
  Comparison c = compare(got, want, rel_l2_bound_for(*g.outputs()[0]));
  EXPECT_TRUE(c.passed) << b->name << ": " << c.str() << " (" << compiled.kernel.config << ")";
  EXPECT_TRUE(got.values == again.values) << "two runs differ";
}

// Several tile rows and columns (the grouped block order); K of 4 and 11 k tiles (as
// many as the pipeline's stages, and more). The other tests take 1 to 5.
TEST(BaselinesGpu, GemmF16AndBf16) {
  KILN_REQUIRE_GPU();
  for (DType t : {DType::f16, DType::bf16}) {
    expect_gemm_matches("gemm", t, runtime::BenchSize::gemm(256, 256, 128));
    expect_gemm_matches("gemm", t, runtime::BenchSize::gemm(384, 768, 352));
  }
}

// Nine tile rows: one full group of 8 and a group of 1.
TEST(BaselinesGpu, GemmMoreTileRowsThanAGroup) {
  KILN_REQUIRE_GPU();
  expect_gemm_matches("gemm", DType::f16, runtime::BenchSize::gemm(1152, 512, 64));
}

TEST(BaselinesGpu, GemmBatched) {
  KILN_REQUIRE_GPU();
  expect_gemm_matches("gemm_batched", DType::f16, runtime::BenchSize::batched_gemm(3, 256, 512, 160));
  expect_gemm_matches("gemm_batched", DType::bf16, runtime::BenchSize::batched_gemm(2, 128, 256, 32));
}

TEST(BaselinesGpu, GemmBiasGeluEpilogue) {
  KILN_REQUIRE_GPU();
  expect_gemm_matches("gemm_bias_gelu", DType::f16, runtime::BenchSize::gemm(256, 512, 256));
  expect_gemm_matches("gemm_bias_gelu", DType::bf16, runtime::BenchSize::gemm(128, 256, 96));
}

}  // namespace
}  // namespace kiln
