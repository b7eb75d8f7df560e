// Long rows held partly in shared memory: the rules that admit such configs, the
// candidates that offer them for long rows, the default that picks them, and the
// generated code (a cp.async copy, a second element loop) for every reduction,
// compiled by NVRTC with no warning.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

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

// `elems` of each thread's slice in registers, the rest of a row of n in shared memory.
ir::TileConfig shared_part(int row_threads, int cluster, int elems, int vec, long n) {
  ir::TileConfig c;
  c.row_threads = row_threads;
  c.rows = 1;
  c.cluster = cluster;
  c.vec = vec;
  const long span = long{row_threads} * std::max(1, cluster) * vec;
  c.elems = elems;
  c.shared_elems = static_cast<int>((n + span - 1) / span * vec) - elems;
  return c;
}

void expect_rule(const ir::Kernel& k, const ir::TileConfig& c, const std::string& words) {
  try {
    ir::validate(k, c);
    ADD_FAILURE() << c.str() << " was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
  }
}

TEST(RowReduceSharedPart, RulesNameWhatIsWrong) {
  ir::Kernel k = lowered("softmax", "f16", 65536);
  ir::TileConfig c = shared_part(512, 0, 64, 8, 65536);
  EXPECT_EQ(c.shared_elems, 64);
  EXPECT_NO_THROW(ir::validate(k, c));
  ir::TileConfig short_of_the_row = c;
  short_of_the_row.shared_elems = 56;
  expect_rule(k, short_of_the_row, "(elems + shared_elems) = 61440 cannot hold a row of 65536");
  ir::TileConfig odd = c;
  odd.shared_elems = 68;
  expect_rule(k, odd, "whole vectors in shared memory");
  ir::TileConfig streamed = c;
  streamed.stream = 1;
  streamed.elems = streamed.vec;
  expect_rule(k, streamed, "stream must be 0");
  expect_rule(k, shared_part(512, 0, 32, 4, 65536), "16-byte vectors");
  // 1024 threads x 248 fp16 elements of x in shared memory: 496 KB.
  expect_rule(k, shared_part(1024, 0, 8, 8, 262144), "shared memory takes");
  // fp32 add+RMSNorm keeps x and the residual: 512 x 64 x 8 bytes.
  expect_rule(lowered("add_rms_norm", "f32", 65536), shared_part(512, 0, 64, 4, 65536), "shared memory takes");
  const ir::TargetScope old_target("sm_75");
  expect_rule(k, c, "needs sm_80");
}

TEST(RowReduceSharedPart, CandidatesOfferItForLongRowsOnly) {
  auto count = [](const ir::Kernel& k) {
    return row_reduce_test::count_candidates(k, [](const ir::TileConfig& c) { return c.shared_elems > 0; });
  };
  EXPECT_EQ(count(lowered("softmax", "f16", 4096)), 0);
  EXPECT_GT(count(lowered("softmax", "f16", 65536)), 0);
  EXPECT_GT(count(lowered("softmax", "f16", 262144)), 0);
  EXPECT_GT(count(lowered("layer_norm", "f32", 16384)), 0);
}

