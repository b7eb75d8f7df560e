// The hand-written baselines without a GPU: the registry, the row schedule, and
// every baseline compiling through NVRTC (the compile cache) for sm_90a at odd and
// even sizes in f16 and f32, as the GPU tests and `kiln bench` will build them; the
// GEMM baselines at the GEMM cases' sizes, without register spills.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <iostream>
#include <regex>

#include "baselines/baseline.h"
#include "baselines/cuda_common.h"
#include "baselines/runner.h"
#include "ir/error.h"
#include "runtime/bench_cases.h"
#include "runtime/compile_cache.h"

namespace kiln {
namespace {

// The problem `kiln bench` builds a baseline for (tools/bench_command.cpp).
baselines::Problem problem_of(const runtime::BenchCase& c, DType t, const runtime::BenchSize& s) {
  baselines::Problem p{c.name, t, s.rows, s.cols};
  if (s.is_gemm()) {
    p.depth = s.depth;
    p.batch = s.batches();
  }
  if (s.is_attention()) {
    p.batch = s.batch;
    p.heads = s.heads;
    p.kv_heads = s.kv_heads;
    p.kv_len = s.kv_len;
    p.causal = s.causal;
  }
  return p;
}

TEST(BaselineRegistry, EveryBenchCaseHasABaselineForItsDefaults) {
  // The hand-written GEMM has no edge handling: the sizes off its 128 x 256 x 32 tile
  // (4093x4099x4097, and M = 16 of the decode step) have none.
  // The hand-written attention has no key split for decoding (a query against 8192 keys).
  // The quantised and fp8 products have no hand-written baseline yet.
  for (const auto& c : runtime::bench_cases())
    if (!runtime::is_quant_case(c) && !runtime::is_fp8_case(c))
    for (DType t : c.dtypes)
      for (const auto& s : c.sizes) {
        const bool off_tile = s.is_gemm() && (s.rows % 128 != 0 || s.cols % 256 != 0 || s.depth % 32 != 0);
        const bool decoding = s.is_attention() && s.rows < 64;
        EXPECT_EQ(baselines::find(problem_of(c, t, s)) != nullptr, !off_tile && !decoding) << c.name << " " << s.str();
      }
}

TEST(BaselineRegistry, GemmCasesHaveTheMmaSyncBaseline) {
  using runtime::BenchSize;
  const auto& gemm = runtime::find_bench_case("gemm");
  EXPECT_EQ(baselines::find(problem_of(gemm, DType::f16, BenchSize::gemm(4096, 4096, 4096)))->name, "gemm_mma");
  EXPECT_EQ(baselines::find(problem_of(gemm, DType::bf16, BenchSize::gemm(8192, 8192, 8192)))->name, "gemm_mma");
  EXPECT_EQ(baselines::find(problem_of(runtime::find_bench_case("gemm_batched"), DType::f16,
                                       BenchSize::batched_gemm(32, 1024, 1024, 1024)))->name,
            "gemm_batched_mma");
  EXPECT_EQ(baselines::find(problem_of(runtime::find_bench_case("gemm_bias_gelu"), DType::f16,
                                       BenchSize::gemm(4096, 4096, 4096)))->name,
            "gemm_bias_gelu_mma");
  EXPECT_EQ(baselines::find(problem_of(gemm, DType::f32, BenchSize::gemm(4096, 4096, 4096))), nullptr);
}

TEST(BaselineRegistry, GemmOffTheTileSaysWhichDimension) {
  const baselines::Baseline& b = baselines::by_name("gemm_mma");
  const std::string ragged = b.why_unsupported({"gemm", DType::f16, 4093, 4099, 132, 4097});
  EXPECT_NE(ragged.find("4093x4099x4097: M = 4093 is no multiple of 128, N = 4099 is no multiple of 256, K = 4097 "
                        "is no multiple of 32 (the kernel has no edge handling"),
            std::string::npos)
      << ragged;
  const std::string decode = b.why_unsupported({"gemm", DType::f16, 16, 8192, 132, 8192});
  EXPECT_NE(decode.find("16x8192x8192: M = 16 is no multiple of 128 (the kernel has no edge handling: M and N must "
                        "be multiples of its 128x256 block tile, K of its k tile 32)"),
            std::string::npos)
      << decode;
  EXPECT_EQ(b.why_unsupported({"gemm", DType::f16, 128, 256, 132, 32}), "");
  EXPECT_NE(b.why_unsupported({"gemm", DType::f16, 128, 256, 132, 32, 70000}).find("a batch of 70000"),
            std::string::npos);
  EXPECT_NE(b.why_unsupported({"gemm", DType::f16, 128, 256}).find("K = 1 is no multiple of 32"), std::string::npos);
  try {
    b.build({"gemm", DType::f16, 16, 8192, 132, 8192});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("baseline gemm_mma: not supported: 16x8192x8192: M = 16"), std::string::npos)
        << e.what();
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
    EXPECT_NE(std::string(e.what()).find("known: gelu_chain, swiglu, mul_add, softmax_two_pass"), std::string::npos) << e.what();
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

TEST(BaselineSource, GemmIsBuiltForOneProblem) {
  baselines::BaselineKernel k =
      baselines::by_name("gemm_batched_mma").build({"gemm_batched", DType::bf16, 1024, 512, 132, 96, 3});
  ASSERT_EQ(k.launches.size(), 1u);
  const baselines::BaselineLaunch& l = k.launches[0];
  EXPECT_EQ(l.grid.x, (1024u / 128) * (512u / 256));
  EXPECT_EQ(l.grid.y, 3u);  // the batch
  EXPECT_EQ(l.block.x, 256u);
  EXPECT_EQ(l.shared_bytes, 4u * (128 * 32 + 32 * 256) * 2);  // 4 stages of A and B tiles
  EXPECT_EQ(k.workspace_bytes, 0u);
  // K and the batch are compile-time constants; M and N come as rows and cols.
  EXPECT_NE(k.source.find("gemm::gemm_mma<__nv_bfloat16, 96, 3, false>(a, b, nullptr, c, rows, cols);"),
            std::string::npos)
      << k.source;
  EXPECT_NE(k.source.find("gemm_batched_mma_entry(\n    const __nv_bfloat16* __restrict__ a, const __nv_bfloat16* "
                          "__restrict__ b, __nv_bfloat16* __restrict__ c, float*,\n    i64 rows, i64 cols)"),
            std::string::npos)
      << k.source;
}

TEST(BaselineSource, GemmBiasGeluTakesTheBiasAfterTheOperands) {
  baselines::BaselineKernel k =
      baselines::by_name("gemm_bias_gelu_mma").build({"gemm_bias_gelu", DType::f16, 4096, 4096, 132, 4096});
  EXPECT_NE(k.source.find("gemm_bias_gelu_mma_entry(\n    const __half* __restrict__ a, const __half* __restrict__ b, "
                          "const __half* __restrict__ bias, __half* __restrict__ c, float*,"),
            std::string::npos)
      << k.source;
  EXPECT_NE(k.source.find("gemm::gemm_mma<__half, 4096, 1, true>(a, b, bias, c, rows, cols);"), std::string::npos);
  EXPECT_NE(k.config.find("bias + gelu_tanh epilogue"), std::string::npos) << k.config;
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

// ptxas's figures for one entry, from NVRTC's log with --ptxas-options=-v.
struct PtxasFigures {
  int registers = -1;
  int spill_stores = -1, spill_loads = -1, stack_bytes = -1;
};

PtxasFigures ptxas_figures(const std::string& log, const std::string& entry) {
  PtxasFigures f;
  const size_t at = log.find("Function properties for " + entry);
  if (at == std::string::npos) return f;
  const std::string rest = log.substr(at);
  const std::regex spills(R"((\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads)");
  std::smatch m;
  if (std::regex_search(rest, m, spills)) {
    f.stack_bytes = std::stoi(m[1]);
    f.spill_stores = std::stoi(m[2]);
    f.spill_loads = std::stoi(m[3]);
  }
  if (std::regex_search(rest, m, std::regex(R"(Used (\d+) registers)"))) f.registers = std::stoi(m[1]);
  return f;
}

// Every GEMM baseline in both dtypes at the default sizes of its case that it supports,
// and at the small sizes of the GPU tests: compiled for sm_90a with ptxas's report, the
// kernels keep their 128 accumulators and both fragment buffers in registers (at most
// 255 under __launch_bounds__(256, 1)) without spilling.
TEST(BaselineCompile, GemmBaselinesCompileWithoutSpills) {
  int compiled = 0;
  for (const char* name : {"gemm_mma", "gemm_batched_mma", "gemm_bias_gelu_mma"}) {
    const baselines::Baseline& b = baselines::by_name(name);
    const runtime::BenchCase& c = runtime::find_bench_case(b.op);
    std::vector<runtime::BenchSize> sizes = {runtime::BenchSize::gemm(256, 512, 128),
                                             runtime::BenchSize::batched_gemm(3, 256, 512, 160)};
    sizes.insert(sizes.end(), c.sizes.begin(), c.sizes.end());
    for (DType t : b.dtypes)
      for (const runtime::BenchSize& s : sizes) {
        const baselines::Problem p = problem_of(c, t, s);
        if (!b.why_unsupported(p).empty()) continue;
        const baselines::BaselineKernel k = b.build(p);
        SCOPED_TRACE(b.name + " " + std::string(dtype_name(t)) + " " + s.str());
        const runtime::CompileResult r = runtime::CompileCache::global().compile(
            k.source, "baseline_" + k.name, {.arch = "sm_90a", .extra_flags = {"--ptxas-options=-v"}});
        ASSERT_FALSE(r.cubin.empty());
        const PtxasFigures f = ptxas_figures(r.log, k.launches[0].entry);
        EXPECT_EQ(f.spill_stores, 0) << r.log;
        EXPECT_EQ(f.spill_loads, 0) << r.log;
        EXPECT_EQ(f.stack_bytes, 0) << r.log;
        EXPECT_GT(f.registers, 128) << r.log;  // the accumulators alone take 128
        EXPECT_LE(f.registers, 255) << r.log;
        std::cout << fmt::format("{} {} {}: {} registers, {} bytes spilled\n", b.name, dtype_name(t), s.str(),
                                 f.registers, f.spill_stores + f.spill_loads);
        ++compiled;
      }
  }
  // Two dtypes of: gemm 256x512x128, 3x256x512x160, 4096^3, 8192^3 (not 4093x4099x4097 nor
  // 16x8192x8192); gemm_batched and gemm_bias_gelu the small sizes and their default.
  EXPECT_EQ(compiled, 8 + 6 + 6);
}

// The hand-written FlashAttention-2 in both dtypes and head dims, causal or not, with
// grouped query heads and odd lengths: compiled for sm_90a without spilling (two m16
// tiles of output a warp are 128 registers at head dim 128, under 255).
TEST(BaselineCompile, AttentionBaselinesCompileWithoutSpills) {
  int compiled = 0;
  for (const char* name : {"attention_fa2", "attention_causal_fa2"})
    for (DType t : {DType::f16, DType::bf16})
      for (int64_t d : {64, 128})
        for (int64_t kv_heads : {16, 4}) {
          const baselines::Baseline& b = baselines::by_name(name);
          baselines::Problem p{b.op, t, 1000, d};
          p.batch = 2;
          p.heads = 16;
          p.kv_heads = kv_heads;
          p.kv_len = 4097;
          ASSERT_EQ(b.why_unsupported(p), "");
          const baselines::BaselineKernel k = b.build(p);
          SCOPED_TRACE(fmt::format("{} {} d {} kv heads {}", name, dtype_name(t), d, kv_heads));
          EXPECT_EQ(k.launches[0].grid.x, 8u);
          EXPECT_EQ(k.launches[0].grid.y, 32u);
          EXPECT_NE(k.source.find(fmt::format("GROUP = {}", 16 / kv_heads)), std::string::npos);
          const runtime::CompileResult r = runtime::CompileCache::global().compile(
              k.source, "baseline_" + k.name, {.arch = "sm_90a", .extra_flags = {"--ptxas-options=-v"}});
          ASSERT_FALSE(r.cubin.empty()) << r.log;
          const PtxasFigures f = ptxas_figures(r.log, k.launches[0].entry);
          EXPECT_EQ(f.spill_stores, 0) << r.log;
          EXPECT_EQ(f.stack_bytes, 0) << r.log;
          EXPECT_LE(f.registers, 255) << r.log;
          std::cout << fmt::format("{} {} d {}: {} registers\n", name, dtype_name(t), d, f.registers);
          ++compiled;
        }
  EXPECT_EQ(compiled, 16);
  baselines::Problem decode{"attention", DType::f16, 1, 128};
  decode.batch = 8;
  decode.heads = decode.kv_heads = 32;
  decode.kv_len = 8192;
  EXPECT_NE(baselines::by_name("attention_fa2").why_unsupported(decode).find("decoding"), std::string::npos);
}

}  // namespace
}  // namespace kiln
