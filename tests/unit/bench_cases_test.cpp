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

TEST(BenchCases, ListsTheCasesInOrder) {
  std::vector<std::string> names;
  for (const auto& c : runtime::bench_cases()) names.push_back(c.name);
  EXPECT_EQ(names, (std::vector<std::string>{"gelu_chain", "swiglu", "mul_add", "softmax", "add_rmsnorm",
                                             "layer_norm", "row_sum", "col_sum", "col_mean", "middle_axis_sum",
                                             "multi_axis_sum", "gemm", "gemm_batched", "gemm_bias_gelu", "gemm_fp8",
                                             "quant_w4g128", "quant_w8", "attention", "attention_causal"}));
}

// A small size of the form the case takes.
BenchSize small_size(const runtime::BenchCase& c) {
  if (runtime::is_quant_case(c)) return BenchSize::gemm(6, 40, 256);  // K in groups of 128, even for i4
  if (c.form == runtime::SizeForm::Attention)  // grouped: 4 query heads over 2 K/V heads
    return BenchSize::attention(2, 4, 2, 7, 33, 64, c.name == "attention_causal");
  return c.form == runtime::SizeForm::Gemm ? BenchSize::gemm(6, 40, 9) : BenchSize{6, 40};
}

TEST(BenchCases, EveryDefaultGraphVerifies) {
  for (const auto& c : runtime::bench_cases())
    for (DType t : c.dtypes)
      for (const BenchSize& s : c.sizes) {
        EXPECT_TRUE(c.takes(s)) << c.name << " " << s.str();
        SCOPED_TRACE(c.name + " " + s.str());
        ir::Graph g = runtime::bench_graph(c, t, s);
        EXPECT_NO_THROW(ir::verify(g));
        EXPECT_FALSE(g.outputs().empty());
      }
}

// Attention sizes read as bench/peers.py's: BxHxSqxSkvxD, or BxHxSxD with c (causal) or gN
// (N K/V heads); a plain BxMxNxK stays a batched GEMM. Rows carry [B, H, KV, Sq, Skv, D].
TEST(BenchCases, AttentionSizesParseAsThePeersWrite) {
  const std::vector<BenchSize> s = runtime::parse_bench_sizes("8x32x1x8192x128,4x16x4096x128c,8x32x1x8192x128g8,4x16x4096x128");
  ASSERT_EQ(s.size(), 4u);
  EXPECT_EQ(s[0], BenchSize::attention(8, 32, 32, 1, 8192, 128, false));
  EXPECT_EQ(s[1], BenchSize::attention(4, 16, 16, 4096, 4096, 128, true));
  EXPECT_EQ(s[2], BenchSize::attention(8, 32, 8, 1, 8192, 128, false));
  EXPECT_EQ(s[3], BenchSize::batched_gemm(4, 16, 4096, 128));
  EXPECT_EQ(s[1].str(), "4x16x4096x128c");
  EXPECT_EQ(s[2].str(), "8x32x1x8192x128g8");
  EXPECT_EQ(s[2].dims(), (std::vector<int64_t>{8, 32, 8, 1, 8192, 128}));
  EXPECT_TRUE(named("attention").takes(s[0]));
  EXPECT_FALSE(named("attention").takes(s[1]));
  EXPECT_TRUE(named("attention_causal").takes(s[1]));
  EXPECT_FALSE(named("attention").takes(s[3]));
  EXPECT_THROW(runtime::check_size_form(named("attention"), s[1]), Error);
  EXPECT_THROW(runtime::parse_bench_sizes("4x16x4096x128gx"), Error);
  // Causal counts half the flops; bytes are q, k, v and the output once each.
  EXPECT_EQ(runtime::bench_flops(named("attention_causal"), DType::f16, s[1]), 4ll * 4 * 16 * 4096 * 4096 * 128 / 2);
  EXPECT_EQ(runtime::bench_bytes(named("attention"), DType::f16, s[2]), (2ll * 8 * 32 * 128 + 2ll * 8 * 8 * 8192 * 128) * 2);
  const ir::Graph g = runtime::bench_graph(named("attention"), DType::f16, s[2]);
  EXPECT_EQ(g.inputs()[0]->type.shape, (Shape{8, 8, 4, 1, 128}));  // q grouped over the K/V heads
  EXPECT_EQ(g.inputs()[1]->type.shape, (Shape{8, 8, 1, 8192, 128}));
}

