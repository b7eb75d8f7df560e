// The col-reduce emitter: the shape of the generated CUDA (16-byte column vectors,
// a fixed-order combine, slices of K combined by the last block without floating-
// point atomics) and that every generated kernel compiles through NVRTC for sm_90a and
// sm_80 without a warning: sum / max / min / mean over columns and over everything,
// in f32, f16 and bf16, for odd and even sizes, with and without split K, and with a
// fused prologue (broadcasts, iota) and epilogue.
#include <gtest/gtest.h>

#include "codegen_test_util.h"

#include <sstream>

#include "codegen/emit.h"
#include "col_reduce_test_graphs.h"
#include "ir/parser.h"
#include "passes/lower.h"
#include "passes/pass_manager.h"
#include "runtime/program.h"

namespace kiln {
namespace {

std::vector<ir::Kernel> kernels_of(const std::string& text, const std::string& prefix,
                                   const std::string& pipeline = "decompose,simplify,cse,dce,fuse,tile") {
  ir::Graph g = ir::parse(text, "col_reduce_codegen_test");
  std::ostringstream quiet;
  passes::PassManager(pipeline, {}, quiet).run(g);
  std::vector<ir::Kernel> ks = passes::lower(g).kernels;
  for (ir::Kernel& k : ks) k.name = prefix + "_" + k.name;
  return ks;
}

size_t count(const std::string& s, const std::string& part) {
  size_t n = 0;
  for (size_t at = s.find(part); at != std::string::npos; at = s.find(part, at + 1)) ++n;
  return n;
}

TEST(ColReduceCodegen, TallColumnSumReadsCoalesced16ByteVectorsAndSplitsK) {
  auto ks = kernels_of(col_reduce_test::column_graph("sum", "f32", 65536, 256), "sq");
  ASSERT_EQ(ks.size(), 1u);
  std::string cuda = codegen::emit_cuda(ks);
  EXPECT_TRUE(test::contains(cuda, "kiln_vec<float, 4>")) << cuda;
  EXPECT_TRUE(test::contains(cuda, "__device__ float kiln_sq_k0_partials[16384];")) << cuda;  // 64 slices x 256
  EXPECT_EQ(count(cuda, "kiln_take_ticket(&"), 1u) << cuda;  // the ticket only: partials are combined in order
  EXPECT_FALSE(test::contains(cuda, "atomicAdd")) << cuda;
  EXPECT_FALSE(test::contains(cuda, "__threadfence")) << cuda;  // the ticket's release and acquire order the partials
  EXPECT_TRUE(test::contains(cuda, "__ldcg(&kiln_sq_k0_partials[")) << cuda;
  codegen::LaunchDims d = codegen::launch_dims(ks[0]);
  EXPECT_EQ(d.grid[0], 8u);    // 8 tiles of 32 columns
  EXPECT_EQ(d.grid[1], 64u);   // K slices
  EXPECT_EQ(d.block[0], 512u);  // 8 column threads x 64 along K
}

TEST(ColReduceCodegen, UnsplitKernelHasNoScratch) {
  auto ks = kernels_of(col_reduce_test::column_graph("max", "f16", 3, 128), "small");
  ASSERT_EQ(ks.size(), 1u);
  ASSERT_EQ(ks[0].config.k_split, 1);
  std::string cuda = codegen::emit_cuda(ks);
  EXPECT_FALSE(test::contains(cuda, "__device__ float")) << cuda;
  EXPECT_FALSE(test::contains(cuda, "atomicAdd")) << cuda;
  EXPECT_FALSE(test::contains(cuda, "kiln_take_ticket")) << cuda;
}

TEST(ColReduceCodegen, FullReductionVectorisesAlongK) {
  auto ks = kernels_of(col_reduce_test::full_graph("sum", "bf16", 4096, 1024), "full");
  ASSERT_EQ(ks.size(), 1u);
  std::string cuda = codegen::emit_cuda(ks);
  EXPECT_TRUE(test::contains(cuda, "kiln_vec<__nv_bfloat16, 8>")) << cuda;
  EXPECT_EQ(codegen::launch_dims(ks[0]).grid[0], 1u);
  EXPECT_GT(codegen::launch_dims(ks[0]).grid[1], 100u);
}

// A logsumexp or a var keeps more than a sum: a running max and sum, or Welford's count,
// mean and squared deviations, merged as such across threads and K slices.
TEST(ColReduceCodegen, LogSumExpAndVarKeepTheirWholeState) {
  for (long k : {1000L, 65536L}) {  // one slice, and K split across blocks
    auto lse = kernels_of(col_reduce_test::column_graph("logsumexp", "f32", k, 8), "lse");
    ASSERT_EQ(lse.size(), 1u);
    const std::string a = codegen::emit_cuda(lse);
    EXPECT_TRUE(test::contains(a, "kiln_lse_add(acc1_m[t], acc1_s[t], e0, 1.0f);")) << a;
    EXPECT_TRUE(test::contains(a, "kiln_lse_result(res1_m[t], res1_s[t])")) << a;
    auto var = kernels_of(col_reduce_test::column_graph("var", "f32", k, 8), "var");
    ASSERT_EQ(var.size(), 1u);
    const std::string v = codegen::emit_cuda(var);
    EXPECT_TRUE(test::contains(v, "kiln_welford_add(acc1_n[t], acc1_mean[t], acc1_m2[t], 1.0f, e0, 0.0f);")) << v;
    EXPECT_FALSE(test::contains(v, "acc1[t] + e0")) << v;
  }
}

// A bf16 layer norm over the leading axis: its statistics cross kernels in f32 (a bf16
// mean would lose what x - mean keeps), and no kernel writes an f32 copy of x.
TEST(ColReduceCodegen, LowPrecisionNormOverALeadingAxisKeepsItsStatisticsInF32) {
  auto ks = kernels_of(R"(func @f(%x: bf16[517,9], %w: bf16[517]) -> (bf16[517,9]) {
  %y = layer_norm %x, %w, %w {axis = 0, eps = 1e-05} : bf16[517,9]
  return %y
})",
                       "ln", std::string(runtime::kCompilePipeline));
  ASSERT_EQ(ks.size(), 2u);
  EXPECT_EQ(ks[0].kind, ir::KernelKind::ColReduce);
  for (const ir::Kernel& k : ks)
    for (const ir::KernelArg& a : k.args) {
      if (a.is_output && k.kind == ir::KernelKind::ColReduce) {
        EXPECT_EQ(a.type.dtype, DType::f32) << ir::print(k);
      }
      if (!a.is_output && a.type.shape == Shape{517, 9}) {
        EXPECT_EQ(a.type.dtype, DType::bf16) << ir::print(k);
      }
    }
}

