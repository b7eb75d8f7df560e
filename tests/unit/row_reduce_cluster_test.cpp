// Rows too long for one block: the tile rules split them over a thread-block cluster
// on sm_90 (and never for an older target), and the generated CUDA compiles.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <utility>

#include "codegen/emit.h"
#include "codegen_test_util.h"
#include "ir/error.h"
#include "ir/kernel.h"
#include "ir/tile_config.h"
#include "row_reduce_test_kernels.h"
#include "runtime/program.h"

namespace kiln {
namespace {

using row_reduce_test::lowered;

TEST(RowReduceCluster, LongRowsShareAClusterOnSm90) {
  // Up to 128 KB a block holds the row (past 64 KB partly in shared memory); past that
  // clusters of blocks holding 64 KB each, up to 16 of 256 threads. Rows whose vectors
  // are under 16 bytes keep the row in registers: blocks of 16384 elements up to a
  // cluster of 8, then 16 blocks of 256 threads.
  EXPECT_EQ(lowered("softmax", "f16", 16384).config.cluster, 0);
  EXPECT_EQ(lowered("softmax", "f16", 32768).config.cluster, 0);
  EXPECT_EQ(lowered("softmax", "f32", 32768).config.cluster, 0);
  EXPECT_EQ(lowered("softmax", "f16", 65536).config.cluster, 0);
  EXPECT_EQ(lowered("softmax", "f16", 131072).config.cluster, 4);
  EXPECT_EQ(lowered("layer_norm", "bf16", 262144).config.cluster, 8);
  EXPECT_EQ(lowered("layer_norm", "f32", 262144).config.cluster, 16);
  EXPECT_LE(lowered("layer_norm", "f32", 262144).config.row_threads, 256);
  EXPECT_EQ(lowered("softmax", "f16", 65532).config.cluster, 4);
  EXPECT_EQ(lowered("softmax", "f16", 262140).config.cluster, 16);
  for (long n : {65536L, 65532L, 262144L, 262140L}) {
    ir::Kernel k = lowered("softmax", "f16", n);
    EXPECT_EQ(k.config.rows, 1);
    EXPECT_GE(int64_t{k.config.row_threads} * std::max(1, k.config.cluster) * (k.config.elems + k.config.shared_elems),
              n)
        << k.config.str();
  }
}

TEST(RowReduceCluster, OlderTargetsNeverGetOne) {
  const ir::TargetScope target("sm_80");
  ir::Kernel k = lowered("softmax", "f16", 262144);
  EXPECT_LE(k.config.cluster, 1) << k.config.str();
  for (const ir::TileConfig& c : ir::candidates(k)) EXPECT_LE(c.cluster, 1) << c.str();
  ir::TileConfig clustered = k.config;
  clustered.cluster = 2;
  clustered.rows = 1;
  clustered.stream = 1;
  clustered.elems = clustered.vec;
  try {
    ir::validate(k, clustered);
    ADD_FAILURE() << "a cluster was accepted for sm_80";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("clusters need sm_90"), std::string::npos) << e.what();
  }
}

TEST(RowReduceCluster, RulesNameWhatIsWrong) {
  ir::Kernel k = lowered("softmax", "f32", 65536);
  ir::TileConfig c = k.config;
  c.cluster = 3;
  EXPECT_THROW(ir::validate(k, c), Error);
  c.cluster = 32;
  EXPECT_THROW(ir::validate(k, c), Error);
  c.cluster = 16;  // non-portable: blocks of 256 threads at most
  c.row_threads = 512;
  c.elems = 8;
  EXPECT_THROW(ir::validate(k, c), Error);
  c = k.config;
  c.cluster = 2;
  c.row_threads = 16;
  c.rows = 4;
  try {
    ir::validate(k, c);
    ADD_FAILURE() << "several rows per block with a cluster were accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("rows must be 1"), std::string::npos) << e.what();
  }
}

TEST(RowReduceCluster, CandidatesIncludeClustersForLongRowsOnly) {
  auto clustered = [](const ir::Kernel& k) {
    return row_reduce_test::count_candidates(k, [](const ir::TileConfig& c) { return c.cluster > 1; });
  };
  EXPECT_EQ(clustered(lowered("softmax", "f16", 4096)), 0);
  EXPECT_GT(clustered(lowered("softmax", "f16", 65536)), 0);
}

TEST(RowReduceCluster, EveryReductionCompilesWithACluster) {
  // sum / max / min / mean, logsumexp (softmax), var (LayerNorm) and RMSNorm's mean, each
  // with a cluster of 2 holding the row in registers and one of 8 streaming it.
  for (const char* which : {"sum", "max", "min", "mean", "softmax", "log_softmax", "layer_norm", "rms_norm"})
    for (auto [cluster, stream] : {std::pair{2, 0}, std::pair{8, 1}}) {
        ir::Kernel k = lowered(which, "f16", 65536);
        k.config.cluster = cluster;
        k.config.rows = 1;
        k.config.row_threads = 256;
        k.config.stream = stream;
        k.config.shared_elems = 0;
        k.config.elems = stream ? k.config.vec : 65536 / (256 * cluster);
        if (k.config.elems > 64) continue;
        SCOPED_TRACE(std::string(which) + " " + k.config.str());
        std::string source = codegen::emit_cuda(k);
        EXPECT_TRUE(test::contains(source, fmt::format("__cluster_dims__({}, 1, 1)", cluster)));
        // Arrive at the start, wait before the first exchange, push partials: no remote read,
        // no barrier at the end.
        EXPECT_TRUE(test::contains(source, "  kiln_cluster_arrive();"));
        EXPECT_TRUE(test::contains(source, "  kiln_cluster_wait();"));
        EXPECT_TRUE(test::contains(source, "kiln_cluster_put<"));
        EXPECT_FALSE(test::contains(source, "ld.shared::cluster"));
        EXPECT_FALSE(test::contains(source, "kiln_cluster_sync();\n}"));
        runtime::CompileResult r = runtime::compile_cuda(source, "cluster", runtime::CompileOptions{"sm_90a", {}});
        EXPECT_FALSE(r.cubin.empty());
        EXPECT_FALSE(test::contains(r.log, "warning")) << r.log;
        EXPECT_EQ(codegen::launch_dims(k).grid[0], 3u * cluster);
    }
}

}  // namespace
}  // namespace kiln
