// The hand-written baselines without a GPU: the registry, the row schedule, and
// every baseline compiling through NVRTC (the compile cache) for sm_90a at odd and
// even sizes in f16 and f32, as the GPU tests and `kiln bench` will build them.
#include <gtest/gtest.h>

#include "baselines/baseline.h"
#include "baselines/cuda_common.h"
#include "baselines/runner.h"
#include "ir/error.h"
#include "runtime/bench_cases.h"

namespace kiln {
namespace {

TEST(BaselineRegistry, EveryMemoryBoundBenchCaseHasABaselineForItsDefaults) {
  // The GEMM cases' hand-written kernel comes with the GEMM kernel kind; until then
  // their rows say there is none, and cuBLAS is what they are measured against.
  for (const auto& c : runtime::bench_cases()) {
    if (c.form != runtime::SizeForm::Matrix) continue;
    for (DType t : c.dtypes)
      for (const auto& s : c.sizes)
        EXPECT_NE(baselines::find({c.name, t, s.rows, s.cols}), nullptr) << c.name << " " << s.str();
  }
}

TEST(BaselineRegistry, SoftmaxPrefersRegistersThenStreams) {
  EXPECT_EQ(baselines::find({"softmax", DType::f16, 32768, 4096})->name, "softmax_two_pass");
  EXPECT_EQ(baselines::find({"softmax", DType::f16, 4096, 32768})->name, "softmax_two_pass");
  EXPECT_EQ(baselines::find({"softmax", DType::f16, 2048, 65536})->name, "softmax_online");
  EXPECT_EQ(baselines::find({"softmax", DType::f32, 40, 50257})->name, "softmax_online");
}

TEST(BaselineRegistry, NoBaselineForAnUnknownOpOrDtype) {
  EXPECT_EQ(baselines::find({"matmul", DType::f16, 4, 4}), nullptr);
  EXPECT_EQ(baselines::find({"col_sum", DType::f16, 4, 4}), nullptr);
}

TEST(BaselineRegistry, ByNameListsTheKnownOnes) {
  EXPECT_EQ(baselines::by_name("col_sum").op, "col_sum");
  try {
    baselines::by_name("softmax_three_pass");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("known: gelu_chain, softmax_two_pass"), std::string::npos) << e.what();
  }
}

TEST(BaselineRegistry, BuildingAnUnsupportedProblemSaysWhy) {
  try {
    baselines::by_name("softmax_two_pass").build({"softmax", DType::f16, 2, 262144});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("baseline softmax_two_pass: not supported: a row of 262144"),
              std::string::npos)
        << e.what();
  }
}

TEST(RowSchedule, SixteenByteAccessesWhenTheRowAllows) {
  EXPECT_EQ(baselines::row_schedule(DType::f16, 10, 4096).vec, 8);
  EXPECT_EQ(baselines::row_schedule(DType::f32, 10, 4096).vec, 4);
  EXPECT_EQ(baselines::row_schedule(DType::f16, 10, 1000).vec, 8);
  EXPECT_EQ(baselines::row_schedule(DType::f32, 10, 1002).vec, 1);
  EXPECT_EQ(baselines::row_schedule(DType::f16, 10, 127).vec, 1);
}

TEST(RowSchedule, CoversEveryRowLength) {
  for (DType t : {DType::f16, DType::f32})
    for (int64_t cols : {1, 3, 127, 128, 1000, 4096, 5120, 50257, 65536, 262144}) {
      baselines::RowSchedule s = baselines::row_schedule(t, 100, cols);
      SCOPED_TRACE(std::to_string(cols) + ": " + s.str());
      EXPECT_GE(int64_t{s.threads_per_row} * s.accesses_per_thread * s.vec, cols);
      EXPECT_EQ(s.threads_per_row & (s.threads_per_row - 1), 0);  // a power of two
      EXPECT_LE(s.block_threads(), 1024);
      EXPECT_EQ(s.block_threads() % 32, 0);  // whole warps, so shuffles see full masks
    }
}

TEST(RowSchedule, ShortRowsShareABlock) {
  baselines::RowSchedule s = baselines::row_schedule(DType::f16, 1 << 20, 128);
  EXPECT_EQ(s.threads_per_row, 4);  // 16 accesses of 8 halves, 4 per thread
  EXPECT_EQ(s.rows_per_block, 64);
  EXPECT_EQ(s.grid, (1u << 20) / 64);
}

TEST(RowSchedule, RowsUpTo32768FitInRegisters) {
  EXPECT_TRUE(baselines::row_fits_in_registers(DType::f16, 1, 32768));
  EXPECT_TRUE(baselines::row_fits_in_registers(DType::f32, 1, 32768));
  EXPECT_FALSE(baselines::row_fits_in_registers(DType::f16, 1, 50257));
  EXPECT_FALSE(baselines::row_fits_in_registers(DType::f16, 1, 65536));
}

TEST(BaselineSource, EntriesTakeTheUniformParameters) {
  baselines::BaselineKernel k = baselines::by_name("add_rmsnorm").build({"add_rmsnorm", DType::f16, 8, 4096});
  ASSERT_EQ(k.launches.size(), 1u);
  EXPECT_NE(k.source.find("add_rmsnorm_entry(\n    const __half* __restrict__ x, const __half* __restrict__ r, "
                          "const __half* __restrict__ w,\n    __half* __restrict__ y, __half* __restrict__ h, float*, "
                          "i64 rows, i64 cols)"),
            std::string::npos)
      << k.source;
}

TEST(BaselineSource, ColumnSumSplitsRowsAndHasAWorkspace) {
  baselines::BaselineKernel k = baselines::by_name("col_sum").build({"col_sum", DType::f32, 16384, 16384, 132});
  ASSERT_EQ(k.launches.size(), 2u);
  EXPECT_EQ(k.launches[0].grid.x, 16384u / 128);  // 32 threads x 4 columns per block
  EXPECT_GT(k.launches[0].grid.y, 1u);
  EXPECT_EQ(k.workspace_bytes, size_t{k.launches[0].grid.y} * 16384 * 4);
  EXPECT_EQ(k.launches[1].entry, "col_sum_finish_entry");
}

// Every baseline, in each dtype it supports, at sizes with and without 16-byte rows.
TEST(BaselineCompile, EveryBaselineCompilesForSm90a) {
  int compiled = 0;
  for (const baselines::Baseline& b : baselines::all())
    for (DType t : b.dtypes)
      for (int64_t cols : {3, 127, 4096, 50257}) {
        const baselines::Problem p{b.op, t, 7, cols};
        if (!b.why_unsupported(p).empty()) continue;
        SCOPED_TRACE(b.name + " " + std::string(dtype_name(t)) + " cols " + std::to_string(cols));
        baselines::CompiledBaseline c = baselines::compile_baseline(b.build(p), "sm_90a");
        EXPECT_FALSE(c.binary.cubin.empty());
        for (const baselines::BaselineLaunch& l : c.kernel.launches)
          EXPECT_NE(c.binary.ptx.find(".entry " + l.entry), std::string::npos) << l.entry;
        ++compiled;
      }
  EXPECT_GE(compiled, 40);
}

}  // namespace
}  // namespace kiln
