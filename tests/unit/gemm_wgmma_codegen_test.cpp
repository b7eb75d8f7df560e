// The wgmma schedule without a GPU: where the heuristic picks it, its rules' errors,
// its tensor maps, and generated kernels that compile through NVRTC for sm_90a with no
// warning (ptxas says when a wgmma pipeline crosses a function call and is serialised,
// or when setmaxnreg is ignored), no spill, and the producer / consumer structure.
#include <gtest/gtest.h>

#include <algorithm>
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

ir::Kernel lowered(const kiln::Graph& g) {
  ir::Graph ir = g.ir().clone();
  passes::PassManager("fuse", {}).run(ir);
  passes::Plan p = passes::lower(ir);
  EXPECT_EQ(p.kernels.size(), 1u);
  return p.kernels.at(0);
}

ir::Kernel product(DType dt, int64_t m, int64_t n, int64_t k, bool ta = false, bool tb = false, bool gelu = false) {
  kiln::Graph g("g");
  auto a = g.input("a", dt, ta ? Shape{k, m} : Shape{m, k});
  auto b = g.input("b", dt, tb ? Shape{n, k} : Shape{k, n});
  auto y = kiln::matmul(a, b, ta, tb);
  if (gelu) y = kiln::gelu(y + g.input("bias", dt, {n}), "tanh");
  g.output(y);
  return lowered(g);
}

// Compiles through NVRTC for sm_90a with ptxas's report; returns the log.
std::string compile_log(const ir::Kernel& k) {
  const ir::TargetScope target("sm_90a");
  runtime::CompileResult r =
      runtime::compile_cuda(codegen::emit_cuda(k), k.name, runtime::CompileOptions{"sm_90a", {"--ptxas-options=-v"}});
  EXPECT_FALSE(r.cubin.empty());
  return r.log;
}

int spill_bytes(const std::string& log) {
  std::smatch m;
  return std::regex_search(log, m, std::regex("([0-9]+) bytes spill stores")) ? std::stoi(m[1]) : -1;
}

TEST(GemmWgmma, TheHeuristicPicksItForLargeAlignedProducts) {
  for (DType dt : {DType::f16, DType::bf16})
    for (bool ta : {false, true})
      for (bool tb : {false, true}) {
        const ir::Kernel k = product(dt, 4096, 4096, 4096, ta, tb);
        EXPECT_EQ(k.config.schedule, ir::kWgmma) << k.config.str();
        EXPECT_EQ(k.config.bm, 128);
        EXPECT_EQ(k.config.bn, 256);
        EXPECT_EQ(k.config.warps_m, 2);  // two consumers sharing each tile
      }
  // Rows that are not multiples of 16 bytes load from padded copies staged before the
  // launch; a narrow product does not fill the GPU with 128-row tiles; f32 has no wgmma
  // here; sm_80 has none.
  const ir::Kernel odd = product(DType::f16, 4093, 4099, 4097);
  EXPECT_EQ(odd.config.schedule, ir::kWgmma);
  // 544 tiles of 128 x 256 pay 5 waves of 132 SMs, 528 of 256 x 128 pay 4: the taller ones.
  EXPECT_EQ(odd.config.bm, 256);
  EXPECT_EQ(odd.config.bn, 128);
  const codegen::LaunchDims d = codegen::launch_dims(odd);
  ASSERT_EQ(d.staged.size(), 2u);
  EXPECT_EQ(d.staged[0].rows, 4093u);  // A: 4093 rows of K = 4097, padded to 4104
  EXPECT_EQ(d.staged[0].cols, 4097u);
  EXPECT_EQ(d.staged[0].dst_ld, 4104u);
  EXPECT_EQ(d.staged[1].rows, 4097u);  // B: K rows of N = 4099, padded to 4104
  EXPECT_EQ(d.staged[1].dst_ld, 4104u);
  EXPECT_EQ(d.tensor_maps[0].staged, 0);
  EXPECT_EQ(d.tensor_maps[0].strides[0], 4104u * 2u);
  EXPECT_EQ(d.tensor_maps[0].dims[0], 4097u);  // the copy's padding is never read: TMA fills past K with zeros
  EXPECT_TRUE(contains(codegen::emit_cuda(odd), "staged before the launch into rows of 4104 elements"));
  EXPECT_EQ(product(DType::f16, 16, 8192, 8192).config.schedule, ir::kMmaSync);
  EXPECT_EQ(product(DType::f32, 4096, 4096, 4096).config.schedule, ir::kSimt);
  {
    const ir::TargetScope ampere("sm_80");
    EXPECT_EQ(product(DType::f16, 4096, 4096, 4096).config.schedule, ir::kMmaSync);
  }
  // Plain sm_90 (no "a") has no wgmma: its code must not use it.
  const ir::TargetScope plain("sm_90");
  const ir::Kernel k = product(DType::f16, 4096, 4096, 4096);
  EXPECT_EQ(k.config.schedule, ir::kMmaSync);
  EXPECT_FALSE(runtime::compile_cuda(codegen::emit_cuda(k), k.name, runtime::CompileOptions{"sm_90", {}}).cubin.empty());
}