TEST(RowReduceSharedPart, TheDefaultForRowsPast64KB) {
  // One block of 512 threads up to 128 KB of row, then clusters of 256-thread blocks
  // holding 64 KB each; 64 bytes of each thread's slice in registers.
  ir::TileConfig c = lowered("softmax", "f16", 65536).config;
  EXPECT_EQ(c, shared_part(512, 0, 32, 8, 65536)) << c.str();
  c = lowered("softmax", "f16", 262144).config;
  EXPECT_EQ(c, shared_part(256, 8, 32, 8, 262144)) << c.str();
  c = lowered("layer_norm", "f32", 32768).config;
  EXPECT_EQ(c, shared_part(512, 0, 16, 4, 32768)) << c.str();
  c = lowered("softmax", "f32", 262144).config;
  EXPECT_EQ(c, shared_part(256, 16, 16, 4, 262144)) << c.str();
  // Up to 64 KB the row stays in registers; vectors under 16 bytes keep the clusters.
  EXPECT_EQ(lowered("softmax", "f16", 32768).config.shared_elems, 0);
  c = lowered("softmax", "f16", 65534).config;
  EXPECT_EQ(c.shared_elems, 0);
  EXPECT_GT(c.cluster, 1);
  // An older GPU: one block still, no cluster past 128 KB.
  const ir::TargetScope old_target("sm_80");
  EXPECT_EQ(lowered("softmax", "f16", 65536).config, shared_part(512, 0, 32, 8, 65536));
  EXPECT_LE(lowered("softmax", "f16", 262144).config.cluster, 1);
}

TEST(RowReduceSharedPart, TheDefaultIsACandidate) {
  for (const char* arch : {"sm_90a", "sm_80"}) {
    const ir::TargetScope target(arch);
    for (const char* which : {"softmax", "add_rms_norm", "layer_norm", "sum"})
      for (const char* dt : {"f16", "f32"})
        for (long n : {4096L, 32768L, 65536L, 262144L}) {
          ir::Kernel k = lowered(which, dt, n);
          const std::vector<ir::TileConfig> all = ir::candidates(k);
          EXPECT_NE(std::find(all.begin(), all.end(), k.config), all.end())
              << arch << " " << which << " " << dt << " " << n << ": " << k.config.str();
        }
  }
}

TEST(RowReduceSharedPart, EveryReductionCompilesWithASharedPart) {
  for (const char* which : {"sum", "max", "min", "mean", "softmax", "log_softmax", "layer_norm", "rms_norm",
                            "add_rms_norm"})
    for (int cluster : {0, 4}) {
      const long n = 65536 * std::max(1, cluster);
      ir::Kernel k = lowered(which, "f16", n);
      k.config = shared_part(512, cluster, 64, 8, n);
      SCOPED_TRACE(std::string(which) + " " + k.config.str());
      ASSERT_NO_THROW(ir::validate(k, k.config));
      std::string source = codegen::emit_cuda(k);
      // Copied in with cp.async, read back in every phase's second loop.
      EXPECT_TRUE(test::contains(source, "extern __shared__ __align__(16) unsigned char kiln_row_tail[];"));
      EXPECT_TRUE(
          test::contains(source, "kiln_copy_async16(tail0 + ((j - 8) * 512 + threadIdx.x) * 8, in_x + base0 + col);"));
      EXPECT_TRUE(test::contains(source, "  kiln_copy_async_wait();\n"));
      EXPECT_TRUE(test::contains(source, "for (int j = 8; j < 16; ++j) {"));
      EXPECT_TRUE(test::contains(source, "*reinterpret_cast<const kiln_vec<__half, 8>*>(tail0 + "));
      codegen::LaunchDims d = codegen::launch_dims(k);
      EXPECT_EQ(d.shared_bytes, 512u * 64 * (std::string(which) == "add_rms_norm" ? 4 : 2));
      runtime::CompileResult r = runtime::compile_cuda(source, "shared_part", runtime::CompileOptions{"sm_90a", {}});
      EXPECT_FALSE(r.cubin.empty());
      EXPECT_FALSE(test::contains(r.log, "warning")) << r.log;
    }
}

TEST(RowReduceSharedPart, ARowInRegistersAloneHasNoSharedPart) {
  ir::Kernel k = lowered("softmax", "f16", 4096);
  std::string source = codegen::emit_cuda(k);
  EXPECT_FALSE(test::contains(source, "kiln_row_tail"));
  EXPECT_FALSE(test::contains(source, "kiln_copy_async"));
  EXPECT_EQ(codegen::launch_dims(k).shared_bytes, 0u);
}

}  // namespace
}  // namespace kiln