TEST(BenchCases, RowWiseDefaultsHold2To27Elements) {
  // After the decoding row that each starts with.
  for (const char* name : {"softmax", "add_rmsnorm", "layer_norm"})
    for (size_t i = 1; i < named(name).sizes.size(); ++i) {
      const BenchSize& s = named(name).sizes[i];
      EXPECT_EQ(s.rows * s.cols, int64_t{1} << 27) << name << " " << s.str();
    }
  std::vector<int64_t> cols;
  for (const BenchSize& s : named("softmax").sizes) cols.push_back(s.cols);
  EXPECT_EQ(cols, (std::vector<int64_t>{4096, 128, 512, 1024, 4096, 16384, 32768, 65536, 262144}));
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

TEST(BenchCases, GatesAndMultiplyAddsReadEveryInputInFull) {
  ir::Graph swiglu = runtime::bench_graph(named("swiglu"), DType::bf16, {300, 7});
  EXPECT_EQ(input_types(swiglu), (std::vector<TensorType>{{DType::bf16, {300, 7}}, {DType::bf16, {300, 7}}}));
  EXPECT_EQ(output_types(swiglu), (std::vector<TensorType>{{DType::bf16, {300, 7}}}));
  ir::Graph mul_add = runtime::bench_graph(named("mul_add"), DType::bf16, {300, 7});
  EXPECT_EQ(input_types(mul_add).size(), 3u);
  EXPECT_EQ(runtime::bench_bytes(named("swiglu"), DType::bf16, {10, 100}), 3 * 1000 * 2);
  EXPECT_EQ(runtime::bench_bytes(named("mul_add"), DType::bf16, {10, 100}), 4 * 1000 * 2);
}

TEST(BenchCases, ColumnMeansReduceTheRows) {
  ir::Graph g = runtime::bench_graph(named("col_mean"), DType::f32, {65536, 256});
  EXPECT_EQ(output_types(g), (std::vector<TensorType>{{DType::f32, {256}}}));
  EXPECT_EQ(g.outputs()[0]->producer->op, ir::OpKind::ReduceMean);
  EXPECT_EQ(runtime::bench_bytes(named("col_mean"), DType::f32, {10, 100}), (1000 + 100) * 4);
}

TEST(BenchCases, RowCasesStartWithADecodingRow) {
  for (const char* name : {"softmax", "add_rmsnorm", "layer_norm"})
    EXPECT_EQ(named(name).sizes.front(), (BenchSize{1, 4096})) << name;
}

TEST(BenchCases, MiddleAndMultiAxisSumsReduceABatchOfEight) {
  ir::Graph middle = runtime::bench_graph(named("middle_axis_sum"), DType::f32, {300, 7});
  EXPECT_EQ(input_types(middle), (std::vector<TensorType>{{DType::f32, {8, 300, 7}}}));
  EXPECT_EQ(output_types(middle), (std::vector<TensorType>{{DType::f32, {8, 7}}}));
  ir::Graph multi = runtime::bench_graph(named("multi_axis_sum"), DType::f32, {300, 7});
  EXPECT_EQ(output_types(multi), (std::vector<TensorType>{{DType::f32, {300}}}));
  EXPECT_EQ(runtime::bench_bytes(named("middle_axis_sum"), DType::f32, {10, 100}), 8 * (1000 + 100) * 4);
  EXPECT_EQ(runtime::bench_bytes(named("multi_axis_sum"), DType::f32, {10, 100}), (8 * 1000 + 10) * 4);
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
  for (const auto& c : runtime::bench_cases())
    for (BenchSize s : {small_size(c), runtime::is_quant_case(c)               ? BenchSize::gemm(3, 7, 128)
                                       : runtime::is_fp8_case(c)                 ? BenchSize::gemm(5, 6, 40)
                                       : c.form == runtime::SizeForm::Gemm      ? BenchSize::batched_gemm(3, 6, 40, 9)
                                       : c.form == runtime::SizeForm::Attention ? BenchSize::attention(1, 3, 3, 5, 5, 32, c.name == "attention_causal")
                                                                                : BenchSize{7, 3}}) {
      ir::Graph g = runtime::bench_graph(c, c.dtypes[0], s);
      int64_t bytes = 0;
      for (const TensorType& t : input_types(g)) bytes += t.bytes();
      for (const TensorType& t : output_types(g)) bytes += t.bytes();
      EXPECT_EQ(runtime::bench_bytes(c, c.dtypes[0], s), bytes) << c.name << " " << s.str();
    }
}

TEST(BenchCases, MemoryBoundCasesCountNoFlops) {
  for (const auto& c : runtime::bench_cases()) {
    if (c.form == runtime::SizeForm::Matrix) {
      EXPECT_EQ(runtime::bench_flops(c, c.dtypes[0], {6, 40}), 0) << c.name;
    }
  }
}

TEST(BenchCases, GemmFlopsAreTwoBMNK) {
  EXPECT_EQ(runtime::bench_flops(named("gemm"), DType::f16, BenchSize::gemm(4096, 4096, 4096)),
            2LL * 4096 * 4096 * 4096);
  EXPECT_EQ(runtime::bench_flops(named("gemm"), DType::bf16, BenchSize::gemm(16, 8192, 8192)), 2LL * 16 * 8192 * 8192);
  EXPECT_EQ(runtime::bench_flops(named("gemm_batched"), DType::f16, BenchSize::batched_gemm(32, 1024, 1024, 1024)),
            2LL * 32 * 1024 * 1024 * 1024);
  // The epilogue's bias and GELU count as no flops.
  EXPECT_EQ(runtime::bench_flops(named("gemm_bias_gelu"), DType::f16, BenchSize::gemm(5, 7, 3)), 2 * 5 * 7 * 3);
}

TEST(BenchCases, GemmBytesCountABCAndBiasOnce) {
  EXPECT_EQ(runtime::bench_bytes(named("gemm"), DType::f16, BenchSize::gemm(4093, 4099, 4097)),
            (4093LL * 4097 + 4097LL * 4099 + 4093LL * 4099) * 2);
  EXPECT_EQ(runtime::bench_bytes(named("gemm_batched"), DType::f16, BenchSize::batched_gemm(32, 1024, 1024, 1024)),
            32LL * 3 * 1024 * 1024 * 2);
  EXPECT_EQ(runtime::bench_bytes(named("gemm_bias_gelu"), DType::f16, BenchSize::gemm(4096, 4096, 4096)),
            (3LL * 4096 * 4096 + 4096) * 2);
}

TEST(BenchCases, GemmDefaults) {
  EXPECT_EQ(named("gemm").dtypes, (std::vector<DType>{DType::f16, DType::bf16}));
  EXPECT_EQ(named("gemm").sizes,
            (std::vector<BenchSize>{BenchSize::gemm(4096, 4096, 4096), BenchSize::gemm(8192, 8192, 8192),
                                    BenchSize::gemm(4093, 4099, 4097), BenchSize::gemm(16, 8192, 8192)}));
  EXPECT_EQ(named("gemm_batched").sizes, (std::vector<BenchSize>{BenchSize::batched_gemm(32, 1024, 1024, 1024)}));
  EXPECT_EQ(named("gemm_batched").dtypes, (std::vector<DType>{DType::f16}));
  EXPECT_EQ(named("gemm_bias_gelu").sizes, (std::vector<BenchSize>{BenchSize::gemm(4096, 4096, 4096)}));
}

TEST(BenchCases, QuantCasesReadPackedWeightsAndTheirScales) {
  ir::Graph g = runtime::bench_graph(named("quant_w4g128"), DType::bf16, BenchSize::gemm(1, 8192, 8192));
  EXPECT_EQ(input_types(g), (std::vector<TensorType>{{DType::bf16, {1, 8192}}, {DType::i4, {8192, 8192}},
                                                     {DType::bf16, {8192, 64}}}));
  // 4-bit weights are a quarter of the bf16 bytes; scales, activations and output add a little.
  EXPECT_EQ(runtime::bench_bytes(named("quant_w4g128"), DType::bf16, BenchSize::gemm(1, 8192, 8192)),
            8192LL * 2 + 8192LL * 8192 / 2 + 8192LL * 64 * 2 + 8192LL * 2);
  EXPECT_EQ(runtime::bench_bytes(named("quant_w8"), DType::bf16, BenchSize::gemm(16, 4096, 1024)),
            16LL * 1024 * 2 + 4096LL * 1024 + 4096LL * 2 + 16LL * 4096 * 2);
  EXPECT_EQ(runtime::bench_flops(named("quant_w8"), DType::bf16, BenchSize::gemm(16, 4096, 1024)),
            2LL * 16 * 4096 * 1024);
  EXPECT_THROW(runtime::bench_graph(named("quant_w4g128"), DType::bf16, BenchSize::gemm(1, 64, 100)), Error);
  EXPECT_THROW(runtime::bench_graph(named("quant_w4g128"), DType::bf16, BenchSize::batched_gemm(2, 1, 64, 128)), Error);
}

TEST(BenchCases, GemmTakesRowMajorAAndB) {
  ir::Graph g = runtime::bench_graph(named("gemm"), DType::bf16, BenchSize::gemm(5, 7, 3));
  EXPECT_EQ(g.name(), "gemm_bf16_5x7x3");
  EXPECT_EQ(input_types(g), (std::vector<TensorType>{{DType::bf16, {5, 3}}, {DType::bf16, {3, 7}}}));
  EXPECT_EQ(output_types(g), (std::vector<TensorType>{{DType::bf16, {5, 7}}}));
  const ir::Node* mm = g.outputs()[0]->producer;
  ASSERT_EQ(mm->op, ir::OpKind::Matmul);
  EXPECT_FALSE(mm->attrs.get_bool("transpose_a"));
  EXPECT_FALSE(mm->attrs.get_bool("transpose_b"));
}

TEST(BenchCases, BatchedGemmBatchesBothOperands) {
  ir::Graph g = runtime::bench_graph(named("gemm_batched"), DType::f16, BenchSize::batched_gemm(4, 5, 7, 3));
  EXPECT_EQ(input_types(g), (std::vector<TensorType>{{DType::f16, {4, 5, 3}}, {DType::f16, {4, 3, 7}}}));
  EXPECT_EQ(output_types(g), (std::vector<TensorType>{{DType::f16, {4, 5, 7}}}));
}

TEST(BenchCases, GemmBiasGeluIsTanhGeluOfTheProductPlusBias) {
  ir::Graph g = runtime::bench_graph(named("gemm_bias_gelu"), DType::f16, BenchSize::gemm(5, 7, 3));
  EXPECT_EQ(input_types(g), (std::vector<TensorType>{{DType::f16, {5, 3}}, {DType::f16, {3, 7}}, {DType::f16, {7}}}));
  const ir::Node* gelu = g.outputs()[0]->producer;
  ASSERT_EQ(gelu->op, ir::OpKind::Gelu);
  EXPECT_EQ(gelu->attrs.get_string("approximate"), "tanh");
  const ir::Node* add = gelu->operands[0]->producer;
  ASSERT_EQ(add->op, ir::OpKind::Add);
  EXPECT_EQ(add->operands[0]->producer->op, ir::OpKind::Matmul);
  EXPECT_EQ(add->operands[1], g.inputs()[2]);
}

TEST(BenchCases, SizesOfTheOtherFormAreRefused) {
  EXPECT_THROW(runtime::bench_graph(named("gemm"), DType::f16, {64, 64}), Error);
  try {
    runtime::check_size_form(named("softmax"), BenchSize::gemm(64, 64, 64));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("benchmark case softmax takes sizes RxC, not 64x64x64"), std::string::npos)
        << e.what();
  }
  EXPECT_TRUE(named("gemm").takes(BenchSize::batched_gemm(2, 3, 4, 5)));
  EXPECT_FALSE(named("layer_norm").takes(BenchSize::gemm(3, 4, 5)));
}