TEST(GemmWgmma, FewTilesOfALongKSplitIt) {
  const ir::Kernel k = product(DType::f16, 1024, 1024, 65536);
  EXPECT_EQ(k.config.schedule, ir::kWgmma) << k.config.str();
  EXPECT_EQ(k.config.split_k, 4) << k.config.str();
  EXPECT_EQ(codegen::launch_dims(k).grid[0], 128u);  // 32 tiles x 4 slices, a unit each
  const std::string log = compile_log(k);
  EXPECT_FALSE(contains(log, "warning")) << log;
  EXPECT_EQ(spill_bytes(log), 0) << log;
  const std::string cuda = codegen::emit_cuda(k);
  EXPECT_TRUE(contains(cuda, "in slice order")) << cuda;
  EXPECT_TRUE(contains(cuda, "__device__ __align__(16) float kiln_k0_partials[")) << cuda;
  // Consumers that take tiles in turns do not split.
  ir::TileConfig c = k.config;
  c.bm = 64;
  c.warps_m = 1;
  c.warps_n = 2;
  try {
    ir::validate(k, c);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "do not split K")) << e.what();
  }
}

// The error validating `c` for `k` gives, or "(no error)".
std::string rule_error(const ir::Kernel& k, const ir::TileConfig& c) {
  try {
    ir::validate(k, c);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(GemmWgmma, IllegalConfigsSayWhichRule) {
  const ir::Kernel k = product(DType::f16, 4096, 4096, 4096);
  auto error = [&](const ir::TileConfig& c) { return rule_error(k, c); };
  ir::TileConfig c = k.config;
  c.bn = 96;
  EXPECT_TRUE(contains(error(c), "bn must be 64, 128, 192 or 256")) << error(c);
  c = k.config;
  c.stages = 6;
  EXPECT_TRUE(contains(error(c), "bytes of shared memory")) << error(c);
  c = k.config;
  c.warps_m = 1;
  EXPECT_TRUE(contains(error(c), "more than 64 x 256 accumulators")) << error(c);
  c = k.config;
  c.warps_n = 2;
  EXPECT_TRUE(contains(error(c), "one or two consumer warpgroups")) << error(c);
  // A batched operand with rows of 201 elements: neither TMA nor a single staged copy.
  kiln::Graph g("g");
  g.output(kiln::matmul(g.input("x", DType::f16, {3, 400, 201}), g.input("w", DType::f16, {3, 201, 400})));
  const ir::Kernel batched = lowered(g);
  EXPECT_EQ(batched.config.schedule, ir::kMmaSync);
  c = k.config;
  try {
    ir::validate(batched, c);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "cannot load through TMA")) << e.what();
  }
}

TEST(GemmWgmma, TensorMapsFollowTheOperandsLayouts) {
  // A row-major (K contiguous): one box of 64 K x 128 rows; B row-major (N contiguous):
  // boxes of 64 N x 64 K.
  codegen::LaunchDims d = codegen::launch_dims(product(DType::f16, 4096, 2048, 1024));
  ASSERT_EQ(d.tensor_maps.size(), 2u);
  const codegen::TensorMapSpec& a = d.tensor_maps[0];
  const codegen::TensorMapSpec& b = d.tensor_maps[1];
  EXPECT_EQ(a.rank, 2);
  EXPECT_EQ(a.dims[0], 1024u);
  EXPECT_EQ(a.dims[1], 4096u);
  EXPECT_EQ(a.strides[0], 2048u);
  EXPECT_EQ(a.box[0], 64u);
  EXPECT_EQ(a.box[1], 128u);
  EXPECT_EQ(b.dims[0], 2048u);
  EXPECT_EQ(b.dims[1], 1024u);
  EXPECT_EQ(b.box[1], 64u);
  EXPECT_EQ(d.grid[0], static_cast<unsigned>(ir::kTargetSMs));  // persistent
  EXPECT_EQ(d.block[0], 384u);
  // A weight shared by every batch entry keeps rank 2; a batched A gains a dim.
  kiln::Graph g("g");
  auto x = g.input("x", DType::bf16, {6, 1024, 256});
  auto w = g.input("w", DType::bf16, {256, 1024});
  g.output(kiln::matmul(x, w));
  d = codegen::launch_dims(lowered(g));
  ASSERT_EQ(d.tensor_maps.size(), 2u);
  EXPECT_EQ(d.tensor_maps[0].rank, 3);
  EXPECT_EQ(d.tensor_maps[0].dims[2], 6u);
  EXPECT_EQ(d.tensor_maps[0].strides[1], 1024u * 256u * 2u);
  EXPECT_EQ(d.tensor_maps[1].rank, 2);
}

