// The col-reduce tile rules over any set of axes and for tall matrices: every
// candidate of every pattern validates and the heuristic is one of them; a tall,
// narrow column reduction gets narrow column tiles and a split whose fold stays short;
// the sweep stays small enough to compile within a tuning budget of seconds.
#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>

#include "col_reduce_test_graphs.h"
#include "ir/parser.h"
#include "ir/tile_config.h"
#include "passes/lower.h"
#include "passes/pass_manager.h"
#include "reduce_axes_test_graphs.h"

namespace kiln {
namespace {

ir::Kernel kernel_of(const std::string& text) {
  ir::Graph g = ir::parse(text, "reduce_axes_tile_test");
  std::ostringstream quiet;
  passes::PassManager("decompose,simplify,cse,dce,fuse", {}, quiet).run(g);
  std::vector<ir::Kernel> ks = passes::lower(g).kernels;
  EXPECT_EQ(ks.size(), 1u);
  return ks.at(0);
}

TEST(ReduceAxesTile, EveryCandidateOfEveryPatternValidatesAndTheHeuristicIsOne) {
  for (const char* dt : {"f32", "bf16"})
    for (const auto& c : reduce_axes_test::kCases) {
      const std::string text = reduce_axes_test::reduce_graph("logsumexp", dt, c.shape, c.axes, false);
      SCOPED_TRACE(text);
      ir::Kernel k = kernel_of(text);
      std::vector<ir::TileConfig> all = ir::candidates(k);
      ASSERT_FALSE(all.empty());
      for (const ir::TileConfig& t : all) EXPECT_NO_THROW(ir::validate(k, t)) << t.str();
      const ir::TileConfig h = ir::heuristic(k);
      EXPECT_NO_THROW(ir::validate(k, h)) << h.str();
      if (k.kind == ir::KernelKind::ColReduce) {
        EXPECT_NE(std::find(all.begin(), all.end(), h), all.end()) << "heuristic " << h.str() << " is not swept";
      }
    }
}

TEST(ReduceAxesTile, TallNarrowColumnsGetNarrowTilesAndAShortFold) {
  // 65536 x 256 fp32: 2 column tiles of 128 columns needed 512 slices each to fill the
  // GPU, and the last block of a tile folded them 64 to a thread; narrow tiles need few.
  ir::TileConfig c = ir::heuristic(kernel_of(col_reduce_test::column_graph("mean", "f32", 65536, 256)));
  EXPECT_EQ(c.vec, 4);
  EXPECT_EQ(c.cols, 32);  // 8 threads of 4 columns: 128 bytes of each row
  EXPECT_EQ(c.k_threads, 64);
  EXPECT_EQ(c.k_split, 64);  // 8 tiles x 64 slices of 512 threads: every thread slot (16 vectors a thread)
  EXPECT_LE(c.k_split, 8 * c.k_threads);  // a short fold
  ir::TileConfig wide = ir::heuristic(kernel_of(col_reduce_test::column_graph("mean", "f32", 50000, 1024)));
  EXPECT_EQ(wide.cols, 32);
  EXPECT_LE(wide.k_split, 8 * wide.k_threads);
  const int64_t threads = (1024 / wide.cols) * wide.k_split * (wide.cols / wide.vec) * wide.k_threads;
  EXPECT_GE(threads, int64_t{ir::kTargetSMs} * 512);  // at least a quarter of every SM's thread slots
  EXPECT_EQ(wide.k_split, 16);  // 32 tiles x 16 slices of 512 threads: every thread slot
  // Where the column tiles alone hold about 1024 threads an SM, no split (one cost 6%).
  ir::TileConfig flat = ir::heuristic(kernel_of(col_reduce_test::column_graph("mean", "f32", 1024, 32768)));
  EXPECT_EQ(flat.k_split, 1);
}

TEST(ReduceAxesTile, TheSweepOfATallColumnReductionStaysSmall) {
  // Every config is its own binary: about 600 of them (every vector width, every
  // power-of-two split) took the whole of a 10 s tuning budget to compile.
  for (int64_t rows : {50000, 65536}) {
    ir::Kernel k = kernel_of(col_reduce_test::column_graph("mean", "f32", rows, 1024));
    std::vector<ir::TileConfig> all = ir::candidates(k);
    EXPECT_LE(all.size(), 120u);
    EXPECT_GE(all.size(), 20u);
    for (const ir::TileConfig& t : all) {
      EXPECT_EQ(t.vec, 4);
    }
  }
}

TEST(ReduceAxesTile, MiddleAxisTilesStayInsideTheInnerKeptDim) {
  ir::TileConfig c = ir::heuristic(kernel_of(reduce_axes_test::reduce_graph("sum", "f32", {64, 512, 64}, {1}, false)));
  EXPECT_EQ(c.vec, 4);
  EXPECT_LE(c.cols, 64);  // a block's columns lie in one contiguous stretch of each row
}

}  // namespace
}  // namespace kiln
