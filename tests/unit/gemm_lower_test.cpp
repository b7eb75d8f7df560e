// Fusion and lowering of matmuls into gemm kernels: the epilogue of element-wise
// consumers, operand layouts from transposes, views and broadcast batch dims, operand
// prologues, several outputs, and what stays out of the kernel (an operand reading two
// tensors, an epilogue reading the product at other elements).
#include <gtest/gtest.h>

#include <string>

#include "frontend/kiln.h"
#include "ir/kernel.h"
#include "ir/parser.h"
#include "passes/lower.h"
#include "passes/pass_manager.h"
#include "runtime/program.h"

namespace kiln {
namespace {

passes::Plan planned(const ir::Graph& graph) {
  ir::Graph g = graph.clone();
  passes::PassManager("decompose,simplify,cse,dce,fuse", {}).run(g);
  return passes::lower(g);
}

ir::Kernel only_gemm(const passes::Plan& p) {
  EXPECT_EQ(p.kernels.size(), 1u);
  EXPECT_EQ(p.kernels.at(0).kind, ir::KernelKind::Gemm);
  return p.kernels.at(0);
}

TEST(GemmLowering, BiasAndGeluFuseIntoTheEpilogue) {
  ir::Graph g = ir::parse(R"(func @mbg(%a: f16[64,32], %b: f16[32,48], %bias: f16[48]) -> (f16[64,48]) {
  %0 = matmul %a, %b {transpose_a = false, transpose_b = false} : f16[64,48]
  %1 = add %0, %bias : f16[64,48]
  %y = gelu %1 {approximate = "none"} : f16[64,48]
  return %y
})");
  const ir::Kernel k = only_gemm(planned(g));
  EXPECT_EQ(ir::print(k),
            "kernel @k0 gemm(%a: f16[64,32], %b: f16[32,48], %bias: f16[48] strides[0,1], out %y: f16[64,48])\n"
            "    matmul 64x48x32 a %a strides[32,1] [K contiguous] b %b strides[48,1] [N contiguous] f16 -> f32\n"
            "    config " + k.config.str() + " {\n"
            "  %0 = acc : f16\n"
            "  %1 = load %bias : f16\n"
            "  %2 = add %0, %1 : f16\n"
            "  %3 = gelu %2 {approximate = \"none\"} : f16\n"
            "  store %y, %3\n"
            "}\n");
  EXPECT_EQ(k.fused_nodes.size(), 3u);
}

TEST(GemmLowering, TransposesBecomeLayouts) {
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      kiln::Graph g("t");
      auto a = g.input("a", DType::f16, ta ? Shape{32, 64} : Shape{64, 32});
      auto b = g.input("b", DType::f16, tb ? Shape{48, 32} : Shape{32, 48});
      g.output(kiln::matmul(a, b, ta, tb));
      const ir::Kernel k = only_gemm(planned(g.ir()));
      EXPECT_EQ(ir::gemm_layout(k, true).k_contiguous, !ta);
      EXPECT_EQ(ir::gemm_layout(k, false).k_contiguous, tb);
      EXPECT_EQ(ir::gemm_layout(k, true).ld, ta ? 64 : 32);
      EXPECT_EQ(ir::gemm_layout(k, false).ld, tb ? 32 : 48);
      EXPECT_EQ(k.gemm.k, 32);
    }
}

TEST(GemmLowering, TransposeAndReshapeOfAnOperandFoldIntoItsLayout) {
  kiln::Graph g("views");
  auto x = g.input("x", DType::f16, {2, 8, 64});
  auto w = g.input("w", DType::f16, {40, 64});
  g.output(kiln::matmul(kiln::reshape(x, {16, 64}), kiln::transpose(w, {1, 0})));
  const ir::Kernel k = only_gemm(planned(g.ir()));
  EXPECT_EQ(k.args[0].strides, (std::vector<int64_t>{64, 1}));
  EXPECT_EQ(k.args[1].strides, (std::vector<int64_t>{1, 64}));  // B[k, n] = w[n, k]
  EXPECT_TRUE(ir::gemm_layout(k, false).k_contiguous);
}

