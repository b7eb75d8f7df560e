// GEMM kernels on the GPU against the reference interpreter: odd sizes in every dtype
// and all four transpose combinations, every candidate config through the tuner's
// check, fused epilogues with several outputs, batched products with a broadcast batch
// dim, operand prologues and views, TF32 when asked, split K (deterministic), and
// products too large for the CPU reference checked on sampled output elements.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cmath>
#include <random>

#include "frontend/kiln.h"
#include "gemm_test_util.h"
#include "gpu_test_util.h"
#include "ir/compare.h"
#include "ir/interpreter.h"
#include "ir/printer.h"
#include "runtime/autotuner.h"
#include "runtime/program.h"

namespace kiln {
namespace {

// Compiles and runs `g` on random inputs and checks every output against the CPU
// reference; returns the program's kernels' kinds for checks on fusion.
std::vector<ir::KernelKind> expect_matches_reference(const ir::Graph& g, double bound = -1, uint64_t seed = 11) {
  runtime::Program program = runtime::Program::compile(g);
  std::vector<HostTensor> inputs = ir::random_inputs(g, seed);
  std::vector<HostTensor> want = ir::evaluate(g, inputs);
  std::vector<HostTensor> got = program.run(inputs);
  EXPECT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size() && i < want.size(); ++i) {
    Comparison c = compare(got[i], want[i], bound >= 0 ? bound : rel_l2_bound_for(*g.outputs()[i]));
    EXPECT_TRUE(c.passed) << "output " << i << ": " << c.str() << "\n"
                          << ir::print(program.plan().kernels.front());
  }
  std::vector<ir::KernelKind> kinds;
  for (const ir::Kernel& k : program.plan().kernels) kinds.push_back(k.kind);
  return kinds;
}

using gpu_test::product;

struct Size {
  int64_t m, n, k;
};

void odd_shapes_every_transpose(DType dt) {
  for (Size s : {Size{1, 1, 1}, Size{17, 33, 65}, Size{127, 255, 513}, Size{64, 64, 64}})
    for (bool ta : {false, true})
      for (bool tb : {false, true}) {
        SCOPED_TRACE(fmt::format("{} {}x{}x{} transpose_a {} transpose_b {}", dtype_name(dt), s.m, s.n, s.k, ta, tb));
        EXPECT_EQ(expect_matches_reference(product(dt, s.m, s.n, s.k, ta, tb).ir()),
                  std::vector<ir::KernelKind>{ir::KernelKind::Gemm});
      }
}

TEST(GemmGpu, F16OddShapesEveryTranspose) {
  KILN_REQUIRE_GPU();
  odd_shapes_every_transpose(DType::f16);
}

TEST(GemmGpu, Bf16OddShapesEveryTranspose) {
  KILN_REQUIRE_GPU();
  odd_shapes_every_transpose(DType::bf16);
}

TEST(GemmGpu, F32OddShapesEveryTransposeExactOnCudaCores) {
  KILN_REQUIRE_GPU();
  odd_shapes_every_transpose(DType::f32);
}

TEST(GemmGpu, Tf32WhenAsked) {
  KILN_REQUIRE_GPU();
  setenv("KILN_TF32", "1", 1);
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      kiln::Graph g = product(DType::f32, 127, 255, 513, ta, tb);
      runtime::Program p = runtime::Program::compile(g.ir());
      EXPECT_TRUE(p.plan().kernels[0].gemm.tf32);
      EXPECT_EQ(p.plan().kernels[0].config.schedule, ir::kMmaSync);
      // TF32 keeps 10 of fp32's 23 mantissa bits: errors near 1e-3 of the values.
      expect_matches_reference(g.ir(), 5e-3);
    }
  unsetenv("KILN_TF32");
}

using gpu_test::every_candidate_passes;

TEST(GemmGpu, EveryCandidateOfASplitKProductPassesTheTunersCheck) {
  KILN_REQUIRE_GPU();
  every_candidate_passes(product(DType::f16, 200, 300, 4096, false, false).ir());
}

TEST(GemmGpu, EveryCandidateOfANarrowProductPassesTheTunersCheck) {
  KILN_REQUIRE_GPU();
  every_candidate_passes(product(DType::bf16, 16, 520, 2048, false, true).ir());
}

TEST(GemmGpu, EveryCandidateOfAnUnalignedProductPassesTheTunersCheck) {
  KILN_REQUIRE_GPU();
  every_candidate_passes(product(DType::f16, 133, 77, 301, true, true).ir());
}

TEST(GemmGpu, EveryCandidateOfAnF32ProductPassesTheTunersCheck) {
  KILN_REQUIRE_GPU();
  every_candidate_passes(product(DType::f32, 129, 200, 96, false, false).ir());
}