TEST(GemmWgmma, DefaultsCompileWithoutWarningOrSpillInEveryTranspose) {
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      SCOPED_TRACE(fmt::format("transpose_a {} transpose_b {}", ta, tb));
      const ir::Kernel k = product(DType::bf16, 4096, 4096, 4096, ta, tb, /*gelu=*/true);
      const std::string log = compile_log(k);
      EXPECT_FALSE(contains(log, "warning")) << log;
      EXPECT_EQ(spill_bytes(log), 0) << log;
    }
  // Every candidate compiles too (GemmCodegen.EveryCandidateOfALargeProductCompilesWithoutSpills
  // compiles them all, with the same checks); a dozen or more of them are wgmma configs.
  const std::vector<ir::TileConfig> all = ir::candidates(product(DType::f16, 4096, 4096, 4096));
  EXPECT_GE(std::count_if(all.begin(), all.end(), [](const ir::TileConfig& c) { return c.schedule == ir::kWgmma; }),
            12);
}

TEST(GemmWgmma, TheSourceReadsAsAWarpSpecialisedGemm) {
  const std::string cuda = codegen::emit_cuda(product(DType::f16, 4096, 4096, 4096, false, false, true));
  for (const char* part : {"a producer warpgroup, 2 consumer warpgroups", "wgmma.mma_async.sync.aligned.m64n256k16",
                           "kiln_tma_load_2d(", "kiln_mbarrier_expect_bytes(", "kiln_registers_release<40>",
                           "kiln_registers_claim<232>", "const __grid_constant__ kiln_tensor_map map_a",
                           "kiln_wgmma_wait<1>", "k0_epilogue_preloaded<true>(ahead", "groups of 8 tile rows"})
    EXPECT_TRUE(contains(cuda, part)) << part << "\n" << cuda;
}

// The bias (constant along M) loads a strip ahead, guarded past N; an input that varies
// along M (a residual) is read in the call.
TEST(GemmWgmma, ABiasLoadsAStripAhead) {
  kiln::Graph g("g");
  auto a = g.input("a", DType::f16, Shape{4096, 4096});
  auto b = g.input("b", DType::f16, Shape{4096, 4000});
  auto y = kiln::matmul(a, b) + g.input("bias", DType::f16, {4000}) + g.input("res", DType::f16, {4096, 4000});
  g.output(y);
  const ir::Kernel k = lowered(g);
  ASSERT_EQ(k.config.schedule, ir::kWgmma) << k.config.str();
  const std::string cuda = codegen::emit_cuda(k);
  std::smatch bias;
  ASSERT_TRUE(std::regex_search(cuda, bias, std::regex("const kiln_vec<__half, 8> ahead([0-9]+) = next[0-9]+;"))) << cuda;
  const std::string i = bias[1];
  for (const std::string& part :
       {"if (c + 1 < 8) next" + i + " = (n0 + (c + 1) * 32 + lane % 4 * 8 < 4000 ?", "_epilogue_preloaded<true>(ahead" + i + ", "})
    EXPECT_TRUE(contains(cuda, part)) << part << "\n" << cuda;
  EXPECT_EQ(contains(cuda, "const kiln_vec<__half, 8> ahead" + std::to_string(std::stoi(i) + 1)), false);
  const std::string log = compile_log(k);
  EXPECT_FALSE(contains(log, "warning")) << log;
  EXPECT_EQ(spill_bytes(log), 0) << log;
}

