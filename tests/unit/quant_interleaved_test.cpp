// Weights in the interleaved layout (passes/dequant_fold.h): `wp: [N / 8, K / E, 8, E]`
// made [N, K] by a transpose and a reshape that the reference reads as written. Packing
// a row-major weight's bytes gives the same product; where the gemv reads it, the whole
// product is one gemv kernel whose addresses take the layout; elsewhere the transpose
// stays a kernel of its own and the result is still the reference's.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "codegen/emit.h"
#include "codegen_test_util.h"
#include "frontend/kiln.h"
#include "ir/interpreter.h"
#include "ir/kernel.h"
#include "ir/printer.h"
#include "ir/tile_config.h"
#include "passes/lower.h"
#include "passes/pass_manager.h"
#include "quant_test_graphs.h"
#include "runtime/nvrtc.h"

namespace kiln {
namespace {

using test::contains;
using test::Quant;
using test::quant_linear;

passes::Plan planned(const ir::Graph& graph) {
  ir::Graph g = graph.clone();
  passes::PassManager("decompose,simplify,cse,dce,fuse", {}).run(g);
  return passes::lower(g);
}

// The packing a user runs on the host, on bytes: the 16-byte pieces of a row-major [N, K]
// weight, [N / 8, 8, K / E, 16], reordered to [N / 8, K / E, 8, 16].
std::vector<std::byte> interleave_bytes(const std::vector<std::byte>& rows, int64_t n, int64_t k, DType weights) {
  const int64_t pieces = k / ir::gemm_piece_elems(weights);
  std::vector<std::byte> out(rows.size());
  for (int64_t blk = 0; blk < n / 8; ++blk)
    for (int64_t r = 0; r < 8; ++r)
      for (int64_t p = 0; p < pieces; ++p)
        std::memcpy(&out[static_cast<size_t>(((blk * pieces + p) * 8 + r) * 16)],
                    &rows[static_cast<size_t>(((blk * 8 + r) * pieces + p) * 16)], 16);
  return out;
}

TEST(QuantInterleaved, PackedBytesGiveTheReferencesProductBitForBit) {
  for (DType weights : {DType::i4, DType::i8}) {
    Quant q{weights, DType::bf16, 3, 24, 128, 64, 2};
    SCOPED_TRACE(dtype_name(weights));
    const kiln::Graph rows_graph = quant_linear(q);
    q.interleaved = true;
    const kiln::Graph packed_graph = quant_linear(q);
    const ir::Graph& rows = rows_graph.ir();
    const ir::Graph& packed = packed_graph.ir();
    std::vector<HostTensor> in = ir::random_inputs(rows, 11);
    std::vector<HostTensor> in_packed = in;
    const TensorType wp = packed.inputs()[1]->type;
    ASSERT_EQ(wp.shape, (Shape{3, 128 / ir::gemm_piece_elems(weights), 8, ir::gemm_piece_elems(weights)}));
    in_packed[1] = HostTensor::from_bytes(wp, interleave_bytes(in[1].to_bytes(), q.n, q.k, weights).data());
    EXPECT_NE(in_packed[1].values, in[1].values);  // the layouts differ element by element
    const std::vector<HostTensor> want = ir::evaluate(rows, in);
    const std::vector<HostTensor> got = ir::evaluate(packed, in_packed);
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].values, want[0].values);
  }
}

