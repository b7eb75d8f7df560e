// The random graph generator of the fuzzers and kiln-difftest: graphs are valid, the
// same bytes give the same graph, and over a few thousand seeds every op appears.
#include <gtest/gtest.h>

#include <set>

#include "ir/printer.h"
#include "tests/fuzz/random_graph.h"

namespace kiln {
namespace {

TEST(GraphGenerator, GraphsAreValidAndDeterministic) {
  for (uint64_t seed = 1; seed <= 300; ++seed) {
    fuzz::Decisions a = fuzz::Decisions::from_seed(seed), b = fuzz::Decisions::from_seed(seed);
    ir::Graph g = fuzz::random_graph(a);
    EXPECT_NO_THROW(ir::verify(g)) << ir::print(g);
    EXPECT_FALSE(g.outputs().empty());
    EXPECT_EQ(ir::print(g), ir::print(fuzz::random_graph(b)));
    for (const ir::Node* n : g.nodes()) EXPECT_LE(n->result->type.numel(), fuzz::GeneratorLimits{}.max_elements);
  }
}

TEST(GraphGenerator, EveryOpAppearsAndFewDrawsAreRefused) {
  std::set<ir::OpKind> seen;
  fuzz::GeneratorStats stats;
  for (uint64_t seed = 1; seed <= 3000; ++seed) {
    fuzz::Decisions d = fuzz::Decisions::from_seed(seed);
    ir::Graph g = fuzz::random_graph(d, {}, &stats);
    for (const ir::Node* n : g.nodes()) seen.insert(n->op);
  }
  for (ir::OpKind op : ir::all_ops()) EXPECT_TRUE(seen.count(op)) << ir::op_name(op) << " never generated";
  EXPECT_LT(stats.rejected, stats.ops / 50) << stats.rejected << " of " << stats.ops + stats.rejected;
}

TEST(GraphGenerator, AnyBytesDecodeToAGraph) {
  for (size_t size : {0, 1, 2, 7, 64}) {
    std::vector<uint8_t> bytes(size, 0xff);
    fuzz::Decisions d(bytes);
    ir::Graph g = fuzz::random_graph(d);
    EXPECT_NO_THROW(ir::verify(g));
    EXPECT_FALSE(g.outputs().empty());
  }
}

}  // namespace
}  // namespace kiln
