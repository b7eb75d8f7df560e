// The vendor GEMMs on the GPU against the reference interpreter: cuBLAS's row-major
// product (plain and strided-batched) in f16, bf16 and f32 on odd shapes, and cuBLASLt
// plain, with a bias and with bias + GELU. Skips without a GPU or without cuBLAS.
#include <gtest/gtest.h>

#include "gemm_check_util.h"
#include "runtime/cublas.h"
#include "runtime/cublaslt.h"
#include "runtime/timer.h"

namespace kiln {
namespace {

using gpu_test::product_graph;
using gpu_test::run_and_compare;

TEST(CublasGpu, RowMajorGemmMatchesTheInterpreter) {
  KILN_REQUIRE_CUBLAS();
  for (DType t : {DType::f16, DType::bf16, DType::f32})
    for (int64_t batch : {1, 3}) {
      SCOPED_TRACE(fmt::format("{} batch {}", dtype_name(t), batch));
      const runtime::GemmProblem p{t, t, batch, 65, 33, 129};
      Comparison c = run_and_compare(product_graph(t, batch, 65, 33, 129, runtime::LtEpilogue::None),
                                     [&](const auto& in, runtime::DeviceBuffer& out) {
                                       runtime::Cublas::get().gemm(p, in[0].ptr(), in[1].ptr(), out.ptr());
                                     });
      EXPECT_TRUE(c.passed) << c.str();
    }
}

TEST(CublasGpu, LtEpiloguesMatchTheInterpreter) {
  KILN_REQUIRE_CUBLAS();
  for (runtime::LtEpilogue e : {runtime::LtEpilogue::None, runtime::LtEpilogue::Bias, runtime::LtEpilogue::GeluBias})
    for (int64_t batch : {1, 2}) {
      SCOPED_TRACE(fmt::format("{} batch {}", runtime::lt_epilogue_name(e), batch));
      const runtime::GemmProblem p{DType::f16, DType::f16, batch, 72, 40, 136};
      runtime::LtMatmul lt(p, e);
      Comparison c = run_and_compare(product_graph(DType::f16, batch, 72, 40, 136, e),
                                     [&](const auto& in, runtime::DeviceBuffer& out) {
                                       lt.run(in[0].ptr(), in[1].ptr(), out.ptr(), in.size() > 2 ? in[2].ptr() : 0);
                                     });
      EXPECT_TRUE(c.passed) << c.str() << " (" << lt.config() << ")";
    }
}

// Timed in a CUDA graph, cuBLAS and cuBLASLt launch on the runtime's launch stream, so
// the capture holds their kernels (an empty capture is refused rather than timed).
TEST(CublasGpu, ProductsAreCapturedIntoTheTimingGraph) {
  KILN_REQUIRE_CUBLAS();
  const runtime::GemmProblem p{DType::f16, DType::f16, 1, 16, 64, 128};
  runtime::LtMatmul lt(p, runtime::LtEpilogue::None);
  Comparison c = run_and_compare(product_graph(DType::f16, 1, 16, 64, 128, runtime::LtEpilogue::None),
                                 [&](const auto& in, runtime::DeviceBuffer& out) {
                                   EXPECT_GT(runtime::time_in_graph_ms(
                                                 [&] { runtime::Cublas::get().gemm(p, in[0].ptr(), in[1].ptr(), out.ptr()); },
                                                 1, 3, 4),
                                             0.0f);
                                   EXPECT_GT(runtime::time_in_graph_ms(
                                                 [&] { lt.run(in[0].ptr(), in[1].ptr(), out.ptr(), 0); }, 1, 3, 4),
                                             0.0f);
                                 });
  EXPECT_TRUE(c.passed) << c.str();
}

}  // namespace
}  // namespace kiln
