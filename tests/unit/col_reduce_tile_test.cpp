// The col-reduce kind's tile rules: every candidate validates, the heuristic's pick
// is valid and fills the GPU for the shapes the benchmarks use, and illegal configs
// are rejected with the rule they break.
#include <gtest/gtest.h>

#include <sstream>

#include "col_reduce_test_graphs.h"
#include "ir/error.h"
#include "ir/kernel.h"
#include "ir/parser.h"
#include "ir/tile_config.h"
#include "passes/lower.h"
#include "passes/pass_manager.h"

namespace kiln {
namespace {

ir::Kernel kernel_of(const std::string& text) {
  ir::Graph g = ir::parse(text, "col_reduce_tile_test");
  std::ostringstream quiet;
  passes::PassManager("decompose,simplify,cse,dce,fuse", {}, quiet).run(g);
  std::vector<ir::Kernel> ks = passes::lower(g).kernels;
  if (ks.size() != 1 || ks[0].kind != ir::KernelKind::ColReduce) throw Error("expected one col_reduce kernel");
  return ks[0];
}

std::string rejection(const ir::Kernel& k, const ir::TileConfig& c) {
  try {
    ir::validate(k, c);
  } catch (const Error& e) {
    return e.what();
  }
  return "(accepted)";
}

ir::TileConfig config(int cols, int vec, int k_threads, int k_split) {
  ir::TileConfig c;
  c.cols = cols;
  c.vec = vec;
  c.k_threads = k_threads;
  c.k_split = k_split;
  return c;
}

TEST(ColReduceTile, EveryCandidateValidatesAndTheHeuristicIsOne) {
  for (const std::string& text :
       {col_reduce_test::column_graph("sum", "f32", 1000, 4096), col_reduce_test::column_graph("max", "f16", 127, 3),
        col_reduce_test::column_graph("mean", "bf16", 65536, 5), col_reduce_test::full_graph("sum", "f32", 4096, 1000),
        col_reduce_test::full_graph("min", "bf16", 3, 127)}) {
    SCOPED_TRACE(text);
    ir::Kernel k = kernel_of(text);
    std::vector<ir::TileConfig> all = ir::candidates(k);
    EXPECT_FALSE(all.empty());
    for (const ir::TileConfig& c : all) EXPECT_NO_THROW(ir::validate(k, c)) << c.str();
    EXPECT_NO_THROW(ir::validate(k, ir::heuristic(k))) << ir::heuristic(k).str();
  }
}

TEST(ColReduceTile, SquareFp32ColumnSumUses16ByteVectorsAndFillsTheGpu) {
  ir::Kernel k = kernel_of(col_reduce_test::column_graph("sum", "f32", 16384, 16384));
  ir::TileConfig c = ir::heuristic(k);
  EXPECT_EQ(c.vec, 4);
  EXPECT_EQ(c.cols, 32);  // 8 column threads of 4 columns: 128 bytes of each row
  EXPECT_EQ(c.k_threads, 32);
  EXPECT_EQ(c.k_split, 1);  // 512 column tiles of 256 threads: 1024 threads an SM without a split
}

TEST(ColReduceTile, TallNarrowAndFullReductionsSplitK) {
  ir::TileConfig narrow = ir::heuristic(kernel_of(col_reduce_test::column_graph("sum", "f32", 65536, 3)));
  EXPECT_EQ(narrow.vec, 1);  // 3 columns: no vector fits
  EXPECT_GE(narrow.k_split, 32);
  ir::TileConfig full = ir::heuristic(kernel_of(col_reduce_test::full_graph("sum", "f32", 8192, 16384)));
  EXPECT_EQ(full.cols, 1);
  EXPECT_EQ(full.vec, 4);
  EXPECT_GE(full.k_split, 4 * ir::kTargetSMs);  // 2^27 elements spread over every SM several times
}

TEST(ColReduceTile, SmallReductionNeedsNoSplit) {
  ir::TileConfig c = ir::heuristic(kernel_of(col_reduce_test::column_graph("sum", "f16", 3, 128)));
  EXPECT_EQ(c.k_split, 1);
}

TEST(ColReduceTile, IllegalConfigsNameTheirRule) {
  ir::Kernel odd = kernel_of(col_reduce_test::column_graph("sum", "f32", 64, 1001));
  EXPECT_NE(rejection(odd, config(128, 4, 8, 1)).find("vec = 4: the innermost kept dim (1001) is not a multiple of vec"),
            std::string::npos)
      << rejection(odd, config(128, 4, 8, 1));
  ir::Kernel k = kernel_of(col_reduce_test::column_graph("sum", "f16", 64, 1024));
  EXPECT_NE(rejection(k, config(128, 8, 6, 1)).find("k_threads = 6: threads along K must be a power of two"),
            std::string::npos);
  EXPECT_NE(rejection(k, config(96, 8, 8, 1)).find("cols = 96: columns per block must be vec times a power of two"),
            std::string::npos);
  EXPECT_NE(rejection(k, config(256, 8, 64, 1)).find("the block has 2048 threads"), std::string::npos);
  EXPECT_NE(rejection(k, config(256, 8, 8, 65)).find("k_split = 65 is more slices than the 64 reduced elements"),
            std::string::npos);
  ir::TileConfig row_fields = config(256, 8, 8, 1);
  row_fields.rows = 2;
  EXPECT_NE(rejection(k, row_fields).find("sets cols, vec, k_threads and k_split only"), std::string::npos);
  ir::Kernel full = kernel_of(col_reduce_test::full_graph("sum", "f32", 64, 64));
  EXPECT_NE(rejection(full, config(4, 4, 64, 1)).find("cols = 4: a block takes one column when the innermost dim is reduced"),
            std::string::npos);
}

TEST(ColReduceTile, ConfigRoundTripsThroughAttributes) {
  ir::TileConfig c = config(128, 4, 8, 8);
  EXPECT_EQ(c.str(), "{vec = 4, cols = 128, k_threads = 8, k_split = 8}");
  EXPECT_EQ(ir::TileConfig::from_attrs(c.to_attrs()), c);
}

}  // namespace
}  // namespace kiln