// Bias along rows and along columns, activations, a residual, a scale, a cast and
// several outputs (the pre-activation too): one kernel.
kiln::Graph epilogues(DType dt, int64_t m, int64_t n, int64_t k) {
  kiln::Graph g("epilogues");
  auto a = g.input("a", dt, {m, k});
  auto b = g.input("b", dt, {k, n});
  auto bias = g.input("bias", dt, {n});
  auto row_bias = g.input("row_bias", dt, {m, 1});
  auto residual = g.input("residual", dt, {m, n});
  auto mm = kiln::matmul(a, b).name("mm");
  auto pre = (mm + bias).name("pre");
  g.output(kiln::gelu(pre).name("y_erf"));
  g.output(kiln::gelu(pre, "tanh").name("y_tanh"));
  g.output(kiln::silu(mm * 0.5 + residual).name("y_silu"));
  g.output(kiln::cast(kiln::relu(mm + row_bias), DType::f32).name("y_relu"));
  g.output(kiln::sigmoid(mm).name("y_sigmoid"));
  g.output(pre);
  return g;
}

TEST(GemmGpu, EpiloguesWithSeveralOutputsAreOneKernel) {
  KILN_REQUIRE_GPU();
  for (DType dt : {DType::f16, DType::bf16})
    for (Size s : {Size{129, 75, 200}, Size{128, 128, 64}, Size{3, 1000, 17}}) {
      SCOPED_TRACE(fmt::format("{} {}x{}x{}", dtype_name(dt), s.m, s.n, s.k));
      EXPECT_EQ(expect_matches_reference(epilogues(dt, s.m, s.n, s.k).ir()),
                std::vector<ir::KernelKind>{ir::KernelKind::Gemm});
    }
}

TEST(GemmGpu, BatchedWithBroadcastBatchDims) {
  KILN_REQUIRE_GPU();
  {
    kiln::Graph g("shared_weight");  // one weight for every batch entry, read in place
    auto a = g.input("a", DType::f16, {3, 4, 33, 65});
    auto w = g.input("w", DType::f16, {65, 47});
    g.output(kiln::matmul(a, w));
    EXPECT_EQ(expect_matches_reference(g.ir()), std::vector<ir::KernelKind>{ir::KernelKind::Gemm});
  }
  {
    kiln::Graph g("both_broadcast");
    auto a = g.input("a", DType::bf16, {3, 1, 33, 65});
    auto b = g.input("b", DType::bf16, {4, 47, 65});
    auto bias = g.input("bias", DType::bf16, {4, 1, 47});
    g.output(kiln::relu(kiln::matmul(a, b, false, true) + bias));
    EXPECT_EQ(expect_matches_reference(g.ir()), std::vector<ir::KernelKind>{ir::KernelKind::Gemm});
  }
}

TEST(GemmGpu, OperandProloguesAndViewsFoldIntoTheLoads) {
  KILN_REQUIRE_GPU();
  {
    kiln::Graph g("cast_operand");
    auto x = g.input("x", DType::f32, {70, 130});
    auto w = g.input("w", DType::f16, {130, 90});
    g.output(kiln::matmul(kiln::cast(x, DType::f16), w));
    EXPECT_EQ(expect_matches_reference(g.ir()), std::vector<ir::KernelKind>{ir::KernelKind::Gemm});
  }
  {
    kiln::Graph g("scaled_transposed");
    auto x = g.input("x", DType::f16, {64, 96});
    auto w = g.input("w", DType::f16, {80, 64});
    g.output(kiln::matmul(kiln::transpose(x * 0.25, {1, 0}), kiln::transpose(w, {1, 0})));
    EXPECT_EQ(expect_matches_reference(g.ir()), std::vector<ir::KernelKind>{ir::KernelKind::Gemm});
  }
  {
    kiln::Graph g("reshaped");  // [2, 8, 64] seen as [16, 64]
    auto x = g.input("x", DType::bf16, {2, 8, 64});
    auto w = g.input("w", DType::bf16, {64, 40});
    g.output(kiln::matmul(kiln::reshape(x, {16, 64}), w));
    EXPECT_EQ(expect_matches_reference(g.ir()), std::vector<ir::KernelKind>{ir::KernelKind::Gemm});
  }
}

// A broadcast operand dim of more than one row has stride 0: every row reads the same
// elements (found by kiln-difftest: the loads stepped by a row's extent, past the end).
TEST(GemmGpu, BroadcastOperandRowsReadTheSameElements) {
  KILN_REQUIRE_GPU();
  struct Case {
    const char* name;
    DType dt;
    Shape from, to, other;
    bool transpose_a;
  };
  for (const Case& c : {Case{"rows_of_a_vector", DType::f32, {2}, {2, 2}, {2, 2}, false},
                        Case{"scalar_along_k_transposed", DType::f16, {1}, {2, 1}, {2, 2}, true},
                        Case{"column_along_k", DType::bf16, {40, 1}, {40, 72}, {72, 24}, false},
                        Case{"aligned_rows", DType::f16, {64}, {33, 64}, {64, 40}, false},
                        Case{"scalar_with_k_one", DType::f32, {1}, {17, 1}, {1, 9}, false}}) {
    SCOPED_TRACE(c.name);
    kiln::Graph g(c.name);
    auto x = g.input("x", c.dt, c.from);
    auto w = g.input("w", c.dt, c.other);
    g.output(kiln::matmul(kiln::broadcast_to(x, c.to), w, c.transpose_a, false));
    expect_matches_reference(g.ir());
  }
  kiln::Graph g("broadcast_b");  // the same along N, B's rows
  auto a = g.input("a", DType::f16, {24, 48});
  auto w = g.input("w", DType::f16, {48, 1});
  g.output(kiln::matmul(a, kiln::broadcast_to(w, {48, 56})));
  expect_matches_reference(g.ir());
}