TEST(BenchCases, UnknownCaseNamesTheKnownOnes) {
  try {
    runtime::find_bench_case("softmx");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no benchmark case named 'softmx'; known: gelu_chain, swiglu, mul_add, softmax"),
              std::string::npos)
        << e.what();
  }
}

TEST(BenchCases, ParsesSizes) {
  EXPECT_EQ(runtime::parse_bench_sizes("8192x8192,1x3"), (std::vector<BenchSize>{{8192, 8192}, {1, 3}}));
}

TEST(BenchCases, ParsesGemmSizes) {
  EXPECT_EQ(runtime::parse_bench_sizes("4093x4099x4097,32x1024x512x256"),
            (std::vector<BenchSize>{BenchSize::gemm(4093, 4099, 4097), BenchSize::batched_gemm(32, 1024, 512, 256)}));
  const BenchSize s = runtime::parse_bench_sizes("16x8192x4096")[0];
  EXPECT_EQ(s.rows, 16);
  EXPECT_EQ(s.cols, 8192);
  EXPECT_EQ(s.depth, 4096);
  EXPECT_EQ(s.batches(), 1);
}

TEST(BenchCases, SizesPrintBackInTheirOwnForm) {
  for (const char* text : {"8192x8192", "4096x4096x4096", "32x1024x1024x1024", "1x2x3x4"})
    EXPECT_EQ(runtime::parse_bench_sizes(text)[0].str(), text);
  EXPECT_EQ(BenchSize::batched_gemm(2, 3, 4, 5).dims(), (std::vector<int64_t>{2, 3, 4, 5}));
}