TEST(ColReduceCodegen, EveryOpDtypeAndSizeCompiles) {
  const long shapes[][2] = {{1000, 4096}, {3, 127}, {65536, 5}, {1, 50257}, {127, 1}};
  for (const char* dt : {"f32", "f16", "bf16"}) {
    std::vector<ir::Kernel> all;
    int i = 0;
    for (const char* op : col_reduce_test::kOps)
      for (const auto& s : shapes) {
        for (ir::Kernel& k : kernels_of(col_reduce_test::column_graph(op, dt, s[0], s[1]), "c" + std::to_string(i))) {
          // A column reduction of one row reduces one element a column: simplify leaves a
          // copy (var stays: of an infinite element it is NaN).
          if (s[0] == 1 && std::string(op) != "var") {
            EXPECT_EQ(k.kind, ir::KernelKind::Pointwise) << ir::print(k);
          } else {
            all.push_back(std::move(k));
          }
        }
        for (ir::Kernel& k : kernels_of(col_reduce_test::full_graph(op, dt, s[0], s[1]), "f" + std::to_string(i)))
          all.push_back(std::move(k));
        ++i;
      }
    for (const ir::Kernel& k : all) {
      ASSERT_TRUE(k.kind == ir::KernelKind::ColReduce || k.kind == ir::KernelKind::RowReduce) << ir::print(k);
    }
    test::expect_compiles(all, std::string("col_reduce_") + dt);
  }
}

TEST(ColReduceCodegen, FusedPrologueAndEpilogueCompile) {
  auto ks = kernels_of(R"(func @f(%x: f16[640,1000], %r: f16[640,1], %w: bf16[1000]) -> (bf16[1000], f32[1,1000]) {
  %a = add %x, %r : f16[640,1000]
  %i = iota {axis = 0} : i32[640,1000]
  %fi = cast %i : f16[640,1000]
  %b = mul %a, %fi : f16[640,1000]
  %s = sum %b {axis = [0], keepdim = true} : f16[1,1000]
  %m = max %a {axis = [0], keepdim = true} : f16[1,1000]
  %d = div %s, %m : f16[1,1000]
  %c = cast %d : bf16[1,1000]
  %rc = reshape %c : bf16[1000]
  %y = mul %rc, %w : bf16[1000]
  %o = cast %m : f32[1,1000]
  return %y, %o
})",
                       "fused");
  ASSERT_FALSE(ks.empty());
  EXPECT_EQ(ks[0].kind, ir::KernelKind::ColReduce);
  test::expect_compiles(ks, "col_reduce_fused");
}

TEST(ColReduceCodegen, Rank3WithMixedDimsCompiles) {
  auto ks = kernels_of(R"(func @f(%x: f32[6,10,33], %v: f32[10,1]) -> (f32[33]) {
  %a = mul %x, %v : f32[6,10,33]
  %s = mean %a {axis = [0, 1]} : f32[33]
  return %s
})",
                       "rank3");
  ASSERT_EQ(ks.size(), 1u);
  EXPECT_EQ(ks[0].kind, ir::KernelKind::ColReduce);
  EXPECT_EQ(ir::collapse(ks[0]).dims.size(), 3u);  // %v's broadcast keeps the two K dims apart
  test::expect_compiles(ks, "col_reduce_rank3");
}

}  // namespace
}  // namespace kiln
