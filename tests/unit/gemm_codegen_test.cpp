// The gemm kind's tile rules and generated CUDA: a legal default and enough
// candidates for every shape, split K where tiles cannot fill the GPU, clear errors for
// illegal configs, and kernels that compile through NVRTC for sm_90a and sm_80 with no
// warning and, in their default configs, no register spill (ptxas -v).
#include <gtest/gtest.h>
#include <stdlib.h>

#include <regex>
#include <string>

#include "codegen/emit.h"
#include "codegen_test_util.h"
#include "frontend/kiln.h"
#include "ir/error.h"
#include "ir/tile_config.h"
#include "passes/lower.h"
#include "passes/pass_manager.h"
#include "runtime/nvrtc.h"

namespace kiln {
namespace {

using test::contains;

struct Shape3 {
  int64_t m, n, k;
};

// The gemm kernel of y = gelu_tanh(a @ b + bias) as lowering makes it.
ir::Kernel gemm_kernel(DType dt, Shape3 s, bool ta = false, bool tb = false, bool epilogue = true) {
  kiln::Graph g("g");
  auto a = g.input("a", dt, ta ? Shape{s.k, s.m} : Shape{s.m, s.k});
  auto b = g.input("b", dt, tb ? Shape{s.n, s.k} : Shape{s.k, s.n});
  auto mm = kiln::matmul(a, b, ta, tb);
  if (epilogue) {
    auto bias = g.input("bias", dt, {s.n});
    g.output(kiln::gelu(mm + bias, "tanh"));
  } else {
    g.output(mm);
  }
  ir::Graph ir = g.ir().clone();
  passes::PassManager("fuse", {}).run(ir);
  passes::Plan p = passes::lower(ir);
  EXPECT_EQ(p.kernels.size(), 1u);
  return p.kernels.at(0);
}

// The same kernel on the mma_sync schedule (the default where wgmma is not available).
ir::Kernel on_mma_sync(ir::Kernel k) {
  const ir::TargetScope ampere("sm_80");
  k.config = ir::heuristic(k);
  return k;
}

const Shape3 kShapes[] = {{1, 1, 1},       {17, 33, 65},       {127, 255, 513},  {4096, 4096, 4096},
                          {4093, 4099, 4097}, {16, 8192, 8192}, {1024, 1024, 65536}, {64, 64, 64}};

TEST(GemmTile, EveryShapeHasALegalDefaultAndCandidates) {
  for (DType dt : {DType::f16, DType::bf16, DType::f32})
    for (const Shape3& s : kShapes)
      for (bool tb : {false, true}) {
        SCOPED_TRACE(fmt::format("{} {}x{}x{} tb {}", dtype_name(dt), s.m, s.n, s.k, tb));
        ir::Kernel k = gemm_kernel(dt, s, false, tb);
        EXPECT_NO_THROW(ir::validate(k, k.config));
        std::vector<ir::TileConfig> all = ir::candidates(k);
        EXPECT_NE(std::find(all.begin(), all.end(), k.config), all.end()) << k.config.str();
        for (const ir::TileConfig& c : all) EXPECT_NO_THROW(ir::validate(k, c)) << c.str();
        const int want = dt == DType::f32 ? ir::kSimt : ir::gemm_wgmma_heuristic(k) ? ir::kWgmma : ir::kMmaSync;
        EXPECT_EQ(k.config.schedule, want);
      }
}

TEST(GemmTile, LargeProductsSweepTwentyFourOrMoreConfigs) {
  EXPECT_GE(ir::candidates(gemm_kernel(DType::f16, {4096, 4096, 4096})).size(), 24u);
  EXPECT_GE(ir::candidates(gemm_kernel(DType::bf16, {8192, 8192, 8192})).size(), 24u);
}

TEST(GemmTile, SplitKOnlyWhereTilesLeaveSmsIdle) {
  EXPECT_EQ(gemm_kernel(DType::f16, {4096, 4096, 4096}).config.split_k, 1);
  ir::Kernel narrow = gemm_kernel(DType::f16, {16, 8192, 8192});
  EXPECT_GT(narrow.config.split_k, 1);
  EXPECT_EQ(narrow.config.bm, 16);
  EXPECT_GT(gemm_kernel(DType::f16, {1024, 1024, 65536}).config.split_k, 1);
}

TEST(GemmTile, Tf32IsUsedOnlyWhenAsked) {
  EXPECT_FALSE(gemm_kernel(DType::f32, {64, 64, 64}).gemm.tf32);
  setenv("KILN_TF32", "1", 1);
  ir::Kernel k = gemm_kernel(DType::f32, {64, 64, 64});
  unsetenv("KILN_TF32");
  EXPECT_TRUE(k.gemm.tf32);
  EXPECT_EQ(k.config.schedule, ir::kMmaSync);
}

TEST(GemmTile, IllegalConfigsSayWhichRule) {
  ir::Kernel k = on_mma_sync(gemm_kernel(DType::f16, {4096, 4096, 4096}));
  auto error = [&](ir::TileConfig c) {
    try {
      ir::validate(k, c);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  ir::TileConfig c = k.config;
  c.bk = 16;
  EXPECT_TRUE(contains(error(c), "a tile row of K must be 64 or 128 bytes")) << error(c);
  c = k.config;
  c.bk = 64;
  c.stages = 8;
  EXPECT_TRUE(contains(error(c), "bytes of shared memory")) << error(c);
  c = k.config;
  c.schedule = ir::kSimt;
  EXPECT_TRUE(contains(error(c), "schedule simt multiplies exact f32")) << error(c);
  c = k.config;
  c.warps_m = 1;
  EXPECT_TRUE(contains(error(c), "more than 64 x 64 accumulators")) << error(c);
  c = k.config;
  c.split_k = 1000;
  EXPECT_TRUE(contains(error(c), "empty slice")) << error(c);
}

// Registers and spills of one compile, from ptxas -v.
struct Resources {
  int registers = -1, spill_bytes = -1;
};

Resources compile_with_ptxas_report(const ir::Kernel& k, const std::string& arch) {
  const ir::TargetScope target(arch);
  runtime::CompileResult r =
      runtime::compile_cuda(codegen::emit_cuda(k), k.name, runtime::CompileOptions{arch, {"--ptxas-options=-v"}});
  EXPECT_FALSE(r.cubin.empty());
  EXPECT_FALSE(contains(r.log, "warning")) << r.log;
  Resources res;
  std::smatch m;
  if (std::regex_search(r.log, m, std::regex("Used ([0-9]+) registers"))) res.registers = std::stoi(m[1]);
  if (std::regex_search(r.log, m, std::regex("([0-9]+) bytes spill stores"))) res.spill_bytes = std::stoi(m[1]);
  return res;
}

TEST(GemmCodegen, DefaultConfigsCompileWithoutSpills) {
  for (DType dt : {DType::f16, DType::bf16, DType::f32})
    for (const Shape3& s : {Shape3{4096, 4096, 4096}, Shape3{4093, 4099, 4097}, Shape3{16, 8192, 8192},
                            Shape3{127, 255, 513}})
      for (bool tb : {false, true}) {
        SCOPED_TRACE(fmt::format("{} {}x{}x{} tb {}", dtype_name(dt), s.m, s.n, s.k, tb));
        const ir::Kernel k = gemm_kernel(dt, s, false, tb);
        const Resources r = compile_with_ptxas_report(k, "sm_90a");
        EXPECT_EQ(r.spill_bytes, 0) << k.config.str();
        EXPECT_GT(r.registers, 0);
      }
}

TEST(GemmCodegen, EveryCandidateOfALargeProductCompilesWithoutSpills) {
  const ir::Kernel k = gemm_kernel(DType::f16, {4096, 4096, 4096});
  for (const ir::TileConfig& c : ir::candidates(k)) {
    ir::Kernel v = k;
    v.config = c;
    EXPECT_EQ(compile_with_ptxas_report(v, "sm_90a").spill_bytes, 0) << c.str();
  }
}

TEST(GemmCodegen, CompilesForSm80Too) {
  for (bool ta : {false, true})
    for (bool tb : {false, true}) test::expect_compiles({gemm_kernel(DType::bf16, {127, 255, 513}, ta, tb)}, "sm80");
  test::expect_compiles({gemm_kernel(DType::f32, {127, 255, 513}, true, false)}, "sm80_f32");
}

TEST(GemmCodegen, TheSourceReadsAsAGemm) {
  const std::string cuda = codegen::emit_cuda(on_mma_sync(gemm_kernel(DType::f16, {4096, 4096, 4096})));
  for (const char* part : {"// ---- kernel k0: gemm 4096 x 4096 x 4096", "// Fuses:", "%1 = add", "// Config {",
                           "kiln_ldmatrix_x4_trans(", "kiln_mma_f16(", "kiln_copy_async16_zfill(",
                           "kiln_copy_async_wait_group<", "groups of 8 tile rows", "k0_epilogue<",
                           "kiln_store16(reinterpret_cast<uint4*>(out_"})
    EXPECT_TRUE(contains(cuda, part)) << part << "\n" << cuda;
  // The main loop is written once.
  EXPECT_EQ(cuda.find("for (int step = 0; step < k_steps; ++step)"),
            cuda.rfind("for (int step = 0; step < k_steps; ++step)"));
  // Unaligned rows: element loads through registers, stored to shared memory a K step later.
  const std::string odd = codegen::emit_cuda(on_mma_sync(gemm_kernel(DType::f16, {4093, 4099, 4097})));
  EXPECT_TRUE(contains(odd, "a_hold[i].v[j] = ("));
  EXPECT_TRUE(contains(odd, "if (held) {"));
  EXPECT_FALSE(contains(odd, "kiln_copy_async16_zfill("));
  // A split K: module-scope partials and tickets, summed in slice order.
  const std::string split = codegen::emit_cuda(gemm_kernel(DType::f16, {16, 8192, 8192}));
  EXPECT_TRUE(contains(split, "__device__ float kiln_k0_partials["));
  EXPECT_TRUE(contains(split, "in slice order"));
  // One thread takes the tile's ticket (release and acquire): no fence.sc on either side.
  EXPECT_TRUE(contains(split, "kiln_take_ticket(&kiln_k0_tickets[")) << split;
  EXPECT_FALSE(contains(split, "__threadfence")) << split;
}

}  // namespace
}  // namespace kiln