TEST(BenchCases, RejectsMalformedSizes) {
  for (const char* bad : {"", "8192", "8x", "x8", "0x5", "4x-2", "4x5,", "4x5y", "4 x5", "4x5x", "4xx5", "1x2x3x4x5x6",
                          "4x0x5", "4x5x+6", "0x4x5x6"})
    EXPECT_THROW(runtime::parse_bench_sizes(bad), Error) << "'" << bad << "'";
}

TEST(BenchCases, AMalformedSizeSaysWhatIsExpected) {
  try {
    runtime::parse_bench_sizes("64x64,4x5x");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("bad size '4x5x' in '64x64,4x5x': expected RxC, MxNxK, BxMxNxK or an attention size"),
              std::string::npos)
        << e.what();
  }
}

TEST(BenchCases, RejectsIntegerDtypes) {
  EXPECT_THROW(runtime::bench_graph(named("softmax"), DType::i32, {4, 4}), Error);
}

}  // namespace
}  // namespace kiln

namespace kiln {
namespace {

// The memory-bound cases say what part of their bytes they write (their outputs); the
// GEMM and attention cases, placed under the compute roof, do not.
TEST(BenchCases, MemoryBoundCasesSayWhatTheyWrite) {
  using runtime::bench_written_bytes;
  using runtime::find_bench_case;
  using runtime::BenchSize;
  EXPECT_EQ(bench_written_bytes(find_bench_case("swiglu"), DType::bf16, BenchSize{4, 6}), 4 * 6 * 2);
  EXPECT_EQ(bench_written_bytes(find_bench_case("add_rmsnorm"), DType::f16, BenchSize{4, 6}), 2 * 4 * 6 * 2);
  EXPECT_EQ(bench_written_bytes(find_bench_case("col_mean"), DType::f32, BenchSize{40, 6}), 6 * 4);
  EXPECT_EQ(bench_written_bytes(find_bench_case("multi_axis_sum"), DType::f32, BenchSize{40, 6}), 40 * 4);
  EXPECT_EQ(bench_written_bytes(find_bench_case("middle_axis_sum"), DType::f32, BenchSize{40, 6}),
            runtime::kReduceBenchBatch * 6 * 4);
  EXPECT_FALSE(bench_written_bytes(find_bench_case("gemm"), DType::f16, BenchSize::gemm(16, 16, 16)));
  // Written bytes are part of the bytes moved.
  for (const runtime::BenchCase& c : runtime::bench_cases()) {
    if (c.form != runtime::SizeForm::Matrix) continue;
    for (const BenchSize& s : c.sizes) {
      const auto w = bench_written_bytes(c, c.dtypes.front(), s);
      ASSERT_TRUE(w) << c.name;
      EXPECT_GT(*w, 0) << c.name;
      EXPECT_LT(*w, runtime::bench_bytes(c, c.dtypes.front(), s)) << c.name;
    }
  }
}

}  // namespace
}  // namespace kiln
