// fp8 products without a GPU: a matmul of widened fp8 operands folds the casts into the
// gemm kernel; under sm_90a with both operands K-contiguous, the wgmma schedule loads
// their bytes (1-byte tensor maps, 128 elements of K a step) and multiplies them with
// k32 fp8 products; elsewhere the widening runs in the operand loads. Every variant
// compiles through NVRTC.
#include <gtest/gtest.h>

#include <regex>
#include <string>

#include "codegen/emit.h"
#include "codegen_test_util.h"
#include "frontend/kiln.h"
#include "ir/kernel.h"
#include "ir/printer.h"
#include "ir/tile_config.h"
#include "passes/lower.h"
#include "passes/pass_manager.h"
#include "runtime/nvrtc.h"

namespace kiln {
namespace {

using test::contains;

struct Fp8Product {
  DType a = DType::f8e4m3, b = DType::f8e4m3;
  DType wide = DType::bf16;  // what the casts widen to: the product's dtype
  bool transpose_b = true;   // B stored [N, K]: K-contiguous
  bool scales = true;        // a scale per row of A and per column of B after the product
};

// y = wide(A) @ wide(B)^T (* sa * sb), lowered under the current target.
ir::Kernel lowered(const Fp8Product& p, int64_t m, int64_t n, int64_t k) {
  kiln::Graph g("fp8");
  auto a = g.input("a", p.a, {m, k});
  auto b = g.input("b", p.b, p.transpose_b ? Shape{n, k} : Shape{k, n});
  auto y = kiln::matmul(kiln::cast(a, p.wide), kiln::cast(b, p.wide), false, p.transpose_b);
  if (p.scales) {
    auto sa = g.input("sa", DType::f32, {m, 1});
    auto sb = g.input("sb", DType::f32, {1, n});
    y = kiln::cast(kiln::cast(y, DType::f32) * sa * sb, DType::bf16);
  }
  g.output(y);
  ir::Graph ir = g.ir().clone();
  passes::PassManager("fuse", {}).run(ir);
  passes::Plan plan = passes::lower(ir);
  EXPECT_EQ(plan.kernels.size(), 1u) << "the casts and the scales fuse into the gemm kernel";
  return plan.kernels.at(0);
}

std::string compile_log(const ir::Kernel& k, const std::string& arch) {
  runtime::CompileResult r =
      runtime::compile_cuda(codegen::emit_cuda(k), k.name, runtime::CompileOptions{arch, {"--ptxas-options=-v"}});
  EXPECT_FALSE(r.cubin.empty());
  return r.log;
}

int spill_bytes(const std::string& log) {
  std::smatch m;
  return std::regex_search(log, m, std::regex("([0-9]+) bytes spill stores")) ? std::stoi(m[1]) : -1;
}

TEST(GemmFp8, BothOperandsKContiguousTakeFp8WgmmaProducts) {
  const ir::TargetScope target("sm_90a");
  const ir::Kernel k = lowered({}, 4096, 4096, 4096);
  ASSERT_EQ(k.kind, ir::KernelKind::Gemm);
  EXPECT_TRUE(ir::gemm_fp8_products(k));
  EXPECT_EQ(ir::gemm_fp8_operand(k, true), DType::f8e4m3);
  EXPECT_EQ(ir::gemm_tile_element_bytes(k), 1);
  EXPECT_EQ(k.config.schedule, ir::kWgmma) << k.config.str();
  EXPECT_EQ(k.config.bk, 128);  // 128 bytes of K a step, as for 64 f16
  const std::string cuda = codegen::emit_cuda(k);
  EXPECT_TRUE(contains(cuda, "wgmma.mma_async.sync.aligned.m64n256k32.f32.e4m3.e4m3")) << cuda;
  EXPECT_TRUE(contains(cuda, "p, 1, 1;")) << "fp8 products take no transpose immediates";
  const codegen::LaunchDims d = codegen::launch_dims(k);
  ASSERT_EQ(d.tensor_maps.size(), 2u);
  for (const codegen::TensorMapSpec& s : d.tensor_maps) {
    EXPECT_EQ(s.dtype, DType::f8e4m3);  // the stored bytes
    EXPECT_EQ(s.box[0], 128u);          // a 128-byte row of K
    EXPECT_EQ(s.strides[0], 4096u);     // bytes between rows
  }
  EXPECT_TRUE(d.staged.empty());
  const std::string log = compile_log(k, "sm_90a");
  EXPECT_EQ(spill_bytes(log), 0) << log;
  EXPECT_FALSE(contains(log, "warning")) << log;
}

TEST(GemmFp8, MixedFormatsAndAnyWideDtypeMultiplyTheStoredBytes) {
  const ir::TargetScope target("sm_90a");
  for (DType wide : {DType::f16, DType::bf16, DType::f32}) {
    SCOPED_TRACE(dtype_name(wide));
    Fp8Product p;
    p.b = DType::f8e5m2;
    p.wide = wide;
    p.scales = false;
    const ir::Kernel k = lowered(p, 2000, 2048, 1040);  // 256 tiles of 128 x 128
    EXPECT_TRUE(ir::gemm_fp8_products(k)) << ir::print(k);
    EXPECT_EQ(k.config.schedule, ir::kWgmma) << k.config.str();
    EXPECT_TRUE(contains(codegen::emit_cuda(k), ".f32.e4m3.e5m2 ")) << ir::print(k);
  }
}

// wgmma reads fp8 tiles K-major only, and TMA needs rows of 16-byte multiples; the
// product then runs on mma_sync with the widening in its operand loads, as on sm_80.
TEST(GemmFp8, OtherLayoutsAndTargetsWidenInTheOperandLoads) {
  struct Case {
    const char* arch;
    bool transpose_b;
    int64_t k;
  };
  for (const Case& c : {Case{"sm_90a", false, 1024}, Case{"sm_90a", true, 1000}, Case{"sm_80", true, 1024},
                        Case{"sm_89", false, 1000}}) {
    SCOPED_TRACE(fmt::format("{} transpose_b {} K {}", c.arch, c.transpose_b, c.k));
    const ir::TargetScope target(c.arch);
    Fp8Product p;
    p.transpose_b = c.transpose_b;
    const ir::Kernel k = lowered(p, 1000, 1504, c.k);
    EXPECT_EQ(k.config.schedule, ir::kMmaSync) << k.config.str();
    EXPECT_FALSE(k.gemm.a.prologue.empty());
    const std::string cuda = codegen::emit_cuda(k);
    EXPECT_TRUE(contains(cuda, "kiln_f8e4m3_to_float")) << cuda;
    compile_log(k, c.arch);
  }
}

// No other pass or kind takes fp8: a graph that widens one operand only still fuses it
// (the other is f16), and the kernel converts in its loads.
TEST(GemmFp8, OneFp8OperandWidensInItsLoads) {
  const ir::TargetScope target("sm_90a");
  kiln::Graph g("w8");
  auto x = g.input("x", DType::f16, {64, 512});
  auto w = g.input("w", DType::f8e4m3, {256, 512});
  g.output(kiln::matmul(x, kiln::cast(w, DType::f16), false, true));
  ir::Graph ir = g.ir().clone();
  passes::PassManager("fuse", {}).run(ir);
  passes::Plan plan = passes::lower(ir);
  ASSERT_EQ(plan.kernels.size(), 1u);
  const ir::Kernel& k = plan.kernels[0];
  EXPECT_FALSE(ir::gemm_fp8_products(k));
  EXPECT_EQ(ir::gemm_fp8_operand(k, false), DType::f8e4m3);
  compile_log(k, "sm_90a");
}

// One scale per tensor (a scalar input) is an epilogue input like the row scales.
TEST(GemmFp8, AScalePerTensorRunsInTheEpilogue) {
  const ir::TargetScope target("sm_90a");
  kiln::Graph g("per_tensor");
  auto a = g.input("a", DType::f8e4m3, {1024, 512});
  auto b = g.input("b", DType::f8e4m3, {2048, 512});
  auto scale = g.input("scale", DType::f32, {});
  auto y = kiln::matmul(kiln::cast(a, DType::bf16), kiln::cast(b, DType::bf16), false, true);
  g.output(kiln::cast(kiln::cast(y, DType::f32) * scale, DType::bf16));
  ir::Graph ir = g.ir().clone();
  passes::PassManager("fuse", {}).run(ir);
  passes::Plan plan = passes::lower(ir);
  ASSERT_EQ(plan.kernels.size(), 1u);
  EXPECT_TRUE(ir::gemm_fp8_products(plan.kernels[0]));
  EXPECT_TRUE(contains(ir::print(plan.kernels[0]), "load %scale")) << ir::print(plan.kernels[0]);
}

}  // namespace
}  // namespace kiln
