// runtime::reference_outputs without a GPU: which matmuls would go to the GPU, the
// CPU interpreter's results unchanged when none can, and the GPU product's kernel
// compiling through NVRTC for sm_90a (the GPU test checks its numbers).
#include <gtest/gtest.h>

#include "frontend/kiln.h"
#include "ir/interpreter.h"
#include "runtime/cuda_driver.h"
#include "runtime/nvrtc.h"
#include "runtime/reference.h"
#include "runtime/reference_matmul.h"

namespace kiln {
namespace {

const ir::Node& matmul_of(const ir::Graph& g) {
  for (const ir::Node* n : g.nodes())
    if (n->op == ir::OpKind::Matmul) return *n;
  throw Error("no matmul");
}

ir::Graph product(Shape a, Shape b, bool ta = false, bool tb = false) {
  kiln::Graph g("product");
  auto x = g.input("a", DType::f16, a);  // one statement each: the inputs keep this order
  auto y = g.input("b", DType::f16, b);
  g.output(kiln::matmul(x, y, ta, tb));
  return g.ir().clone();
}

TEST(Reference, CountsMultiplyAddsOverBatchAndTransposes) {
  EXPECT_EQ(runtime::matmul_multiply_adds(matmul_of(product({4096, 4096}, {4096, 4096}))), int64_t{1} << 36);
  EXPECT_EQ(runtime::matmul_multiply_adds(matmul_of(product({3, 1, 5, 7}, {2, 7, 11}))), 3 * 2 * 5 * 11 * 7);
  EXPECT_EQ(runtime::matmul_multiply_adds(matmul_of(product({7, 5}, {11, 7}, true, true))), 5 * 11 * 7);
}

TEST(Reference, OnlyMatmulsPastTheThresholdGoToTheGpu) {
  EXPECT_TRUE(runtime::wants_gpu_reference(matmul_of(product({4096, 4096}, {4096, 4096}))));
  EXPECT_TRUE(runtime::wants_gpu_reference(matmul_of(product({32, 1024, 1024}, {32, 1024, 1024}))));
  EXPECT_FALSE(runtime::wants_gpu_reference(matmul_of(product({1024, 256}, {256, 1024}))));  // exactly 2^28
  EXPECT_TRUE(runtime::wants_gpu_reference(matmul_of(product({1024, 257}, {257, 1024}))));
  EXPECT_FALSE(runtime::wants_gpu_reference(matmul_of(product({65, 129}, {129, 33}))));
  ir::Graph g = product({4096, 4096}, {4096, 4096});
  for (const ir::Node* n : g.nodes()) {
    if (n->op != ir::OpKind::Matmul) {
      EXPECT_FALSE(runtime::wants_gpu_reference(*n));
    }
  }
}

TEST(Reference, SmallGraphsAreTheInterpretersOwn) {
  kiln::Graph dsl("matmul_bias_gelu");
  auto a = dsl.input("a", DType::f16, {2, 37, 19});
  auto b = dsl.input("b", DType::f16, {19, 23});
  auto bias = dsl.input("bias", DType::f16, {23});
  dsl.output(kiln::gelu(kiln::matmul(a, b) + bias, "tanh"));
  const ir::Graph& g = dsl.ir();
  std::vector<HostTensor> inputs = ir::random_inputs(g, 3);
  runtime::ReferenceReport how;
  std::vector<HostTensor> got = runtime::reference_outputs(g, inputs, &how);
  std::vector<HostTensor> want = ir::evaluate(g, inputs);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].type, want[0].type);
  EXPECT_EQ(got[0].values, want[0].values);
  EXPECT_TRUE(how.gpu_nodes.empty());
}

TEST(Reference, WithoutAGpuALargeProductRunsOnTheCpu) {
  if (runtime::gpu_available()) GTEST_SKIP() << "a GPU is present: tests/gpu/reference_gpu_test.cpp covers it";
  // Just past the threshold, so that the interpreter takes a fraction of a second.
  ir::Graph g = product({512, 1025}, {1025, 513});
  ASSERT_TRUE(runtime::wants_gpu_reference(matmul_of(g)));
  std::vector<HostTensor> inputs = ir::random_inputs(g, 5);
  runtime::ReferenceReport how;
  std::vector<HostTensor> got = runtime::reference_outputs(g, inputs, &how);
  EXPECT_EQ(got[0].values, ir::evaluate(g, inputs)[0].values);
  EXPECT_TRUE(how.gpu_nodes.empty());
}

TEST(Reference, TheGpuProductCompilesForSm90aWithoutAGpu) {
  for (DType t : {DType::f16, DType::bf16, DType::f32}) {
    runtime::CompileResult r = runtime::compile_cuda(runtime::reference_matmul_source(t),
                                                     runtime::kReferenceMatmulEntry, {"sm_90a", {}});
    EXPECT_FALSE(r.cubin.empty()) << dtype_name(t);
    EXPECT_NE(r.ptx.find(runtime::kReferenceMatmulEntry), std::string::npos) << dtype_name(t);
    // No Tensor Core instructions: the reference is plain fp32 arithmetic.
    EXPECT_EQ(r.ptx.find("mma"), std::string::npos) << dtype_name(t);
  }
  EXPECT_THROW(runtime::reference_matmul_source(DType::i32), Error);
}

TEST(Reference, TheGpuProductNeedsAGpu) {
  if (runtime::gpu_available()) GTEST_SKIP() << "a GPU is present";
  ir::Graph g = product({3, 4}, {4, 5});
  std::vector<HostTensor> inputs = ir::random_inputs(g, 1);
  EXPECT_THROW(runtime::gpu_matmul(matmul_of(g), inputs[0], inputs[1]), Error);
}

}  // namespace
}  // namespace kiln