// Output rows that are not 16-byte multiples go element by element: the strip is read
// back a row at a time, a warp on 32 consecutive columns, so that each store covers 64
// contiguous bytes; a bias with them is read in the call. Aligned rows keep the vectors.
TEST(GemmWgmma, UnalignedOutputRowsReadTheStripByColumns) {
  const ir::Kernel odd = product(DType::f16, 4093, 4099, 4097, false, false, /*gelu=*/true);
  ASSERT_EQ(odd.config.schedule, ir::kWgmma) << odd.config.str();
  const std::string cuda = codegen::emit_cuda(odd);
  for (const char* part : {"const float values[1] = {strip[r * 40 + lane]};", "n0 + c * 32 + lane, values);",
                           "1 column per call", "a warp on 32 consecutive columns of a row"})
    EXPECT_TRUE(contains(cuda, part)) << part << "\n" << cuda;
  EXPECT_FALSE(contains(cuda, "ahead")) << cuda;
  const std::string log = compile_log(odd);
  EXPECT_FALSE(contains(log, "warning")) << log;
  EXPECT_EQ(spill_bytes(log), 0) << log;
  const std::string aligned = codegen::emit_cuda(product(DType::f16, 4096, 4096, 4096));
  EXPECT_TRUE(contains(aligned, "const float values[8]")) << aligned;
  EXPECT_FALSE(contains(aligned, "const float values[1]")) << aligned;
}

// Clusters of 2: two blocks on tiles one above the other share B's loads.
ir::Kernel clustered(ir::Kernel k) {
  k.config.cluster = 2;
  ir::validate(k, k.config);
  return k;
}

TEST(GemmWgmma, ClustersOfTwoSayWhichRule) {
  const ir::Kernel k = product(DType::f16, 4096, 4096, 4096);
  auto error = rule_error;
  ir::TileConfig c = k.config;
  c.cluster = 2;
  EXPECT_EQ(error(k, c), "(no error)");
  c.cluster = 4;
  EXPECT_TRUE(contains(error(k, c), "cluster must be 1 or 2 blocks")) << error(k, c);
  c = k.config;
  c.cluster = 2;
  c.bm = 64;
  c.warps_m = 1;
  c.warps_n = 2;
  EXPECT_TRUE(contains(error(k, c), "do not run in clusters")) << error(k, c);
  // 4000 rows make 32 tile rows of 128, 3968 rows 31: the last would have no partner.
  EXPECT_EQ(error(product(DType::f16, 4000, 4096, 4096), clustered(k).config), "(no error)");
  EXPECT_TRUE(contains(error(product(DType::f16, 3968, 4096, 4096), clustered(k).config), "tile rows in pairs"));
  // B stored N-contiguous loads in 64-column boxes: halves of 192 columns do not split them.
  c = clustered(k).config;
  c.bn = 192;
  EXPECT_TRUE(contains(error(k, c), "multiple of 64")) << error(k, c);
  EXPECT_EQ(error(product(DType::f16, 4096, 4096, 4096, false, true), c), "(no error)");  // B K-contiguous
  // Other schedules take no cluster.
  c = k.config;
  c.schedule = ir::kMmaSync;
  c.bm = c.bn = 128;
  c.warps_m = c.warps_n = 2;
  c.stages = 3;
  c.cluster = 2;
  EXPECT_TRUE(contains(error(k, c), "wgmma schedule only")) << error(k, c);
}

TEST(GemmWgmma, ClustersLoadHalfOfBEachAndLaunchInPairs) {
  const ir::Kernel k = clustered(product(DType::f16, 4096, 4096, 4096, false, false, true));
  const std::string cuda = codegen::emit_cuda(k);
  for (const char* part : {"__cluster_dims__(2, 1, 1)", "kiln_tma_multicast_2d(", "(unsigned short)3",
                           "n0 + (int)rank * 128", "kiln_mbarrier_arrive_cluster<2>(", "kiln_cluster_leave();",
                           "unit = blockIdx.x / 2u", "one arrival per warp of the consumers of a tile in each block"})
    EXPECT_TRUE(contains(cuda, part)) << part << "\n" << cuda;
  const codegen::LaunchDims d = codegen::launch_dims(k);
  EXPECT_EQ(d.grid[0] % 2, 0u);
  EXPECT_EQ(d.tensor_maps[1].box[1], 64u);  // B N-contiguous: boxes of 64 K rows x 64 columns, two a block
  // B K-contiguous: one box of 128 of the tile's 256 rows a block.
  const codegen::LaunchDims t = codegen::launch_dims(clustered(product(DType::f16, 4096, 4096, 4096, false, true)));
  EXPECT_EQ(t.tensor_maps[1].box[1], 128u);
  // A product of 2 x 2 tiles: one cluster a column of tiles.
  ir::Kernel small = product(DType::f16, 256, 512, 512);
  small.config = k.config;
  EXPECT_EQ(codegen::launch_dims(clustered(small)).grid[0], 4u);
}