// ---- products too large for the CPU reference: sampled output elements ----

// The double-precision sum for output (m, n) of a[M, K] (or [K, M]) times b.
double dot(const HostTensor& a, const HostTensor& b, int64_t m, int64_t n, int64_t k_size, bool ta, bool tb,
           int64_t m_size, int64_t n_size) {
  double acc = 0;
  for (int64_t k = 0; k < k_size; ++k) {
    const double x = a.values[static_cast<size_t>(ta ? k * m_size + m : m * k_size + k)];
    const double y = b.values[static_cast<size_t>(tb ? n * k_size + k : k * n_size + n)];
    acc += x * y;
  }
  return acc;
}

// Runs a @ b (plus bias and the tanh GELU when `bias_gelu`) and checks `samples`
// random output elements against double sums rounded as the graph rounds them.
void expect_samples_match(DType dt, int64_t m, int64_t n, int64_t k, bool ta, bool tb, bool bias_gelu,
                          int samples = 3000) {
  kiln::Graph g("large");
  auto a = g.input("a", dt, ta ? Shape{k, m} : Shape{m, k});
  auto b = g.input("b", dt, tb ? Shape{n, k} : Shape{k, n});
  auto mm = kiln::matmul(a, b, ta, tb);
  std::optional<kiln::Tensor> bias;
  if (bias_gelu) {
    bias = g.input("bias", dt, {n});
    g.output(kiln::gelu(mm + *bias, "tanh"));
  } else {
    g.output(mm);
  }
  runtime::Program p = runtime::Program::compile(g.ir());
  ASSERT_EQ(p.plan().kernels.size(), 1u);
  std::vector<HostTensor> inputs = ir::random_inputs(g.ir(), 5);
  HostTensor got = p.run(inputs)[0];
  std::mt19937_64 rng(99);
  double diff2 = 0, ref2 = 0;
  int nonfinite = 0;
  auto round = [&](double v) { return HostTensor(TensorType{dt, {1}}, {v}).values[0]; };
  for (int i = 0; i < samples; ++i) {
    const int64_t row = static_cast<int64_t>(rng() % static_cast<uint64_t>(m));
    const int64_t col = static_cast<int64_t>(rng() % static_cast<uint64_t>(n));
    double want = round(dot(inputs[0], inputs[1], row, col, k, ta, tb, m, n));
    if (bias_gelu) {
      const double x = round(want + inputs[2].values[static_cast<size_t>(col)]);
      want = round(0.5 * x * (1 + std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x))));
    }
    const double have = got.values[static_cast<size_t>(row * n + col)];
    if (!std::isfinite(have)) ++nonfinite;
    diff2 += (have - want) * (have - want);
    ref2 += want * want;
  }
  const double rel = std::sqrt(diff2 / ref2);
  EXPECT_EQ(nonfinite, 0);
  // f16 / bf16 outputs round to 11 / 8 bits: the sampled error sits near 2e-4 / 2e-3.
  EXPECT_LT(rel, dt == DType::bf16 ? 1e-2 : 2e-3) << ir::print(p.plan().kernels[0]);
}

TEST(GemmGpu, LargeProductsOnSampledElements) {
  KILN_REQUIRE_GPU();
  expect_samples_match(DType::f16, 4096, 4096, 4096, false, false, false);
  expect_samples_match(DType::bf16, 4096, 4096, 4096, false, true, false);
  expect_samples_match(DType::f16, 4093, 4099, 4097, false, false, false);
  expect_samples_match(DType::f16, 16, 8192, 8192, false, false, false);
  expect_samples_match(DType::f16, 4096, 4096, 4096, false, false, true);
}

TEST(GemmGpu, EightThousandCubedOnSampledElements) {
  KILN_REQUIRE_GPU();
  expect_samples_match(DType::f16, 8192, 8192, 8192, false, false, false, 1000);
}

TEST(GemmGpu, SplitKGivesTheSameBitsEveryRun) {
  KILN_REQUIRE_GPU();
  kiln::Graph g = product(DType::f16, 16, 1024, 8192, false, false);
  runtime::Program p = runtime::Program::compile(g.ir());
  ASSERT_GT(p.plan().kernels[0].config.split_k, 1) << ir::print(p.plan().kernels[0]);
  std::vector<HostTensor> inputs = ir::random_inputs(g.ir(), 3);
  HostTensor first = p.run(inputs)[0];
  for (int run = 0; run < 3; ++run) EXPECT_EQ(p.run(inputs)[0].values, first.values);
  Comparison c = compare(first, ir::evaluate(g.ir(), inputs)[0]);
  EXPECT_TRUE(c.passed) << c.str();
}

}  // namespace
}  // namespace kiln
