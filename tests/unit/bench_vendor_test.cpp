// The vendor rows of `kiln bench` without a GPU: which cases have which rows, unknown
// rows refused, and Kiln's half of "cublas + epilogue" (one pointwise kernel on the
// product) compiling for sm_90a.
#include <gtest/gtest.h>

#include "ir/error.h"
#include "runtime/bench_cases.h"
#include "runtime/bench_vendor.h"
#include "runtime/program.h"

namespace kiln {
namespace {

TEST(BenchVendor, GemmCasesHaveCublasAndCublasLtRows) {
  EXPECT_TRUE(runtime::vendor_impls(runtime::find_bench_case("softmax")).empty());
  EXPECT_EQ(runtime::vendor_impls(runtime::find_bench_case("quant_w4g128")), (std::vector<std::string>{"cublas"}));
  EXPECT_EQ(runtime::vendor_impls(runtime::find_bench_case("gemm")), (std::vector<std::string>{"cublas", "cublaslt"}));
  EXPECT_EQ(runtime::vendor_impls(runtime::find_bench_case("gemm_batched")),
            (std::vector<std::string>{"cublas", "cublaslt"}));
  EXPECT_EQ(runtime::vendor_impls(runtime::find_bench_case("gemm_bias_gelu")),
            (std::vector<std::string>{"cublas + epilogue", "cublaslt"}));
}

TEST(BenchVendor, AnUnknownRowIsAnError) {
  std::vector<runtime::DeviceBuffer> inputs(2), outputs(1);
  EXPECT_THROW(runtime::make_vendor_run("cublas + epilogue", runtime::find_bench_case("gemm"), DType::f16,
                                        runtime::BenchSize::gemm(8, 8, 8), inputs, outputs, "sm_90a"),
               Error);
  EXPECT_THROW(runtime::make_vendor_run("cublas", runtime::find_bench_case("softmax"), DType::f16, {8, 8}, inputs,
                                        outputs, "sm_90a"),
               Error);
}

TEST(BenchVendor, TheEpilogueIsOneKilnKernelOnTheProduct) {
  ir::Graph g = runtime::vendor_epilogue_graph(DType::f16, runtime::BenchSize::gemm(4093, 4099, 4097));
  ASSERT_EQ(g.inputs().size(), 2u);
  EXPECT_EQ(g.inputs()[0]->type, (TensorType{DType::f16, {4093, 4099}}));
  EXPECT_EQ(g.inputs()[1]->type, (TensorType{DType::f16, {4099}}));
  EXPECT_EQ(g.outputs()[0]->type, (TensorType{DType::f16, {4093, 4099}}));
  runtime::ProgramOptions options;
  options.arch = "sm_90a";
  runtime::Program p = runtime::Program::compile(g, options);
  ASSERT_EQ(p.kernels().size(), 1u);
  EXPECT_EQ(p.kernels()[0].kernel.kind, ir::KernelKind::Pointwise);
  ir::Graph batched = runtime::vendor_epilogue_graph(DType::f16, runtime::BenchSize::batched_gemm(3, 5, 7, 9));
  EXPECT_EQ(batched.inputs()[0]->type, (TensorType{DType::f16, {3, 5, 7}}));
}

}  // namespace
}  // namespace kiln
