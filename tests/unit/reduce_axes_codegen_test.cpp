// The col-reduce emitter over any set of axes: a middle axis reads 16-byte vectors
// along the innermost kept dim, a reduction whose innermost dim is reduced reads them
// along the reduced dims, logsumexp and var keep their pairs and triples, and every
// generated kernel (each op, dtype and axis pattern, split or not) compiles through
// NVRTC for sm_90a and sm_80 without a warning.
#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>

#include "codegen/emit.h"
#include "codegen_test_util.h"
#include "ir/parser.h"
#include "passes/lower.h"
#include "passes/pass_manager.h"
#include "reduce_axes_test_graphs.h"

namespace kiln {
namespace {

using reduce_axes_test::reduce_graph;

std::vector<ir::Kernel> kernels_of(const std::string& text, const std::string& prefix) {
  ir::Graph g = ir::parse(text, "reduce_axes_codegen_test");
  std::ostringstream quiet;
  passes::PassManager("decompose,simplify,cse,dce,online-softmax,welford,fuse,tile", {}, quiet).run(g);
  std::vector<ir::Kernel> ks = passes::lower(g).kernels;
  for (ir::Kernel& k : ks) k.name = prefix + "_" + k.name;
  return ks;
}

TEST(ReduceAxesCodegen, MiddleAxisReadsVectorsAlongTheKeptInnerDim) {
  auto ks = kernels_of(reduce_graph("sum", "f32", {16, 64, 256}, {1}, false), "mid");
  ASSERT_EQ(ks.size(), 1u);
  std::string cuda = codegen::emit_cuda(ks);
  EXPECT_TRUE(test::contains(cuda, "kiln_vec<float, 4>")) << cuda;
  // The column's (k1, k2) digits: k1 = col0 / 256 steps 64 * 256 elements.
  EXPECT_TRUE(test::contains(cuda, "((col0) / 256u) * 16384u")) << cuda;
  EXPECT_EQ(codegen::launch_dims(ks[0]).block[0], static_cast<unsigned>(ks[0].config.cols / 4 * ks[0].config.k_threads));
}

TEST(ReduceAxesCodegen, OuterAndInnerAxesReadVectorsAlongTheReducedDims) {
  auto ks = kernels_of(reduce_graph("sum", "f16", {3, 1000, 8}, {0, 2}, false), "oi");
  ASSERT_EQ(ks.size(), 1u);
  EXPECT_EQ(ks[0].config.cols, 1);
  std::string cuda = codegen::emit_cuda(ks);
  EXPECT_TRUE(test::contains(cuda, "kiln_vec<__half, 8>")) << cuda;
  EXPECT_EQ(codegen::launch_dims(ks[0]).grid[0], 1000u);  // a block per column
}

TEST(ReduceAxesCodegen, LogSumExpAndVarKeepTheirPartsAcrossThreadsAndSlices) {
  for (const char* op : {"logsumexp", "var"}) {
    SCOPED_TRACE(op);
    auto ks = kernels_of(reduce_graph(op, "f32", {8, 4096, 64}, {1}, true), op);
    ASSERT_EQ(ks.size(), 1u);
    ir::Kernel k = ks[0];
    k.config.k_split = 4;
    std::string cuda = codegen::emit_cuda(k);
    const std::string helper = std::string(op) == "var" ? "kiln_welford_add(" : "kiln_lse_add(";
    EXPECT_TRUE(test::contains(cuda, helper)) << cuda;
    EXPECT_FALSE(test::contains(cuda, " + e0;")) << cuda;  // never a plain sum
    const int slots = std::string(op) == "var" ? 3 : 2;
    EXPECT_TRUE(test::contains(cuda, "__shared__ float kiln_part[" + std::to_string(slots) + "]")) << cuda;
    EXPECT_TRUE(test::contains(cuda, "partials[" + std::to_string(slots * 4 * 8 * 64) + "]")) << cuda;
  }
}

// Every op, dtype and axis pattern; for f32 also each kernel at the most slices its
// sweep offers, so that the split path compiles for every pattern.
TEST(ReduceAxesCodegen, EveryOpDtypeAndPatternCompiles) {
  for (const char* dt : {"f32", "f16", "bf16"}) {
    std::vector<ir::Kernel> all;
    int i = 0;
    for (const char* op : reduce_axes_test::kOps)
      for (const auto& c : reduce_axes_test::kCases) {
        for (ir::Kernel& k : kernels_of(reduce_graph(op, dt, c.shape, c.axes, false), "p" + std::to_string(i))) {
          if (std::string(dt) == "f32" && k.kind == ir::KernelKind::ColReduce) {
            std::vector<ir::TileConfig> configs = ir::candidates(k);
            auto most = std::max_element(configs.begin(), configs.end(),
                                         [](const auto& a, const auto& b) { return a.k_split < b.k_split; });
            if (most != configs.end() && most->k_split > 1) {
              ir::Kernel split = k;
              split.name += "_split";
              split.config = *most;
              all.push_back(std::move(split));
            }
          }
          all.push_back(std::move(k));
        }
        ++i;
      }
    test::expect_compiles(all, std::string("reduce_axes_") + dt);
  }
}

}  // namespace
}  // namespace kiln