TEST(GemmWgmma, ClusteredKernelsCompileWithoutWarningOrSpillInEveryTranspose) {
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      SCOPED_TRACE(fmt::format("transpose_a {} transpose_b {}", ta, tb));
      const std::string log = compile_log(clustered(product(DType::f16, 4096, 4096, 4096, ta, tb, /*gelu=*/true)));
      EXPECT_FALSE(contains(log, "warning")) << log;
      EXPECT_EQ(spill_bytes(log), 0) << log;
    }
  const std::vector<ir::TileConfig> all = ir::candidates(product(DType::bf16, 4096, 4096, 4096));
  EXPECT_GE(std::count_if(all.begin(), all.end(), [](const ir::TileConfig& c) { return c.cluster == 2; }), 6);
}

ir::Kernel handed_off(ir::Kernel k) {
  k.config.handoff = 1;
  k.config.stages = 3;
  ir::validate(k, k.config);
  return k;
}

TEST(GemmWgmma, TheHandOffSaysWhichRule) {
  const ir::Kernel k = product(DType::f16, 4096, 4096, 4096);
  auto error = rule_error;
  EXPECT_EQ(error(k, handed_off(k).config), "(no error)");
  ir::TileConfig c = handed_off(k).config;
  c.stages = 4;  // four 48 KB stages and the 16-bit tile pass the shared memory
  EXPECT_TRUE(contains(error(k, c), "bytes of shared memory")) << error(k, c);
  c = handed_off(k).config;
  c.handoff = 2;
  EXPECT_TRUE(contains(error(k, c), "handoff must be 0 or 1")) << error(k, c);
  c = handed_off(k).config;
  c.cluster = 2;
  EXPECT_TRUE(contains(error(k, c), "without a K split or a cluster")) << error(k, c);
  c = handed_off(k).config;
  c.bm = 64;
  c.warps_m = 1;
  c.warps_n = 2;
  EXPECT_TRUE(contains(error(k, c), "one tile at a time")) << error(k, c);
}

TEST(GemmWgmma, HandedOffKernelsCompileWithoutWarningOrSpillInEveryTranspose) {
  for (DType dt : {DType::f16, DType::bf16})
    for (bool ta : {false, true})
      for (bool tb : {false, true}) {
        SCOPED_TRACE(fmt::format("{} transpose_a {} transpose_b {}", dtype_name(dt), ta, tb));
        const ir::Kernel k = handed_off(product(dt, 4096, 4096, 4096, ta, tb, /*gelu=*/true));
        const std::string cuda = codegen::emit_cuda(k);
        for (const char* part : {"kiln_mbarrier_wait(staged, handed & 1u)", "kiln_mbarrier_arrive(drained)",
                                 "kiln_mbarrier_wait(drained, (handed - 1u) & 1u)", "kiln_registers_release<56>()", "kiln_registers_claim<224>()"})
          EXPECT_TRUE(contains(cuda, part)) << part;
        const std::string log = compile_log(k);
        EXPECT_FALSE(contains(log, "warning")) << log;
        EXPECT_EQ(spill_bytes(log), 0) << log;
      }
  const std::vector<ir::TileConfig> all = ir::candidates(product(DType::f16, 4096, 4096, 4096));
  EXPECT_GE(std::count_if(all.begin(), all.end(), [](const ir::TileConfig& c) { return c.handoff == 1; }), 6);
}

// setmaxnreg.inc waits until the block's pool of registers (what it got at launch) holds
// the claim: the producer's release and the consumers' claims of every candidate fit it.
TEST(GemmWgmma, EveryCandidateClaimsNoMoreRegistersThanTheBlockHolds) {
  int checked = 0;
  for (const ir::TileConfig& c : ir::candidates(product(DType::f16, 4096, 4096, 4096, false, false, true))) {
    if (c.schedule != ir::kWgmma) continue;
    ir::Kernel k = product(DType::f16, 4096, 4096, 4096, false, false, true);
    k.config = c;
    const std::string cuda = codegen::emit_cuda(k);
    std::smatch release, claim;
    ASSERT_TRUE(std::regex_search(cuda, release, std::regex("kiln_registers_release<([0-9]+)>\\(\\)"))) << c.str();
    ASSERT_TRUE(std::regex_search(cuda, claim, std::regex("kiln_registers_claim<([0-9]+)>\\(\\)"))) << c.str();
    const int threads = ir::gemm_threads(c), consumers = threads / 128 - 1;
    const int launch = std::min(255, 65536 / threads) / 8 * 8;
    EXPECT_LE(128 * std::stoi(release[1]) + 128 * consumers * std::stoi(claim[1]), launch * threads) << c.str();
    ++checked;
  }
  EXPECT_GE(checked, 20);
}

}  // namespace
}  // namespace kiln
