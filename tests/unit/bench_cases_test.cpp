// The benchmark case registry: every case builds a valid graph with the inputs and
// outputs the baselines expect, the byte formulas match hand-computed values, and
// sizes parse (or fail) as documented.
#include <gtest/gtest.h>

#include "ir/error.h"
#include "runtime/bench_cases.h"

namespace kiln {
namespace {

using runtime::BenchSize;

std::vector<TensorType> input_types(const ir::Graph& g) {
  std::vector<TensorType> types;
  for (const ir::Value* v : g.inputs()) types.push_back(v->type);
  return types;
}

std::vector<TensorType> output_types(const ir::Graph& g) {
  std::vector<TensorType> types;
  for (const ir::Value* v : g.outputs()) types.push_back(v->type);
  return types;
}

const runtime::BenchCase& named(const char* name) { return runtime::find_bench_case(name); }

TEST(BenchCases, ListsTheSixCasesInOrder) {
  std::vector<std::string> names;
  for (const auto& c : runtime::bench_cases()) names.push_back(c.name);
  EXPECT_EQ(names, (std::vector<std::string>{"gelu_chain", "softmax", "add_rmsnorm", "layer_norm", "row_sum",
                                             "col_sum"}));
}

TEST(BenchCases, EveryDefaultGraphVerifies) {
  for (const auto& c : runtime::bench_cases())
    for (DType t : c.dtypes)
      for (const BenchSize& s : c.sizes) {
        SCOPED_TRACE(c.name + " " + s.str());
        ir::Graph g = runtime::bench_graph(c, t, s);
        EXPECT_NO_THROW(ir::verify(g));
        EXPECT_FALSE(g.outputs().empty());
      }
}

TEST(BenchCases, RowWiseDefaultsHold2To27Elements) {
  for (const char* name : {"softmax", "add_rmsnorm", "layer_norm"})
    for (const BenchSize& s : named(name).sizes) EXPECT_EQ(s.rows * s.cols, int64_t{1} << 27) << name << " " << s.str();
  std::vector<int64_t> cols;
  for (const BenchSize& s : named("softmax").sizes) cols.push_back(s.cols);
  EXPECT_EQ(cols, (std::vector<int64_t>{128, 512, 1024, 4096, 16384, 32768, 65536, 262144}));
}

TEST(BenchCases, GeluChainTakesXRSBAndGivesY) {
  ir::Graph g = runtime::bench_graph(named("gelu_chain"), DType::f16, {37, 129});
  EXPECT_EQ(input_types(g), (std::vector<TensorType>{{DType::f16, {37, 129}}, {DType::f16, {37, 129}},
                                                     {DType::f16, {129}}, {DType::f16, {129}}}));
  EXPECT_EQ(output_types(g), (std::vector<TensorType>{{DType::f16, {37, 129}}}));
}

TEST(BenchCases, AddRmsNormGivesYThenH) {
  ir::Graph g = runtime::bench_graph(named("add_rmsnorm"), DType::f16, {4, 1024});
  EXPECT_EQ(input_types(g).size(), 3u);
  EXPECT_EQ(input_types(g)[2], (TensorType{DType::f16, {1024}}));
  ASSERT_EQ(g.outputs().size(), 2u);
  EXPECT_EQ(g.outputs()[0]->producer->op, ir::OpKind::RmsNorm);
  EXPECT_EQ(g.outputs()[1]->producer->op, ir::OpKind::Add);
}

TEST(BenchCases, LayerNormTakesXWB) {
  ir::Graph g = runtime::bench_graph(named("layer_norm"), DType::f16, {8, 1024});
  EXPECT_EQ(input_types(g), (std::vector<TensorType>{{DType::f16, {8, 1024}}, {DType::f16, {1024}},
                                                     {DType::f16, {1024}}}));
  EXPECT_EQ(output_types(g), (std::vector<TensorType>{{DType::f16, {8, 1024}}}));
}

TEST(BenchCases, RowAndColumnSumsReduceTheRightAxis) {
  EXPECT_EQ(output_types(runtime::bench_graph(named("row_sum"), DType::f32, {300, 7})),
            (std::vector<TensorType>{{DType::f32, {300}}}));
  EXPECT_EQ(output_types(runtime::bench_graph(named("col_sum"), DType::f32, {300, 7})),
            (std::vector<TensorType>{{DType::f32, {7}}}));
}

TEST(BenchCases, BytesCountEachTensorOnce) {
  // Hand-computed from the tensors each case reads and writes.
  EXPECT_EQ(runtime::bench_bytes(named("gelu_chain"), DType::f16, {8192, 8192}), (3 * 8192LL * 8192 + 2 * 8192) * 2);
  EXPECT_EQ(runtime::bench_bytes(named("gelu_chain"), DType::f32, {2, 3}), (3 * 6 + 2 * 3) * 4);
  EXPECT_EQ(runtime::bench_bytes(named("softmax"), DType::f16, {1048576, 128}), 536870912);
  EXPECT_EQ(runtime::bench_bytes(named("add_rmsnorm"), DType::f16, {10, 100}), (4 * 1000 + 100) * 2);
  EXPECT_EQ(runtime::bench_bytes(named("layer_norm"), DType::f16, {10, 100}), (2 * 1000 + 200) * 2);
  EXPECT_EQ(runtime::bench_bytes(named("row_sum"), DType::f32, {10, 100}), (1000 + 10) * 4);
  EXPECT_EQ(runtime::bench_bytes(named("col_sum"), DType::f32, {10, 100}), (1000 + 100) * 4);
}

TEST(BenchCases, BytesMatchTheGraphsInputsAndOutputs) {
  // An independent count: the graph's own inputs and outputs, each once.
  for (const auto& c : runtime::bench_cases()) {
    ir::Graph g = runtime::bench_graph(c, c.dtypes[0], {6, 40});
    int64_t bytes = 0;
    for (const TensorType& t : input_types(g)) bytes += t.bytes();
    for (const TensorType& t : output_types(g)) bytes += t.bytes();
    EXPECT_EQ(runtime::bench_bytes(c, c.dtypes[0], {6, 40}), bytes) << c.name;
    EXPECT_EQ(runtime::bench_flops(c, c.dtypes[0], {6, 40}), 0) << c.name;
  }
}

TEST(BenchCases, UnknownCaseNamesTheKnownOnes) {
  try {
    runtime::find_bench_case("softmx");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no benchmark case named 'softmx'; known: gelu_chain, softmax"),
              std::string::npos)
        << e.what();
  }
}

TEST(BenchCases, ParsesSizes) {
  EXPECT_EQ(runtime::parse_bench_sizes("8192x8192,1x3"), (std::vector<BenchSize>{{8192, 8192}, {1, 3}}));
}

TEST(BenchCases, RejectsMalformedSizes) {
  for (const char* bad : {"", "8192", "8x", "x8", "0x5", "4x-2", "4x5,", "4x5y", "4 x5"})
    EXPECT_THROW(runtime::parse_bench_sizes(bad), Error) << "'" << bad << "'";
}

TEST(BenchCases, RejectsIntegerDtypes) {
  EXPECT_THROW(runtime::bench_graph(named("softmax"), DType::i32, {4, 4}), Error);
}

}  // namespace
}  // namespace kiln