TEST(GemmLowering, ASharedWeightIsReadInPlaceByEveryBatchEntry) {
  kiln::Graph g("shared");
  auto a = g.input("a", DType::bf16, {3, 4, 33, 65});
  auto w = g.input("w", DType::bf16, {65, 47});
  g.output(kiln::matmul(a, w));
  const ir::Kernel k = only_gemm(planned(g.ir()));
  EXPECT_EQ(k.gemm.batch, (Shape{3, 4}));
  EXPECT_EQ(ir::gemm_layout(k, false).batch_strides, (std::vector<int64_t>{0, 0}));
  EXPECT_EQ(ir::gemm_layout(k, true).batch_strides, (std::vector<int64_t>{4 * 33 * 65, 33 * 65}));
  EXPECT_EQ(k.args[1].type.shape, (Shape{65, 47}));  // the weight itself, not a broadcast copy
}

TEST(GemmLowering, CastsAndScalesOfAnOperandFoldIntoItsPrologue) {
  kiln::Graph g("prologue");
  auto x = g.input("x", DType::f32, {70, 130});
  auto w = g.input("w", DType::f16, {130, 96});
  g.output(kiln::matmul(kiln::cast(x, DType::f16) * 0.5, w));
  const ir::Kernel k = only_gemm(planned(g.ir()));
  EXPECT_EQ(k.args[0].type.dtype, DType::f32);
  ASSERT_FALSE(k.gemm.a.prologue.empty());
  EXPECT_EQ(k.gemm.a.prologue.front().kind, ir::ScalarKind::Load);
  EXPECT_EQ(k.gemm.a.prologue.back().dtype, DType::f16);
  EXPECT_TRUE(k.gemm.b.prologue.empty());
  EXPECT_FALSE(ir::gemm_operand_async(k, true));  // through registers, for the prologue
  EXPECT_TRUE(ir::gemm_operand_async(k, false));
}

TEST(GemmLowering, SeveralOutputsIncludingThePreActivation) {
  kiln::Graph g("outs");
  auto a = g.input("a", DType::f16, {64, 32});
  auto b = g.input("b", DType::f16, {32, 48});
  auto mm = kiln::matmul(a, b).name("mm");
  g.output(kiln::relu(mm).name("r"));
  g.output(mm);
  g.output(kiln::cast(mm, DType::f32).name("wide"));
  const ir::Kernel k = only_gemm(planned(g.ir()));
  int outputs = 0;
  for (const ir::KernelArg& arg : k.args) outputs += arg.is_output;
  EXPECT_EQ(outputs, 3);
  int accumulators = 0;
  for (const ir::ScalarOp& op : k.body) accumulators += op.kind == ir::ScalarKind::Acc;
  EXPECT_EQ(accumulators, 1);
}

TEST(GemmLowering, AnOperandReadingTwoTensorsIsWrittenFirst) {
  kiln::Graph g("two");
  auto x = g.input("x", DType::f16, {64, 32});
  auto y = g.input("y", DType::f16, {64, 32});
  auto w = g.input("w", DType::f16, {32, 48});
  g.output(kiln::matmul(x + y, w));
  passes::Plan p = planned(g.ir());
  ASSERT_EQ(p.kernels.size(), 2u);
  EXPECT_EQ(p.kernels[0].kind, ir::KernelKind::Pointwise);
  EXPECT_EQ(p.kernels[1].kind, ir::KernelKind::Gemm);
}

TEST(GemmLowering, AnEpilogueReadingOtherElementsOfTheProductStaysOut) {
  kiln::Graph g("square");
  auto a = g.input("a", DType::f16, {48, 32});
  auto b = g.input("b", DType::f16, {32, 48});
  auto mm = kiln::matmul(a, b);
  g.output(mm + kiln::transpose(mm, {1, 0}));
  passes::Plan p = planned(g.ir());
  ASSERT_EQ(p.kernels.size(), 2u);
  EXPECT_EQ(p.kernels[0].kind, ir::KernelKind::Gemm);
  EXPECT_EQ(p.kernels[1].kind, ir::KernelKind::Pointwise);
}

TEST(GemmLowering, TheExamplesLowerToOneTensorCoreKernel) {
  for (const char* example : {"matmul_bias_gelu", "causal_attention"}) {
    SCOPED_TRACE(example);
    runtime::ProgramOptions options;
    options.arch = "sm_90a";
    ir::Graph g = ir::parse_file(std::string(KILN_SOURCE_DIR) + "/examples/" + example + ".kiln");
    runtime::Program p = runtime::Program::compile(g, options);
    ASSERT_EQ(p.plan().kernels.size(), 1u);
    EXPECT_EQ(p.plan().kernels[0].kind,
              std::string(example) == "matmul_bias_gelu" ? ir::KernelKind::Gemm : ir::KernelKind::Attention);
  }
}

}  // namespace
}  // namespace kiln
