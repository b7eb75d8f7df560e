// Dequantised-weight products on the GPU against the reference interpreter: i4 and i8
// weights, f16 and bf16 activations, group sizes from 32 to all of K, zero points of the
// scales' type and of the weights' type, decode-sized M on the gemv schedule (every
// candidate through the tuner's check), larger M on dequant_wgmma and mma_sync, odd N and M,
// a fused epilogue, and dequants that are expanded into pointwise kernels.
#include <gtest/gtest.h>

#include "frontend/kiln.h"
#include "gemm_test_util.h"
#include "gpu_test_util.h"
#include "ir/compare.h"
#include "ir/interpreter.h"
#include "ir/printer.h"
#include "../unit/quant_test_graphs.h"
#include "runtime/nvrtc.h"
#include "runtime/program.h"

namespace kiln {
namespace {

using test::Quant;
using test::quant_linear;

// Runs the graph on random inputs (scales near 0.1..1, weights across their range) and
// compares with the reference; returns the schedule of its gemm kernel (0 without one).
int expect_matches_reference(const ir::Graph& g, uint64_t seed = 5) {
  runtime::Program program = runtime::Program::compile(g);
  std::vector<HostTensor> inputs = ir::random_inputs(g, seed);
  std::vector<HostTensor> want = ir::evaluate(g, inputs);
  std::vector<HostTensor> got = program.run(inputs);
  EXPECT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size() && i < want.size(); ++i) {
    Comparison c = compare(got[i], want[i], rel_l2_bound_for(*g.outputs()[i]));
    EXPECT_TRUE(c.passed) << "output " << i << ": " << c.str() << "\n" << ir::print(program.plan().kernels.front());
  }
  for (const ir::Kernel& k : program.plan().kernels)
    if (k.kind == ir::KernelKind::Gemm) return k.config.schedule;
  return 0;
}

TEST(QuantGpu, DecodeRowsOnGemvEveryFormat) {
  KILN_REQUIRE_GPU();
  for (DType act : {DType::f16, DType::bf16})
    for (DType weights : {DType::i4, DType::i8})
      for (int zeros : {0, 1, 2})
        for (int64_t m : {1, 2, 5, 16})
          for (int64_t group : {32, 128}) {
          Quant q{weights, act, m, 200, 512, group, zeros};
          SCOPED_TRACE(fmt::format("{} {} zeros {} m {} group {}", dtype_name(act), dtype_name(weights), zeros, m, group));
          EXPECT_EQ(expect_matches_reference(quant_linear(q).ir()), ir::kGemv);
        }
}

TEST(QuantGpu, GroupSizesFromThirtyTwoToARow) {
  KILN_REQUIRE_GPU();
  for (int64_t group : {32, 64, 128, 1024})
    for (DType weights : {DType::i4, DType::i8})
      for (int64_t m : {1, 3}) {  // one row scales the products' sums, three every weight pair
        Quant q{weights, DType::f16, m, 130, 1024, group, group == 64 ? 1 : 0};
        SCOPED_TRACE(fmt::format("{} group {} m {}", dtype_name(weights), group, m));
        expect_matches_reference(quant_linear(q).ir());
      }
  // A row's one group over K = 1056: the last step of 128 ends inside it, so some lane
  // columns lie past K while the step's scale still applies to the others.
  for (DType weights : {DType::i4, DType::i8})
    for (int64_t m : {1, 4, 16}) {
      Quant q{weights, DType::bf16, m, 130, 1056, 1056, weights == DType::i8 ? 2 : 1};  // i4 zero points pack in twos
      SCOPED_TRACE(fmt::format("{} per row, K 1056, m {}", dtype_name(weights), m));
      expect_matches_reference(quant_linear(q).ir());
    }
}

TEST(QuantGpu, LargerBatchesOnTheirDefaults) {
  KILN_REQUIRE_GPU();
  for (DType weights : {DType::i4, DType::i8})
    for (int zeros : {0, 1, 2}) {
      // An even count of groups a row, so that i4 zero points pack whole bytes: K = 384 in
      // groups of 64 is whole steps of dequant_wgmma (sm_90a); K = 448 in groups of 32 is
      // not for i4, and takes mma_sync.
      for (int64_t k : {384, 448}) {
        Quant q{weights, DType::bf16, 77, 160, k, k == 384 ? 64 : 32, zeros};
        SCOPED_TRACE(fmt::format("{} zeros {} k {}", dtype_name(weights), zeros, k));
        const bool whole_steps = k % (weights == DType::i4 ? 128 : 64) == 0;
        const bool hopper = runtime::default_arch() == "sm_90a";
        EXPECT_EQ(expect_matches_reference(quant_linear(q).ir()), whole_steps && hopper ? ir::kDequantWgmma : ir::kMmaSync);
      }
    }
}

// The weight dequantised in registers as mma.sync's A operand (dequant_mma, any GPU) and
// as wgmma's (dequant_wgmma, sm_90a): every candidate (one to four fragments a warp or
// one or two a warpgroup, 4 to 16 warps, rings of 3 to 8 steps, split K) of odd shapes:
// M not a multiple of 8 (the padded activation rows are zeros; an odd count of n8 tiles),
// N not a multiple of the block's rows (rows past N clamped and dropped), K of 9 steps
// (split slices of unequal length), groups of 32 (four a step: each thread's piece its
// own group) to one a row, and every zero point kind on the packed-pair and fp32 paths.
TEST(QuantGpu, EveryCandidateWithTheWeightInRegistersPassesItsCheck) {
  KILN_REQUIRE_GPU();
  const bool hopper = runtime::default_arch() == "sm_90a";
  const Quant formats[] = {{DType::i4, DType::bf16, 37, 200, 1152, 32, 2},
                           {DType::i4, DType::f16, 64, 136, 1152, 128, 1},
                           {DType::i8, DType::f16, 100, 200, 576, 64, 0},
                           {DType::i8, DType::bf16, 128, 72, 512, 512, 2},
                           {DType::i4, DType::f16, 5, 330, 1024, 1024, 0}};
  for (const Quant& q : formats) {
    SCOPED_TRACE(fmt::format("{} x {} m {} group {} zeros {}", dtype_name(q.act), dtype_name(q.weights), q.m, q.group,
                             q.zeros));
    const runtime::TuneResult r = gpu_test::every_candidate_passes(quant_linear(q).ir());
    int wgmma = 0, mma = 0;
    for (const runtime::Trial& t : r.trials) {
      wgmma += t.config.schedule == ir::kDequantWgmma;
      mma += t.config.schedule == ir::kDequantMma;
    }
    EXPECT_GE(mma, 12);
    if (hopper) {
      EXPECT_GE(wgmma, 12);
    }
  }
}

TEST(QuantGpu, OddShapesAndExpandedDequants) {
  KILN_REQUIRE_GPU();
  // K = 72 with groups of 8: element loads on mma_sync; groups of 2: expanded.
  for (int64_t group : {8, 2, 72}) {
    Quant q{DType::i4, DType::f16, 3, 33, 72, group, 1};
    SCOPED_TRACE(fmt::format("group {}", group));
    expect_matches_reference(quant_linear(q).ir());
  }
  kiln::Graph g("expanded");
  auto w = g.input("w", i4, {7, 36});
  auto s = g.input("s", bf16, {7, 18});
  auto z = g.input("z", i4, {7, 18});
  g.output(kiln::dequant(w, s, z, 2) * 3.0);
  g.output(kiln::cast(kiln::cast(w, f32) * 5.0, i8));
  expect_matches_reference(g.ir());
}

// Packed weights by cp.async on mma_sync: K = 1056 leaves a half step of 64 at the end,
// groups of 96 let split-K slices start inside a group, N = 200 a part tile; the bit
// tricks (i4, i8 into f16) and the fp32 dequant (zero points, i8 into bf16).
TEST(QuantGpu, EveryPackedMmaSyncCandidatePassesItsCheck) {
  KILN_REQUIRE_GPU();
  const Quant formats[] = {{DType::i4, DType::bf16, 40, 200, 1056, 96, 0},
                           {DType::i4, DType::f16, 40, 200, 1056, 96, 1},
                           {DType::i8, DType::f16, 40, 200, 1056, 96, 0},
                           {DType::i8, DType::bf16, 40, 200, 1056, 96, 1}};
  for (const Quant& q : formats) {
    SCOPED_TRACE(fmt::format("{} x {} zeros {}", dtype_name(q.act), dtype_name(q.weights), q.zeros));
    const runtime::TuneResult r = gpu_test::every_candidate_passes(quant_linear(q).ir());
    int packed = 0;
    for (const runtime::Trial& t : r.trials) packed += t.config.schedule == ir::kMmaSync;
    EXPECT_GE(packed, 16);
  }
}

// One and two rows scale each lane's fp32 sums (B's columns split by lane): every
// candidate (unroll 1 to 4 pieces a step, so one to eight groups of 32 a step; rings;
// splits of K) with zero points of the weights' and the scales' type, odd N.
TEST(QuantGpu, EveryGemvCandidateOfOneAndTwoRowsPassesItsCheck) {
  KILN_REQUIRE_GPU();
  const Quant formats[] = {{DType::i4, DType::bf16, 1, 200, 1024, 32, 2},
                           {DType::i4, DType::f16, 2, 200, 1024, 32, 1},
                           {DType::i8, DType::f16, 1, 200, 1024, 32, 2},
                           {DType::i8, DType::bf16, 2, 200, 1024, 32, 1}};
  for (const Quant& q : formats) {
    SCOPED_TRACE(fmt::format("{} x {} m {} zeros {}", dtype_name(q.act), dtype_name(q.weights), q.m, q.zeros));
    gpu_test::every_candidate_passes(quant_linear(q).ir());
  }
}

TEST(QuantGpu, EveryGemvCandidatePassesItsCheck) {
  KILN_REQUIRE_GPU();
  for (DType weights : {DType::i4, DType::i8}) {
    Quant q{weights, DType::f16, 4, 512, 2048, 128, 2};
    gpu_test::every_candidate_passes(quant_linear(q).ir());
  }
}

// An i4 view written out by a pointwise kernel packs two elements a byte: every candidate
// (vectors of 2 to 8 nibbles, a tail where 60 elements do not fill a thread's vectors).
TEST(QuantGpu, I4ViewsWrittenByAKernelMatchTheReference) {
  KILN_REQUIRE_GPU();
  kiln::Graph g("t");
  g.output(kiln::transpose(g.input("w", DType::i4, {6, 10}), {1, 0}));
  gpu_test::every_candidate_passes(g.ir());
  expect_matches_reference(g.ir());
}

// Weights in the interleaved layout (passes/dequant_fold.h) on the gemv: every format at one,
// five and sixteen rows, whole and clamped column tiles, zero points; a spread of candidates
// (rings, splits); and more rows, where the transpose runs as its own kernel.
TEST(QuantGpu, InterleavedWeightsOnTheGemv) {
  KILN_REQUIRE_GPU();
  for (DType act : {DType::f16, DType::bf16})
    for (DType weights : {DType::i4, DType::i8})
      for (int64_t m : {1, 5, 16})
        for (int64_t n : {256, 200}) {
          Quant q{weights, act, m, n, 1024, m == 5 ? 32 : 128, m == 1 ? 0 : m == 5 ? 2 : 1};
          q.interleaved = true;
          SCOPED_TRACE(fmt::format("{} {} m {} n {}", dtype_name(act), dtype_name(weights), m, n));
          EXPECT_EQ(expect_matches_reference(quant_linear(q).ir()), ir::kGemv);
        }
  for (DType weights : {DType::i4, DType::i8}) {
    Quant q{weights, DType::bf16, 2, 200, 2048, 64, 2};
    q.interleaved = true;
    gpu_test::every_candidate_passes(quant_linear(q).ir());
  }
  Quant more{DType::i4, DType::f16, 40, 200, 512, 128, 0};
  more.interleaved = true;
  EXPECT_NE(expect_matches_reference(quant_linear(more).ir()), ir::kGemv);
}

}  // namespace
}  // namespace kiln
