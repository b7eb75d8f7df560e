// The attention kind's generated CUDA: its default configs (head dims 64 and 128, f16
// and bf16, causal or not) and every candidate of a large case compile through NVRTC
// with no warning and no register spill (ptxas -v), for sm_90a and sm_80; the score
// body's forms (a bias, a band) compile too; the source reads as the schedule it is.
#include <gtest/gtest.h>

#include <algorithm>
#include <regex>
#include <string>

#include "attention_test_graphs.h"
#include "codegen/emit.h"
#include "codegen_test_util.h"
#include "ir/kernel.h"
#include "ir/printer.h"
#include "ir/tile_config.h"
#include "ir/tile_config_attention_wgmma.h"
#include "passes/lower.h"
#include "passes/pass_manager.h"
#include "runtime/nvrtc.h"
#include "runtime/program.h"

namespace kiln {
namespace {

using test::contains;
using test::Mask;

ir::Kernel attention_kernel(const kiln::Graph& graph) {
  ir::Graph g = graph.ir().clone();
  passes::PassManager(runtime::kCompilePipeline, {}).run(g);
  passes::Plan p = passes::lower(g);
  EXPECT_EQ(p.kernels.size(), 1u);
  EXPECT_EQ(p.kernels.at(0).kind, ir::KernelKind::Attention);
  return p.kernels.at(0);
}

struct Resources {
  int registers = -1, spill_bytes = -1;
};

Resources compile_with_ptxas_report(const ir::Kernel& k, const std::string& arch) {
  const ir::TargetScope target(arch);
  runtime::CompileResult r =
      runtime::compile_cuda(codegen::emit_cuda(k), k.name, runtime::CompileOptions{arch, {"--ptxas-options=-v"}});
  EXPECT_FALSE(r.cubin.empty());
  EXPECT_FALSE(contains(r.log, "warning")) << r.log;
  // ptxas serialises a wgmma pipeline it cannot prove safe (a call, a spin loop or a
  // branch between the products) and says so only as information.
  EXPECT_FALSE(contains(r.log, "serialized")) << r.log;
  Resources res;
  std::smatch m;
  if (std::regex_search(r.log, m, std::regex("Used ([0-9]+) registers"))) res.registers = std::stoi(m[1]);
  if (std::regex_search(r.log, m, std::regex("([0-9]+) bytes spill stores"))) res.spill_bytes = std::stoi(m[1]);
  return res;
}

TEST(AttentionCodegen, DefaultConfigsCompileWithoutSpills) {
  for (DType dt : {DType::f16, DType::bf16})
    for (int64_t d : {64, 128})
      for (bool causal : {false, true})
        for (int64_t s : {int64_t{4096}, int64_t{1000}}) {
          const ir::Kernel k = attention_kernel(test::composite_attention(dt, {{4, 16}, s, s, d}, causal));
          SCOPED_TRACE(fmt::format("{} d {} causal {} s {}: {}", dtype_name(dt), d, causal, s, k.config.str()));
          const Resources r = compile_with_ptxas_report(k, "sm_90a");
          EXPECT_EQ(r.spill_bytes, 0);
          EXPECT_GT(r.registers, 0);
        }
}

TEST(AttentionCodegen, EveryCandidateCompilesWithoutSpills) {
  for (int64_t d : {64, 128}) {
    const ir::Kernel k = attention_kernel(test::composite_attention(DType::f16, {{4, 16}, 4096, 4096, d}, true));
    for (const ir::TileConfig& c : ir::candidates(k)) {
      ir::Kernel v = k;
      v.config = c;
      const Resources r = compile_with_ptxas_report(v, "sm_90a");
      EXPECT_EQ(r.spill_bytes, 0) << "d " << d << " " << c.str() << ": " << r.registers << " registers";
    }
  }
}

TEST(AttentionCodegen, DecodingCandidatesCompileWithoutSpills) {
  // One query a head against 8192 keys: the split candidates (every fourth of them) and
  // the default, both head dims.
  for (int64_t d : {64, 128}) {
    const ir::Kernel k = attention_kernel(test::composite_attention(DType::bf16, {{8, 32}, 1, 8192, d}, false));
    EXPECT_GT(ir::attention_kv_splits(k.config), 1) << k.config.str();
    EXPECT_EQ(compile_with_ptxas_report(k, "sm_90a").spill_bytes, 0) << k.config.str();
    int i = 0;
    for (const ir::TileConfig& c : ir::candidates(k)) {
      if (ir::attention_kv_splits(c) == 1 || i++ % 4 != 0) continue;
      ir::Kernel v = k;
      v.config = c;
      const Resources r = compile_with_ptxas_report(v, "sm_90a");
      EXPECT_EQ(r.spill_bytes, 0) << "d " << d << " " << c.str() << ": " << r.registers << " registers";
    }
    const codegen::LaunchDims dims = codegen::launch_dims(k);
    EXPECT_EQ(dims.grid[2], static_cast<unsigned>(ir::attention_kv_splits(k.config)));
  }
  test::expect_compiles({attention_kernel(test::composite_attention(DType::f16, {{2, 2, 4}, 5, 3000, 64, {2, 2, 1}},
                                                                    true))},
                        "decode_gqa_causal");
}

TEST(AttentionCodegen, ScoreBodiesCompileForSm90aAndSm80) {
  for (Mask m : {Mask::Causal, Mask::Band, Mask::Bias, Mask::Empty})
    test::expect_compiles({attention_kernel(test::hand_written_attention(DType::bf16, {{2}, 130, 70, 128}, m))},
                          "masks");
  test::expect_compiles({attention_kernel(test::composite_attention(DType::f16, {{2, 2, 3}, 33, 50, 64, {2, 2, 1}},
                                                                    true))},
                        "gqa");
}

// Four warps of 32 query rows: each K and V fragment feeds both row tiles, Q is read
// from shared memory each key tile, and no candidate of the kind spills (f16 and bf16,
// causal or with a bias; at head dim 128 a bias leaves none).
TEST(AttentionCodegen, TwoRowTilesAWarpShareEachKeyFragment) {
  const ir::TargetScope target("sm_80");
  for (int64_t d : {64, 128})
    for (DType dt : {DType::f16, DType::bf16}) {
      SCOPED_TRACE(fmt::format("d {} {}", d, dtype_name(dt)));
      for (const kiln::Graph& graph : {test::composite_attention(dt, {{4, 16}, 4096, 4096, d}, true),
                                       test::hand_written_attention(dt, {{2}, 300, 301, d}, Mask::Bias)}) {
        const ir::Kernel k = attention_kernel(graph);
        int two = 0;
        for (const ir::TileConfig& c : ir::candidates(k)) {
          if (ir::attention_warp_row_tiles(c) != 2) continue;
          ++two;
          ir::Kernel v = k;
          v.config = c;
          const std::string cuda = codegen::emit_cuda(v);
          EXPECT_TRUE(contains(cuda, "4 warps x 32 rows, Q read from shared memory")) << cuda;
          EXPECT_TRUE(contains(cuda, "constexpr int kTiles = 2;")) << cuda;
          const Resources r = compile_with_ptxas_report(v, "sm_90a");
          EXPECT_EQ(r.spill_bytes, 0) << c.str() << ": " << r.registers << " registers";
        }
        EXPECT_EQ(two > 0, d == 64 || ir::attention_plain_score(k));  // a score body at 128 spills
      }
    }
}

TEST(AttentionCodegen, TheSourceReadsAsFlashAttention) {
  const ir::TargetScope target("sm_80");  // the mma_sync schedule (sm_90a's prompts take wgmma)
  const ir::Kernel k = attention_kernel(test::composite_attention(DType::f16, {{4, 16}, 4096, 4096, 128}, true));
  const std::string cuda = codegen::emit_cuda(k);
  for (const char* part : {"// ---- kernel k0: attention batch [4,16] of 4096 queries x 4096 keys, head dim 128",
                           "// Fuses:", "= cast %q", "= cast %k", "= matmul %", "// Config {", "kiln_copy_async16_zfill(",
                           "kiln_ldmatrix_x4_trans(", "kiln_mma_f16(", "kiln_exp2(", "kiln_pack2_f16(",
                           "kiln_copy_async_wait_group<1>", "Online softmax", "kiln_store16(",
                           "min(4096, q0 + ", "gridDim.x - 1 - blockIdx.x"})
    EXPECT_TRUE(contains(cuda, part)) << part << "\n" << cuda;
  EXPECT_EQ(cuda.find("for (int t = 0; t < tiles; ++t)"), cuda.rfind("for (int t = 0; t < tiles; ++t)"));
  // A bias goes through the score function; the plain kernel has none.
  EXPECT_FALSE(contains(cuda, "k0_score("));
  const std::string biased =
      codegen::emit_cuda(attention_kernel(test::hand_written_attention(DType::f16, {{2}, 64, 64, 64}, Mask::Bias)));
  EXPECT_TRUE(contains(biased, "k0_score(s[mt][n][r] * ")) << biased;
  EXPECT_TRUE(contains(biased, "in_bias[")) << biased;
}

// The kernel with its first wgmma config (bc 128, two stages) pinned.
ir::Kernel with_wgmma(ir::Kernel k) {
  const std::vector<ir::TileConfig> configs = ir::attention_wgmma_candidates(k);
  EXPECT_FALSE(configs.empty());
  if (!configs.empty()) k.config = configs[0];
  return k;
}

TEST(AttentionCodegen, EveryWgmmaConfigCompilesWithoutSpillOrSerialisedProducts) {
  for (DType dt : {DType::f16, DType::bf16})
    for (int64_t d : {64, 128})
      for (bool causal : {false, true}) {
        const ir::Kernel k = attention_kernel(test::composite_attention(dt, {{4, 16}, 1000, 1000, d}, causal));
        for (const ir::TileConfig& c : ir::attention_wgmma_candidates(k)) {
          ir::Kernel v = k;
          v.config = c;
          SCOPED_TRACE(fmt::format("{} d {} causal {} {}", dtype_name(dt), d, causal, c.str()));
          EXPECT_EQ(compile_with_ptxas_report(v, "sm_90a").spill_bytes, 0);
        }
      }
  for (Mask m : {Mask::Band, Mask::Bias, Mask::Empty}) {
    const ir::Kernel k = with_wgmma(attention_kernel(test::hand_written_attention(DType::bf16, {{2}, 130, 70, 128}, m)));
    EXPECT_EQ(compile_with_ptxas_report(k, "sm_90a").spill_bytes, 0) << ir::print(k);
  }
}

TEST(AttentionCodegen, TheHopperSourceReadsAsFlashAttention3) {
  const ir::Kernel k =
      with_wgmma(attention_kernel(test::composite_attention(DType::f16, {{4, 16}, 4096, 4096, 128}, true)));
  ASSERT_EQ(k.config.schedule, ir::kWgmma) << k.config.str();
  const std::string cuda = codegen::emit_cuda(k);
  for (const char* part :
       {"FlashAttention-3's schedule", "kiln_registers_release<24>", "kiln_registers_claim<240>",
        "kiln_tma_load_4d(q_tile + 0u, &map_q, q_full, 0, q0", "kiln_tma_load_4d(k_tile + 16384u, &map_k",
        "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16", "kiln_named_barrier_sync(2 + consumer, 256)",
        "kiln_named_barrier_arrive(3 - consumer, 256)", "kiln_wgmma_wait<1>();  // S has landed",
        "k0_values(o, p[kk]", "const __grid_constant__ kiln_tensor_map map_v", "min(4096, q0 + 128)",
        // Persistent blocks take items from a counter, the longest row tiles of an entry first;
        // the next item's Q loads once the last products on this one's have finished.
        "132 persistent blocks", "atomicAdd(&k0_next_item, 1u)", "const int q0 = (31 - item % 32) * 128;",
        "kiln_mbarrier_wait(q_empty, (j & 1u) ^ 1u)", "kiln_mbarrier_arrive(q_empty)",
        "kiln_mbarrier_wait(q_full, j & 1u)", "atomicExch(&k0_next_item, 0u)",
        // The output: a row's 4 lanes trade their pairs, then store 16-byte chunks.
        "__shfl_xor_sync(0xffffffffu, high ? w[j] : w[j + m], m)",
        "kiln_store16(ob + (long long)row * 128 + (4 * g + quad) * 8, make_uint4(w[0], w[1], w[2], w[3]))"})
    EXPECT_TRUE(contains(cuda, part)) << part << "\n" << cuda;
  // P is the A operand from registers; V is read N-major (the last transpose bit).
  EXPECT_TRUE(std::regex_search(cuda, std::regex(R"(\{%64, %65, %66, %67\}, %68, p, 1, 1, 1;)"))) << cuda;
  const std::string biased = codegen::emit_cuda(
      with_wgmma(attention_kernel(test::hand_written_attention(DType::f16, {{2}, 200, 200, 64}, Mask::Bias))));
  EXPECT_TRUE(contains(biased, "k0_score(s[4 * n + r] * ")) << biased;
}

// Three consumers (192 query rows, 16 warps): a ring of three turns at the Tensor Cores,
// 160 registers each, twelve warps free a buffer, a 192-row query box.
TEST(AttentionCodegen, ThreeConsumersTakeTurnsInARing) {
  ir::Kernel k = attention_kernel(test::composite_attention(DType::f16, {{4, 16}, 2048, 2048, 64}, true));
  const std::vector<ir::TileConfig> configs = ir::attention_wgmma_candidates(k);
  const auto three = std::find_if(configs.begin(), configs.end(), [](const ir::TileConfig& c) { return c.br == 192; });
  ASSERT_NE(three, configs.end());
  k.config = *three;
  EXPECT_EQ(k.config.warps, 16);
  EXPECT_EQ(ir::attention_wgmma_consumer_registers(k.config), 160);
  const std::string cuda = codegen::emit_cuda(k);
  for (const char* part :
       {"three consumer warpgroups of 64 rows", "__launch_bounds__(512, 1)", "kiln_registers_release<24>",
        "kiln_registers_claim<160>", "kiln_mbarrier_init(k_empty + 8u * s, 12u)",
        "if (consumer == 3 - 1) kiln_named_barrier_arrive(2, 256)", "kiln_named_barrier_sync(2 + consumer, 256)",
        "kiln_named_barrier_arrive(2 + (consumer + 1) % 3, 256)", "min(2048, q0 + 192)",
        "const int q0 = (10 - item % 11) * 192;", "if (item >= 704)"})  // 2048 rows in 11 tiles of 192, 64 heads
    EXPECT_TRUE(contains(cuda, part)) << part << "\n" << cuda;
  const codegen::LaunchDims d = codegen::launch_dims(k);
  EXPECT_EQ(d.block[0], 512u);
  EXPECT_EQ(d.grid[0], static_cast<unsigned>(ir::kTargetSMs));  // one persistent block an SM
  EXPECT_EQ(d.grid[1], 1u);
  EXPECT_EQ(d.tensor_maps[0].box[1], 192u);
}

TEST(AttentionCodegen, HopperTensorMapsFollowTheOperandsLayouts) {
  // Grouped-query attention: k and v vary along batch dims 0 and 1, not 2 (the group).
  const ir::Kernel k =
      with_wgmma(attention_kernel(test::composite_attention(DType::bf16, {{2, 4, 3}, 300, 333, 64, {2, 4, 1}}, false)));
  ASSERT_EQ(k.config.schedule, ir::kWgmma) << k.config.str();
  const codegen::LaunchDims d = codegen::launch_dims(k);
  ASSERT_EQ(d.tensor_maps.size(), 3u);
  EXPECT_EQ(d.block[0], 384u);
  EXPECT_EQ(d.grid[0], 3u * 24u);  // fewer items (3 row tiles of 24 entries) than SMs: a block each
  EXPECT_EQ(d.grid[1], 1u);
  const codegen::TensorMapSpec& q = d.tensor_maps[0];
  EXPECT_EQ(q.rank, 5);
  EXPECT_EQ(q.dims[0], 64u);
  EXPECT_EQ(q.dims[1], 300u);
  EXPECT_EQ(q.box[1], 128u);
  const codegen::TensorMapSpec& kv = d.tensor_maps[1];
  EXPECT_EQ(kv.rank, 4);
  EXPECT_EQ(kv.dims[1], 333u);
  EXPECT_EQ(kv.dims[2], 2u);
  EXPECT_EQ(kv.dims[3], 4u);
  EXPECT_EQ(kv.strides[0], 128u);
  EXPECT_EQ(kv.strides[1], 4u * 333u * 64u * 2u);
  EXPECT_EQ(kv.strides[2], 333u * 64u * 2u);
  EXPECT_EQ(kv.box[1], static_cast<uint32_t>(k.config.bc));
  EXPECT_EQ(d.tensor_maps[2].arg, k.attention.v);
}

// mma_sync: a block a query tile and batch entry. wgmma: persistent blocks, one an SM.
TEST(AttentionCodegen, LaunchDimsCoverQueryTilesAndBatches) {
  for (const char* arch : {"sm_80", "sm_90a"}) {
    const ir::TargetScope target(arch);
    const ir::Kernel k = attention_kernel(test::composite_attention(DType::f16, {{4, 16}, 4097, 4097, 64}, false));
    SCOPED_TRACE(k.config.str());
    const codegen::LaunchDims d = codegen::launch_dims(k);
    if (k.config.schedule == ir::kWgmma) {
      EXPECT_EQ(std::string(arch), "sm_90a");
      EXPECT_EQ(d.grid[0], static_cast<unsigned>(ir::kTargetSMs));
      EXPECT_EQ(d.grid[1], 1u);
    } else {
      EXPECT_EQ(d.grid[0], static_cast<unsigned>((4097 + k.config.br - 1) / k.config.br));
      EXPECT_EQ(d.grid[1], 64u);
    }
    EXPECT_EQ(d.block[0], static_cast<unsigned>(32 * k.config.warps));
    EXPECT_EQ(d.shared_bytes, static_cast<unsigned>(ir::attention_shared_bytes(k, k.config)));
  }
}

}  // namespace
}  // namespace kiln