TEST(QuantInterleaved, TheProductIsOneGemvKernelThatAddressesTheLayout) {
  for (DType weights : {DType::i4, DType::i8})
    for (int64_t m : {1, 5, 16})
      for (int64_t n : {256, 200}) {  // whole column tiles, and a clamped last tile
        Quant q{weights, DType::bf16, m, n, 512, 128, m == 5 ? 2 : 0};
        q.interleaved = true;
        SCOPED_TRACE(fmt::format("{} m {} n {}", dtype_name(weights), m, n));
        const passes::Plan p = planned(quant_linear(q).ir());
        ASSERT_EQ(p.kernels.size(), 1u) << ir::print(p.kernels.back());
        const ir::Kernel& k = p.kernels[0];
        EXPECT_EQ(k.config.schedule, ir::kGemv);
        EXPECT_EQ(k.gemm.b.dequant.interleave, 8);
        const std::string text = ir::print(k);
        EXPECT_TRUE(contains(text, "b %wp ")) << text;
        EXPECT_TRUE(contains(text, "interleaved by 8 rows")) << text;
        const std::string cuda = codegen::emit_cuda(k);
        EXPECT_TRUE(contains(cuda, "512 consecutive bytes")) << cuda;
        EXPECT_TRUE(contains(cuda, weights == DType::i4 ? " << 2)" : " << 3)")) << cuda;
        test::expect_compiles(p.kernels, "interleaved");
      }
}

// A spread of the gemv's candidates (rings, unrolls, splits, narrow tiles) compiles; no
// other schedule is offered.
TEST(QuantInterleaved, EveryCandidateIsAGemvAndASpreadCompiles) {
  for (DType weights : {DType::i4, DType::i8}) {
    Quant q{weights, DType::f16, 4, 200, 2048, 128, 1};
    q.interleaved = true;
    const ir::Kernel k = planned(quant_linear(q).ir()).kernels.at(0);
    int seen = 0;
    for (const ir::TileConfig& c : ir::candidates(k)) {
      EXPECT_EQ(c.schedule, ir::kGemv) << c.str();
      if (++seen % 11 != 1) continue;
      ir::Kernel v = k;
      v.config = c;
      test::expect_compiles({v}, "interleaved_candidate");
    }
    EXPECT_GE(seen, 24);
  }
}

TEST(QuantInterleaved, OtherSchedulesRejectTheLayoutWithTheReason) {
  Quant q{DType::i4, DType::f16, 1, 256, 512, 128, 0};
  q.interleaved = true;
  const ir::Kernel k = planned(quant_linear(q).ir()).kernels.at(0);
  ir::TileConfig c{.schedule = ir::kMmaSync, .bm = 16, .bn = 64, .bk = 64, .warps_m = 1, .warps_n = 4,
                   .stages = 3, .group = 8, .split_k = 1};
  try {
    ir::validate(k, c);
    ADD_FAILURE() << "an mma_sync config was accepted";
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "interleaved layout are read by schedule gemv only")) << e.what();
  }
}

// Where the gemv cannot take every reader (more than 16 rows; the layout's transpose read by
// another op; a group that splits a piece), the transpose and reshape stay: no gemm kernel
// reads the layout, and every kernel compiles.
TEST(QuantInterleaved, ElsewhereTheTransposeStaysAndNothingReadsTheLayout) {
  auto check = [](const ir::Graph& g) {
    const passes::Plan p = planned(g);
    EXPECT_GT(p.kernels.size(), 1u);
    for (const ir::Kernel& k : p.kernels)
      if (k.kind == ir::KernelKind::Gemm) {
        EXPECT_EQ(k.gemm.b.dequant.interleave, 0) << ir::print(k);
      }
    test::expect_compiles(p.kernels, "interleaved_fallback");
  };
  Quant rows{DType::i4, DType::f16, 20, 64, 256, 128, 0};
  rows.interleaved = true;
  check(quant_linear(rows).ir());
  Quant small_group{DType::i4, DType::f16, 2, 64, 256, 16, 0};
  small_group.interleaved = true;
  check(quant_linear(small_group).ir());
  kiln::Graph g("shared");
  auto x = g.input("x", f16, {2, 128});
  auto wp = g.input("wp", i8, {2, 8, 8, 16});
  auto t = kiln::transpose(wp, {0, 2, 1, 3});
  auto wd = kiln::dequant(kiln::reshape(t, {16, 128}), g.input("s", f16, {16, 1}), 128);
  g.output(kiln::matmul(x, wd, false, true));
  g.output(kiln::cast(t, f16));
  check(g.ir());
}

}  // namespace
}  // namespace kiln
