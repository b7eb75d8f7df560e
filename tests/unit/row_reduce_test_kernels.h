// Row-reduction kernels as the compile pipeline lowers them, for the tile-rule tests:
// one case of row_reduce_test::graph_text, and a count of its legal candidates.
#pragma once
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "ir/kernel.h"
#include "ir/parser.h"
#include "ir/tile_config.h"
#include "passes/lower.h"
#include "passes/pass_manager.h"
#include "row_reduce_test_graphs.h"
#include "runtime/program.h"

namespace kiln::row_reduce_test {

// The one kernel of case `which` in dtype `dt` with rows of n (`rows` leading rows).
inline ir::Kernel lowered(const std::string& which, const std::string& dt, long n, const std::string& rows = "3") {
  ir::Graph g = ir::parse(graph_text(which, dt, rows, n), "row_reduce_test");
  passes::PassManager pm(std::string(runtime::kCompilePipeline));
  pm.run(g);
  std::vector<ir::Kernel> ks = passes::lower(g).kernels;
  EXPECT_EQ(ks.size(), 1u);
  return ks.at(0);
}

// How many of k's candidates `which` picks; every candidate must pass validate.
inline int count_candidates(const ir::Kernel& k, const std::function<bool(const ir::TileConfig&)>& which) {
  int count = 0;
  for (const ir::TileConfig& c : ir::candidates(k)) {
    EXPECT_NO_THROW(ir::validate(k, c)) << c.str();
    count += which(c);
  }
  return count;
}

}  // namespace kiln::row_reduce_test
