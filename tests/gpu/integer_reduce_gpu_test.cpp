// i32 sum, max and min on the GPU against the reference interpreter, bit for bit:
// over the last axis, the first, a middle one, several and all, on lengths of 1, 7,
// 1000 and 4097, with and without keepdim; with the values scaled so that sums
// saturate and max / min meet the i32 bounds; every tile candidate of a row, a middle
// axis and a full reduction (block-wide rows, clusters, K slices); and i32 reductions
// sharing a kernel with a float one and an epilogue.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "../unit/integer_reduce_test_graphs.h"
#include "gpu_test_util.h"
#include "ir/compare.h"
#include "ir/interpreter.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "passes/pass_manager.h"
#include "runtime/program.h"

namespace kiln {
namespace {

using integer_reduce_test::Case;

// Integer outputs must equal the interpreter's exactly; float ones within their
// dtype's bound. Two runs give the same bits.
void expect_program_matches(const ir::Graph& g, runtime::Program& program, uint64_t seed) {
  std::vector<HostTensor> inputs = ir::random_inputs(g, seed);
  std::vector<HostTensor> want = ir::evaluate(g, inputs);
  std::vector<HostTensor> got = program.run(inputs);
  std::vector<HostTensor> again = program.run(inputs);
  ASSERT_EQ(got.size(), want.size());
  std::string kernels;
  for (const auto& k : program.kernels()) kernels += ir::print(k.kernel);
  for (size_t i = 0; i < got.size(); ++i) {
    if (is_integer(want[i].type.dtype)) {
      ASSERT_EQ(got[i].values.size(), want[i].values.size());
      size_t wrong = 0, first = 0;
      for (size_t j = 0; j < got[i].values.size(); ++j)
        if (got[i].values[j] != want[i].values[j] && wrong++ == 0) first = j;
      EXPECT_EQ(wrong, 0u) << "output " << i << ": element " << first << " is " << got[i].values[first]
                           << ", the reference " << want[i].values[first] << "\n" << kernels;
    } else {
      Comparison c = compare(got[i], want[i]);
      EXPECT_TRUE(c.passed) << "output " << i << ": " << c.str() << "\n" << kernels;
    }
    EXPECT_TRUE(got[i].values == again[i].values) << "output " << i << " differs between two runs";
  }
}

void expect_text_matches(const std::string& text, uint64_t seed) {
  SCOPED_TRACE(text);
  ir::Graph g = ir::parse(text, "integer_reduce_gpu_test");
  runtime::Program program = runtime::Program::compile(g);
  expect_program_matches(g, program, seed);
}

void expect_op_matches(const std::string& op) {
  for (bool keepdim : {false, true}) {
    for (const Case& c : integer_reduce_test::kCases) {
      expect_text_matches(integer_reduce_test::reduce_graph(op, c, keepdim), 41);
      expect_text_matches(integer_reduce_test::scaled_reduce_graph(op, c, keepdim), 43);
    }
    for (const Case& c : integer_reduce_test::kLengthOneCases)
      expect_text_matches(integer_reduce_test::reduce_graph(op, c, keepdim), 47);
  }
}

TEST(IntegerReduceGpu, Sum) {
  KILN_REQUIRE_GPU();
  expect_op_matches("sum");
}

TEST(IntegerReduceGpu, Max) {
  KILN_REQUIRE_GPU();
  expect_op_matches("max");
}

TEST(IntegerReduceGpu, Min) {
  KILN_REQUIRE_GPU();
  expect_op_matches("min");
}

TEST(IntegerReduceGpu, MixedWithFloatReductionsAndEpilogues) {
  KILN_REQUIRE_GPU();
  for (const char* text : {integer_reduce_test::kMixedRows, integer_reduce_test::kMixedColumns,
                           integer_reduce_test::kCastThenSum})
    expect_text_matches(text, 53);
}

// Every candidate of a long row, a middle axis and a full reduction of one row, the
// values scaled so that the sums saturate: block-wide and clustered rows and split K
// combine their integer partials exactly.
TEST(IntegerReduceGpu, EveryTileCandidateMatches) {
  KILN_REQUIRE_GPU();
  const Case cases[] = {{{7, 65536}, {1}, integer_reduce_test::Pattern::LastAxis},
                        {{6, 4097, 40}, {1}, integer_reduce_test::Pattern::MiddleAxis},
                        {{100003}, {0}, integer_reduce_test::Pattern::AllAxes}};
  for (const char* op : integer_reduce_test::kOps)
    for (const Case& c : cases) {
      const std::string text = integer_reduce_test::scaled_reduce_graph(op, c, false);
      ir::Graph fused = ir::parse(text, "integer_reduce_gpu_test");
      std::ostringstream quiet;
      passes::PassManager("decompose,simplify,cse,dce,fuse", {}, quiet).run(fused);
      ASSERT_EQ(fused.groups().size(), 1u) << ir::print(fused);
      runtime::ProgramOptions options;
      options.pipeline = "";
      std::vector<ir::TileConfig> configs =
          ir::candidates(runtime::Program::compile(fused, options).kernels()[0].kernel);
      ASSERT_FALSE(configs.empty());
      for (const ir::TileConfig& config : configs) {
        SCOPED_TRACE(text + config.str());
        fused.group(0).tile = config.to_attrs();
        runtime::Program program = runtime::Program::compile(fused, options);
        ASSERT_EQ(program.kernels()[0].kernel.config, config);
        expect_program_matches(fused, program, 7);
      }
    }
}

}  // namespace
}  // namespace kiln
