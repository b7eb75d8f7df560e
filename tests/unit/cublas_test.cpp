// The vendor GEMMs without a GPU: the row-major to column-major mapping (checked by
// running cuBLAS's documented column-major formula on the host with the swapped
// operands), the codes Kiln declares, and a missing GPU reported rather than thrown
// from available().
#include <gtest/gtest.h>

#include "ir/error.h"
#include "runtime/cublas.h"
#include "runtime/cublaslt.h"
#include "runtime/cuda_driver.h"

namespace kiln {
namespace {

using runtime::GemmProblem;

TEST(Cublas, RowMajorProductSwapsTheOperands) {
  const runtime::ColumnMajorGemm g = runtime::column_major(GemmProblem{DType::f16, DType::f16, 1, 4093, 4099, 4097});
  EXPECT_EQ(g.m, 4099);  // cuBLAS's M is our N
  EXPECT_EQ(g.n, 4093);
  EXPECT_EQ(g.k, 4097);
  EXPECT_EQ(g.lda, 4099);  // its A is our B [K, N]: leading dim N
  EXPECT_EQ(g.ldb, 4097);  // its B is our A [M, K]: leading dim K
  EXPECT_EQ(g.ldc, 4099);
  EXPECT_EQ(g.stride_a, 4097LL * 4099);
  EXPECT_EQ(g.stride_b, 4093LL * 4097);
  EXPECT_EQ(g.stride_c, 4093LL * 4099);
}

// cuBLAS's definition, column-major with no transposes: C(i, j) = sum_l A(i, l) B(l, j),
// X(i, j) = x[i + j * ldx], batch entries stride_x apart.
void column_major_gemm(const runtime::ColumnMajorGemm& g, int batch, const std::vector<double>& a,
                       const std::vector<double>& b, std::vector<double>& c) {
  for (int e = 0; e < batch; ++e)
    for (int i = 0; i < g.m; ++i)
      for (int j = 0; j < g.n; ++j) {
        double sum = 0;
        for (int l = 0; l < g.k; ++l) sum += a[e * g.stride_a + i + l * g.lda] * b[e * g.stride_b + l + j * g.ldb];
        c[e * g.stride_c + i + j * g.ldc] = sum;
      }
}

TEST(Cublas, TheSwappedColumnMajorCallComputesTheRowMajorProduct) {
  const int batch = 2, m = 3, n = 5, k = 4;
  std::vector<double> a(batch * m * k), b(batch * k * n), c(batch * m * n);
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<double>(i % 7) - 3;
  for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<double>(i % 5) + 0.5;
  const runtime::ColumnMajorGemm g = runtime::column_major(GemmProblem{DType::f32, DType::f32, batch, m, n, k});
  column_major_gemm(g, batch, /*its A = our B*/ b, /*its B = our A*/ a, c);
  for (int e = 0; e < batch; ++e)
    for (int i = 0; i < m; ++i)
      for (int j = 0; j < n; ++j) {
        double want = 0;
        for (int l = 0; l < k; ++l) want += a[(e * m + i) * k + l] * b[(e * k + l) * n + j];
        EXPECT_EQ(c[(e * m + i) * n + j], want) << "batch " << e << " C[" << i << "][" << j << "]";
      }
}

TEST(Cublas, SizesPastIntAreRefused) {
  EXPECT_THROW(runtime::column_major(GemmProblem{DType::f16, DType::f16, 1, int64_t{1} << 31, 8, 8}), Error);
  EXPECT_THROW(runtime::column_major(GemmProblem{DType::f16, DType::f16, 0, 8, 8, 8}), Error);
}

TEST(Cublas, CodesAreCudasAndCublasLts) {
  EXPECT_EQ(runtime::cuda_data_type(DType::f32), 0);
  EXPECT_EQ(runtime::cuda_data_type(DType::f16), 2);
  EXPECT_EQ(runtime::cuda_data_type(DType::bf16), 14);
  EXPECT_THROW(runtime::cuda_data_type(DType::i32), Error);
  EXPECT_EQ(runtime::cublas_status_text(15), "CUBLAS_STATUS_NOT_SUPPORTED (15)");
  EXPECT_EQ(runtime::lt_epilogue_name(runtime::LtEpilogue::GeluBias), "GELU_BIAS");
  EXPECT_EQ(GemmProblem({DType::bf16, DType::f32, 32, 1024, 512, 256}).str(), "bf16 32x1024x512x256");
  EXPECT_EQ(GemmProblem({DType::f16, DType::f16, 1, 16, 8192, 8192}).str(), "f16 16x8192x8192");
}

TEST(Cublas, WithoutAGpuTheLibrariesSayWhy) {
  if (runtime::gpu_available()) GTEST_SKIP() << "a GPU is present: tests/gpu/cublas_gpu_test.cpp covers it";
  std::string why;
  EXPECT_FALSE(runtime::Cublas::available(&why));
  EXPECT_FALSE(why.empty());
  EXPECT_THROW(runtime::Cublas::get(), Error);
  EXPECT_FALSE(runtime::LtMatmul::available(&why));
  try {
    runtime::LtMatmul lt(GemmProblem{}, runtime::LtEpilogue::None);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cuBLASLt cannot be used: "), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace kiln
