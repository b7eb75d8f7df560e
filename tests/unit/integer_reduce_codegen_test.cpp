// i32 sum, max and min lower to row_reduce and col_reduce kernels (last axis, first,
// middle, several, all) with integer accumulators: a 64-bit sum saturated once, 32-bit
// max / min from the i32 bounds, 64-bit shared-memory slots and split partials apart
// from a float reduction's in the same kernel. Every kernel, its block-wide, cluster
// and split variants included, compiles through NVRTC for sm_90a and sm_80 without a
// warning or a register spill.
#include <gtest/gtest.h>

#include <algorithm>
#include <regex>
#include <sstream>

#include "codegen/emit.h"
#include "codegen_test_util.h"
#include "integer_reduce_test_graphs.h"
#include "ir/parser.h"
#include "passes/lower.h"
#include "passes/pass_manager.h"

namespace kiln {
namespace {

using integer_reduce_test::Pattern;

std::vector<ir::Kernel> kernels_of(const std::string& text, const std::string& prefix) {
  ir::Graph g = ir::parse(text, "integer_reduce_codegen_test");
  std::ostringstream quiet;
  passes::PassManager("decompose,simplify,cse,dce,online-softmax,welford,fuse,tile", {}, quiet).run(g);
  std::vector<ir::Kernel> ks = passes::lower(g).kernels;
  for (ir::Kernel& k : ks) k.name = prefix + "_" + k.name;
  return ks;
}

const ir::ScalarOp* first_reduce(const ir::Kernel& k) {
  for (const ir::ScalarOp& op : k.body)
    if (op.kind == ir::ScalarKind::Reduce) return &op;
  return nullptr;
}

TEST(IntegerReduceLower, EveryOpAndPatternBecomesAReduceKernel) {
  for (const char* op : integer_reduce_test::kOps)
    for (const auto& c : integer_reduce_test::kCases)
      for (bool keepdim : {false, true}) {
        const std::string text = integer_reduce_test::reduce_graph(op, c, keepdim);
        SCOPED_TRACE(text);
        std::vector<ir::Kernel> ks = kernels_of(text, "k");
        ASSERT_EQ(ks.size(), 1u);
        const ir::KernelKind kind = ks[0].kind;
        if (c.pattern == Pattern::AllAxes) {
          EXPECT_TRUE(kind == ir::KernelKind::RowReduce || kind == ir::KernelKind::ColReduce);
        } else {
          EXPECT_EQ(kind, c.pattern == Pattern::LastAxis ? ir::KernelKind::RowReduce : ir::KernelKind::ColReduce);
        }
        const ir::ScalarOp* r = first_reduce(ks[0]);
        ASSERT_NE(r, nullptr);
        EXPECT_EQ(r->dtype, DType::i32);
      }
}

TEST(IntegerReduceCodegen, SumAccumulatesIn64BitsAndSaturatesOnce) {
  for (const auto& c : {integer_reduce_test::kCases[0], integer_reduce_test::kCases[5]}) {
    std::vector<ir::Kernel> ks = kernels_of(integer_reduce_test::reduce_graph("sum", c, false), "s");
    ASSERT_EQ(ks.size(), 1u);
    const std::string cuda = codegen::emit_cuda(ks);
    EXPECT_TRUE(test::contains(cuda, "long long acc")) << cuda;
    EXPECT_TRUE(test::contains(cuda, "kiln_sat_i32(")) << cuda;
    EXPECT_FALSE(test::contains(cuda, "float acc")) << cuda;
  }
}

TEST(IntegerReduceCodegen, MaxAndMinStartFromTheI32Bounds) {
  for (const char* op : {"max", "min"}) {
    SCOPED_TRACE(op);
    std::vector<ir::Kernel> ks = kernels_of(integer_reduce_test::reduce_graph(op, integer_reduce_test::kCases[3], false),
                                            op);
    ASSERT_EQ(ks.size(), 1u);
    const std::string cuda = codegen::emit_cuda(ks);
    EXPECT_TRUE(test::contains(cuda, std::string(op) == "max" ? "(-2147483647 - 1)" : "2147483647")) << cuda;
    EXPECT_FALSE(test::contains(cuda, "__int_as_float")) << cuda;  // no float infinity as the identity
  }
}

TEST(IntegerReduceCodegen, SplitColumnsKeepIntegerPartialsApart) {
  std::vector<ir::Kernel> ks = kernels_of(integer_reduce_test::kMixedColumns, "mixed");
  ASSERT_EQ(ks.size(), 1u);
  ir::Kernel k = ks[0];
  ASSERT_EQ(k.kind, ir::KernelKind::ColReduce);
  k.config.k_split = 4;
  ir::validate(k, k.config);
  const std::string cuda = codegen::emit_cuda(k);
  EXPECT_TRUE(test::contains(cuda, "__shared__ float kiln_part[1]")) << cuda;       // the mean
  EXPECT_TRUE(test::contains(cuda, "__shared__ long long kiln_ipart[2]")) << cuda;  // the sum and the min
  EXPECT_TRUE(test::contains(cuda, "__device__ long long kiln_mixed_k0_ipartials[" + std::to_string(2 * 4 * 45) + "]"))
      << cuda;
  EXPECT_TRUE(test::contains(cuda, "__device__ float kiln_mixed_k0_partials[" + std::to_string(4 * 45) + "]")) << cuda;
}

TEST(IntegerReduceCodegen, BlockWideRowsCombineThroughIntegerSlots) {
  std::vector<ir::Kernel> ks = kernels_of(integer_reduce_test::kMixedRows, "rows");
  ASSERT_EQ(ks.size(), 1u);
  ir::Kernel k = ks[0];
  ASSERT_EQ(k.kind, ir::KernelKind::RowReduce);
  std::vector<ir::TileConfig> configs = ir::candidates(k);
  auto widest = std::max_element(configs.begin(), configs.end(),
                                 [](const auto& a, const auto& b) { return a.row_threads < b.row_threads; });
  ASSERT_NE(widest, configs.end());
  ASSERT_GT(widest->row_threads, 32);
  k.config = *widest;
  const std::string cuda = codegen::emit_cuda(k);
  EXPECT_TRUE(test::contains(cuda, "__shared__ long long kiln_islots[2]")) << cuda;
  EXPECT_TRUE(test::contains(cuda, "kiln_block_isum<")) << cuda;
  EXPECT_TRUE(test::contains(cuda, "kiln_block_imax<")) << cuda;
  EXPECT_TRUE(test::contains(cuda, "kiln_block_sum<")) << cuda;  // the float mean
}

// The kernels that the compile test covers: each default, and for each its widest
// row config, a cluster config (sm_90a) and the most K slices its sweep offers.
std::vector<ir::Kernel> with_variants(std::vector<ir::Kernel> ks) {
  std::vector<ir::Kernel> all;
  for (ir::Kernel& k : ks) {
    std::vector<ir::TileConfig> configs = ir::candidates(k);
    auto add = [&](const ir::TileConfig& c, const char* what) {
      if (c == k.config) return;
      ir::Kernel v = k;
      v.name += what;
      v.config = c;
      all.push_back(std::move(v));
    };
    if (k.kind == ir::KernelKind::RowReduce) {
      auto widest = std::max_element(configs.begin(), configs.end(),
                                     [](const auto& a, const auto& b) { return a.row_threads < b.row_threads; });
      if (widest != configs.end()) add(*widest, "_wide");
      auto clustered = std::find_if(configs.begin(), configs.end(), [](const auto& c) { return c.cluster > 1; });
      if (clustered != configs.end()) add(*clustered, "_cluster");
    }
    if (k.kind == ir::KernelKind::ColReduce) {
      auto most = std::max_element(configs.begin(), configs.end(),
                                   [](const auto& a, const auto& b) { return a.k_split < b.k_split; });
      if (most != configs.end() && most->k_split > 1) add(*most, "_split");
    }
    all.push_back(std::move(k));
  }
  return all;
}

// Compiles `kernels` as one program for both targets with ptxas' report: no warning,
// and no function spills a register.
void expect_compiles_without_spills(const std::vector<ir::Kernel>& kernels, const std::string& name) {
  for (const char* arch : {"sm_90a", "sm_80"}) {
    SCOPED_TRACE(arch);
    const ir::TargetScope target(arch);
    const std::string source = codegen::emit_cuda(test::configured_for(kernels, arch));
    try {
      runtime::CompileResult r =
          runtime::compile_cuda(source, name, runtime::CompileOptions{arch, {"--ptxas-options=-v"}});
      EXPECT_FALSE(r.cubin.empty());
      EXPECT_FALSE(test::contains(r.log, "warning")) << r.log;
      const std::regex spill("([0-9]+) bytes spill (stores|loads)");
      int reports = 0;
      for (auto it = std::sregex_iterator(r.log.begin(), r.log.end(), spill); it != std::sregex_iterator(); ++it) {
        ++reports;
        EXPECT_EQ((*it)[1].str(), "0") << r.log;
      }
      EXPECT_GT(reports, 0) << "ptxas gave no report:\n" << r.log;
    } catch (const Error& e) {
      ADD_FAILURE() << e.what() << "\n" << source;
    }
  }
}

TEST(IntegerReduceCodegen, EveryOpAndPatternCompilesWithoutSpills) {
  std::vector<ir::Kernel> all;
  int i = 0;
  for (const char* op : integer_reduce_test::kOps)
    for (const auto& c : integer_reduce_test::kCases) {
      for (ir::Kernel& k : with_variants(kernels_of(integer_reduce_test::reduce_graph(op, c, false),
                                                    "p" + std::to_string(i))))
        all.push_back(std::move(k));
      ++i;
    }
  expect_compiles_without_spills(all, "integer_reduce");
}

TEST(IntegerReduceCodegen, MixedAndCastKernelsCompileWithoutSpills) {
  std::vector<ir::Kernel> all;
  int i = 0;
  for (const char* text : {integer_reduce_test::kMixedRows, integer_reduce_test::kMixedColumns,
                           integer_reduce_test::kCastThenSum}) {
    for (ir::Kernel& k : with_variants(kernels_of(text, "m" + std::to_string(i)))) all.push_back(std::move(k));
    ++i;
  }
  for (const char* op : integer_reduce_test::kOps)
    for (ir::Kernel& k : with_variants(kernels_of(
             integer_reduce_test::scaled_reduce_graph(op, integer_reduce_test::kCases[7], true), std::string("s") + op)))
      all.push_back(std::move(k));
  expect_compiles_without_spills(all, "integer_reduce_mixed");
}

// Rows of 65536, long enough for sm_90's cluster candidates: the cluster exchange of
// integer partials compiles. (Spills are not checked: a held row of 64 elements a
// thread with a saturating multiply before the sum spills, as its f32 twin does.)
TEST(IntegerReduceCodegen, ClusteredLongRowsCompile) {
  std::vector<ir::Kernel> all;
  const integer_reduce_test::Case long_rows{{7, 65536}, {1}, Pattern::LastAxis};
  for (const char* op : integer_reduce_test::kOps)
    for (ir::Kernel& k : with_variants(
             kernels_of(integer_reduce_test::scaled_reduce_graph(op, long_rows, true), std::string("l") + op)))
      all.push_back(std::move(k));
  EXPECT_TRUE(std::any_of(all.begin(), all.end(), [](const ir::Kernel& k) { return k.config.cluster > 1; }));
  test::expect_compiles(all, "integer_reduce_long_rows");
}

}  // namespace
}  // namespace kiln
