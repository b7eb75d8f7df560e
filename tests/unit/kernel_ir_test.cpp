// The kernel IR: lowering fused groups to kernels (text, index maps, buffer plan,
// errors), tile configs (heuristic, legality, search space) and the tile pass.
#include <gtest/gtest.h>

#include <algorithm>

#include "ir/error.h"
#include "ir/kernel.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "passes/lower.h"
#include "passes/pass.h"

namespace kiln {
namespace {

ir::Graph fused(const std::string& text) {
  ir::Graph g = ir::parse(text, "kernel_ir_test");
  passes::create_pass("fuse")->run(g);
  return g;
}

ir::Kernel kernel_of(const std::string& text) {
  passes::Plan plan = passes::lower(fused(text));
  EXPECT_EQ(plan.kernels.size(), 1u);
  return plan.kernels.at(0);
}

std::string lowering_error(const ir::Graph& g) {
  try {
    passes::lower(g);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

const ir::KernelArg& arg_named(const ir::Kernel& k, const std::string& name) {
  auto it = std::find_if(k.args.begin(), k.args.end(), [&](const ir::KernelArg& a) { return a.name == name; });
  EXPECT_NE(it, k.args.end()) << name;
  return *it;
}

// ---- lowering and the kernel's text ----

TEST(KernelIR, FusedChainPrintsAsAKernel) {
  ir::Kernel k = kernel_of(R"(func @chain(%x: f16[64,256], %s: f16[256], %r: f16[64,1]) -> (f16[64,256]) {
  %m = mul %x, %s : f16[64,256]
  %g = gelu %m {approximate = "tanh"} : f16[64,256]
  %y = add %g, %r : f16[64,256]
  return %y
})");
  EXPECT_EQ(ir::print(k),
            "kernel @k0 pointwise(%x: f16[64,256], %s: f16[256] strides[0,1], %r: f16[64,1] strides[1,0], "
            "out %y: f16[64,256]) config {threads = 64, elems = 1, vec = 1} {\n"
            "  %0 = load %x : f16\n"
            "  %1 = load %s : f16\n"
            "  %2 = mul %0, %1 : f16\n"
            "  %3 = gelu %2 {approximate = \"tanh\"} : f16\n"
            "  %4 = load %r : f16\n"
            "  %5 = add %3, %4 : f16\n"
            "  store %y, %5\n"
            "}\n");
  EXPECT_EQ(k.fused_nodes, (std::vector<std::string>{"%m = mul %x, %s : f16[64,256]",
                                                      "%g = gelu %m {approximate = \"tanh\"} : f16[64,256]",
                                                      "%y = add %g, %r : f16[64,256]"}));
}

TEST(KernelIR, ConstantsIotaAndCastsPrint) {
  ir::Kernel k = kernel_of(R"(func @src() -> (f32[4,8]) {
  %i = iota {axis = 1} : i32[4,8]
  %f = cast %i : f32[4,8]
  %c = const 0.5 : f32[]
  %y = mul %f, %c : f32[4,8]
  return %y
})");
  EXPECT_EQ(ir::print(k),
            "kernel @k0 pointwise(out %y: f32[4,8]) config {threads = 64, elems = 1, vec = 1} {\n"
            "  %0 = index [0,1] : i32\n"
            "  %1 = cast %0 : f32\n"
            "  %2 = const 0.5 : f32\n"
            "  %3 = mul %1, %2 : f32\n"
            "  store %y, %3\n"
            "}\n");
}

TEST(KernelIR, ConstantsAreRoundedToTheirDtype) {
  ir::Kernel k = kernel_of(R"(func @c(%x: f16[8]) -> (f16[8]) {
  %c = const 0.1 : f16[]
  %y = add %x, %c : f16[8]
  return %y
})");
  auto is_const = [](const ir::ScalarOp& op) { return op.kind == ir::ScalarKind::Const; };
  auto it = std::find_if(k.body.begin(), k.body.end(), is_const);
  ASSERT_NE(it, k.body.end());
  EXPECT_EQ(it->value, 0.0999755859375);  // the f16 nearest to 0.1: 1638 / 16384
}

TEST(KernelIR, BroadcastAlongEachAxisFoldsIntoZeroStrides) {
  ir::Kernel k = kernel_of(R"(func @b(%x: f32[5,6,7], %a: f32[6,7], %b: f32[5,1,7], %c: f32[5,6,1], %s: f32[])
    -> (f32[5,6,7]) {
  %0 = add %x, %a : f32[5,6,7]
  %1 = add %0, %b : f32[5,6,7]
  %2 = add %1, %c : f32[5,6,7]
  %3 = add %2, %s : f32[5,6,7]
  return %3
})");
  EXPECT_EQ(arg_named(k, "x").strides, (std::vector<int64_t>{42, 7, 1}));
  EXPECT_EQ(arg_named(k, "a").strides, (std::vector<int64_t>{0, 7, 1}));
  EXPECT_EQ(arg_named(k, "b").strides, (std::vector<int64_t>{7, 0, 1}));
  EXPECT_EQ(arg_named(k, "c").strides, (std::vector<int64_t>{6, 1, 0}));
  EXPECT_EQ(arg_named(k, "s").strides, (std::vector<int64_t>{0, 0, 0}));
}

TEST(KernelIR, TransposeFoldsIntoPermutedStrides) {
  ir::Kernel k = kernel_of(R"(func @t(%x: f32[5,6,7]) -> (f32[7,5,6]) {
  %t = transpose %x {perm = [2, 0, 1]} : f32[7,5,6]
  %e = exp %t : f32[7,5,6]
  return %e
})");
  // Element (i, j, l) of the result reads x[j, l, i].
  EXPECT_EQ(arg_named(k, "x").strides, (std::vector<int64_t>{1, 42, 7}));
}

TEST(KernelIR, ReshapeOfALoadKeepsTheLinearIndex) {
  ir::Kernel k = kernel_of(R"(func @r(%x: f32[4,15]) -> (f32[3,4,5]) {
  %q = reshape %x : f32[3,4,5]
  %n = neg %q : f32[3,4,5]
  return %n
})");
  EXPECT_EQ(arg_named(k, "x").strides, (std::vector<int64_t>{20, 5, 1}));
  EXPECT_TRUE(ir::is_contiguous(arg_named(k, "x"), k.space()));
}

TEST(KernelIR, ReshapeUnderAComputedValueSplitsItsIndex) {
  // exp is computed at the [3,4,5] index: x[i, j, l] with x's own shape [12,5].
  ir::Kernel k = kernel_of(R"(func @r(%x: f32[12,5], %y: f32[3,4,5]) -> (f32[3,4,5]) {
  %e = exp %x : f32[12,5]
  %q = reshape %e : f32[3,4,5]
  %a = add %q, %y : f32[3,4,5]
  return %a
})");
  EXPECT_EQ(arg_named(k, "x").strides, (std::vector<int64_t>{20, 5, 1}));
}

TEST(KernelIR, ValueReadThroughTwoIndexMapsGetsTwoArguments) {
  ir::Kernel k = kernel_of(R"(func @sq(%x: f32[4,4]) -> (f32[4,4]) {
  %t = transpose %x {perm = [1, 0]} : f32[4,4]
  %a = add %x, %t : f32[4,4]
  return %a
})");
  EXPECT_EQ(arg_named(k, "x").strides, (std::vector<int64_t>{4, 1}));
  EXPECT_EQ(arg_named(k, "x.1").strides, (std::vector<int64_t>{1, 4}));
  EXPECT_EQ(arg_named(k, "x.1").value_id, arg_named(k, "x").value_id);
}

TEST(KernelIR, SizeOneDimsGetZeroStrides) {
  ir::Kernel k = kernel_of(R"(func @one(%x: f32[1,8], %y: f32[1,8]) -> (f32[1,8]) {
  %a = add %x, %y : f32[1,8]
  return %a
})");
  EXPECT_EQ(arg_named(k, "x").strides, (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(arg_named(k, "a").strides, (std::vector<int64_t>{0, 1}));
}

TEST(KernelIR, CollapseMergesDimsEveryArgumentWalksAlike) {
  ir::Kernel same = kernel_of(R"(func @s(%x: f32[4,5,6], %y: f32[4,5,6]) -> (f32[4,5,6]) {
  %a = add %x, %y : f32[4,5,6]
  return %a
})");
  EXPECT_EQ(ir::collapse(same).dims, (Shape{120}));
  ir::Kernel rows = kernel_of(R"(func @r(%x: f32[4,5,6], %w: f32[6]) -> (f32[4,5,6]) {
  %a = add %x, %w : f32[4,5,6]
  return %a
})");
  ir::CollapsedSpace c = ir::collapse(rows);
  EXPECT_EQ(c.dims, (Shape{20, 6}));
  EXPECT_EQ(c.arg_strides[1], (std::vector<int64_t>{0, 1}));  // %w
  ir::Kernel scalar = kernel_of(R"(func @one(%x: f32[1,1]) -> (f32[1,1]) {
  %a = exp %x : f32[1,1]
  return %a
})");
  EXPECT_EQ(ir::collapse(scalar).dims, (Shape{1}));
}

// ---- the buffer plan ----

TEST(Lowering, PlanNamesInputsIntermediatesAndOutputs) {
  ir::Graph g = fused(R"(func @plan(%x: f32[6,10]) -> (f32[60], f32[6,10]) {
  %t = transpose %x {perm = [1, 0]} : f32[10,6]
  %r = reshape %t : f32[60]
  %e = exp %r : f32[60]
  return %e, %x
})");
  passes::Plan plan = passes::lower(g);
  ASSERT_EQ(plan.kernels.size(), 2u);
  ASSERT_EQ(plan.buffers.size(), 3u);
  EXPECT_EQ(plan.buffers[0].name, "x");
  EXPECT_EQ(plan.buffers[0].role, passes::BufferRole::Input);
  EXPECT_EQ(plan.buffers[1].name, "t");
  EXPECT_EQ(plan.buffers[1].role, passes::BufferRole::Intermediate);
  EXPECT_EQ(plan.buffers[2].name, "e");
  EXPECT_EQ(plan.buffers[2].role, passes::BufferRole::Output);
  EXPECT_EQ(plan.inputs, (std::vector<int>{0}));
  EXPECT_EQ(plan.outputs, (std::vector<int>{2, 0}));  // the second output is the input itself
  EXPECT_EQ(plan.buffer_of(plan.kernels[1].args[0].value_id), 1);
}

TEST(Lowering, MiddleAxisReductionIsAColReduceKernel) {
  ir::Graph g = fused(R"(func @red(%x: f32[4,8,2]) -> (f32[4,2]) {
  %s = sum %x {axis = [1]} : f32[4,2]
  return %s
})");
  passes::Plan plan = passes::lower(g);
  ASSERT_EQ(plan.kernels.size(), 1u);
  EXPECT_EQ(plan.kernels[0].kind, ir::KernelKind::ColReduce);
  EXPECT_EQ(plan.kernels[0].reduced_axes, (std::vector<int64_t>{1}));
}

const char* const kI32SumsOfAView = R"(func @red(%x: i32[4,8,2], %w: i32[8,2]) -> (i32[4,2]) {
  %b = broadcast %w : i32[4,8,2]
  %a = add %x, %b : i32[4,8,2]
  %s = sum %a {axis = [1]} : i32[4,2]
  %t = sum %b {axis = [1]} : i32[4,2]
  %u = add %s, %t : i32[4,2]
  return %u
})";

// Unfused, the error names the reduction rather than the view next to it.
TEST(Lowering, ReductionIsNamedRatherThanTheViewItReads) {
  ir::Graph g = ir::parse(kI32SumsOfAView, "kernel_ir_test");
  EXPECT_NE(lowering_error(g).find("sum: it is in no row_reduce or col_reduce kernel"), std::string::npos)
      << lowering_error(g);
}

TEST(Lowering, I32SumsOverAMiddleAxisBecomeAColReduceKernel) {
  passes::Plan plan = passes::lower(fused(kI32SumsOfAView));
  ASSERT_FALSE(plan.kernels.empty());
  for (const ir::Kernel& k : plan.kernels) {
    if (k.kind != ir::KernelKind::Pointwise) {
      EXPECT_EQ(k.kind, ir::KernelKind::ColReduce) << ir::print(k);
    }
  }
}

TEST(Lowering, MatmulBecomesAGemmKernel) {
  ir::Graph g = fused(R"(func @mm(%a: f32[4,8], %b: f32[8,4]) -> (f32[4,4]) {
  %m = matmul %a, %b : f32[4,4]
  return %m
})");
  passes::Plan plan = passes::lower(g);
  ASSERT_EQ(plan.kernels.size(), 1u);
  EXPECT_EQ(plan.kernels[0].kind, ir::KernelKind::Gemm);
}

TEST(Lowering, UngroupedMatmulAsksForTheFusePass) {
  ir::Graph g = ir::parse("func @mm(%a: f32[4,8], %b: f32[8,4]) -> (f32[4,4]) {\n  %m = matmul %a, %b : f32[4,4]\n"
                          "  return %m\n}\n");
  EXPECT_NE(lowering_error(g).find("matmul: it is in no gemm kernel; run the fuse pass"), std::string::npos)
      << lowering_error(g);
}

TEST(Lowering, UnfusedGraphAsksForTheFusePass) {
  ir::Graph g = ir::parse("func @f(%x: f32[4]) -> (f32[4]) {\n  %a = exp %x : f32[4]\n  return %a\n}\n");
  EXPECT_NE(lowering_error(g).find("exp: it is in no kernel; run the fuse pass"), std::string::npos);
}

TEST(Lowering, DeadNodesOutsideGroupsAreIgnored) {
  ir::Graph g = fused(R"(func @dead(%x: f32[4,8]) -> (f32[4,8]) {
  %s = sum %x {axis = [1]} : f32[4]
  %a = exp %x : f32[4,8]
  return %a
})");
  EXPECT_EQ(passes::lower(g).kernels.size(), 1u);
}

TEST(Lowering, HandWrittenGroupWithTwoOutputShapesIsRejected) {
  ir::Graph g = ir::parse(R"(func @bad(%x: f32[8], %y: f32[4,8]) -> (f32[8], f32[4,8]) {
  kernel @k0 pointwise {
    %a = exp %x : f32[8]
    %b = add %a, %y : f32[4,8]
  }
  return %a, %b
})");
  EXPECT_NE(lowering_error(g).find("kernel @k0: outputs %a: f32[8] and %b: f32[4,8] have different shapes"),
            std::string::npos)
      << lowering_error(g);
}

TEST(Lowering, HandWrittenGroupWithAReductionIsRejected) {
  ir::Graph g = ir::parse(R"(func @bad(%x: f32[4,8]) -> (f32[4,1]) {
  kernel @k0 pointwise {
    %a = exp %x : f32[4,8]
    %s = sum %a {axis = [1], keepdim = true} : f32[4,1]
  }
  return %s
})");
  EXPECT_NE(lowering_error(g).find("kernel @k0: sum cannot be part of a pointwise kernel"), std::string::npos)
      << lowering_error(g);
}

TEST(Lowering, HandWrittenRegroupingReshapeIsRejected) {
  ir::Graph g = ir::parse(R"(func @bad(%x: f32[6,10]) -> (f32[60]) {
  kernel @k0 pointwise {
    %t = transpose %x {perm = [1, 0]} : f32[10,6]
    %r = reshape %t : f32[60]
    %e = exp %r : f32[60]
  }
  return %e
})");
  EXPECT_NE(lowering_error(g).find("cannot become index arithmetic; %t must be written to memory"), std::string::npos)
      << lowering_error(g);
}

TEST(Lowering, KernelVerifierRejectsAnOutputStoredTwice) {
  ir::Kernel k = kernel_of("func @f(%x: f32[4]) -> (f32[4]) {\n  %a = exp %x : f32[4]\n  return %a\n}\n");
  k.body.push_back(k.body.back());
  try {
    ir::verify(k);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "kernel @k0: output %a is stored 2 times; it must be stored once");
  }
}

TEST(Lowering, KernelVerifierRejectsAReadPastTheEnd) {
  ir::Kernel k = kernel_of("func @f(%x: f32[4]) -> (f32[4]) {\n  %a = exp %x : f32[4]\n  return %a\n}\n");
  k.args[0].strides = {2};
  try {
    ir::verify(k);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "kernel @k0: argument %x (f32[4]) is read at offset 6, past its end");
  }
}

// ---- tile configs ----

const char* kChainF16 = R"(func @chain(%x: f16[8192,8192], %s: f16[8192], %r: f16[8192,8192]) -> (f16[8192,8192]) {
  %m = mul %x, %s : f16[8192,8192]
  %y = add %m, %r : f16[8192,8192]
  return %y
})";

std::string add_f32(int64_t n) {
  std::string t = "f32[" + std::to_string(n) + "]";
  return "func @add(%x: " + t + ", %y: " + t + ") -> (" + t + ") {\n  %a = add %x, %y : " + t + "\n  return %a\n}\n";
}

TEST(TileConfig, HeuristicUses16ByteVectorsAndFillsTheGpu) {
  ir::Kernel k = kernel_of(kChainF16);
  ir::TileConfig c = ir::heuristic(k);
  EXPECT_EQ(c.vec, 8);  // 8 halves = 16 bytes
  EXPECT_EQ(c.threads, 256);
  EXPECT_EQ(c.elems, 8);  // one vector a thread and input: two full-size inputs
  int64_t blocks = k.numel() / (c.threads * c.elems);
  EXPECT_GE(blocks, 4 * ir::kTargetSMs);
}

TEST(TileConfig, HeuristicVectorWidthFollowsTheWidestElement) {
  ir::TileConfig c = ir::heuristic(kernel_of(add_f32(1 << 24)));
  EXPECT_EQ(c.vec, 4);  // 4 floats = 16 bytes
  EXPECT_EQ(c.elems, 4);
  EXPECT_EQ(c.threads, 256);
}

// One full-size input keeps two vectors of it in flight a thread.
TEST(TileConfig, HeuristicGivesOneInputTwoVectorsAThread) {
  ir::TileConfig c = ir::heuristic(kernel_of(R"(func @e(%x: f16[4096,4096]) -> (f16[4096,4096]) {
  %y = exp %x : f16[4096,4096]
  return %y
})"));
  EXPECT_EQ(c, (ir::TileConfig{256, 16, 8}));
}

TEST(TileConfig, HeuristicShrinksWorkPerThreadForSmallSizes) {
  ir::TileConfig c = ir::heuristic(kernel_of(add_f32(1000003)));
  EXPECT_EQ(c, (ir::TileConfig{256, 4, 4}));  // 977 blocks
  ir::TileConfig small = ir::heuristic(kernel_of(add_f32(65536)));
  EXPECT_EQ(small, (ir::TileConfig{256, 1, 1}));  // one element a thread: all of them in flight at once
  ir::TileConfig tiny = ir::heuristic(kernel_of(add_f32(7)));
  EXPECT_EQ(tiny, (ir::TileConfig{64, 1, 1}));
  ir::TileConfig one = ir::heuristic(kernel_of(add_f32(1)));
  EXPECT_EQ(one, (ir::TileConfig{64, 1, 1}));
}

TEST(TileConfig, HeuristicDropsVectorsWhenAFullSizeArgumentIsTransposed) {
  ir::Kernel k = kernel_of(R"(func @t(%x: f32[512,256], %y: f32[256,512]) -> (f32[256,512]) {
  %t = transpose %x {perm = [1, 0]} : f32[256,512]
  %a = add %t, %y : f32[256,512]
  return %a
})");
  EXPECT_EQ(ir::heuristic(k).vec, 1);
}

TEST(TileConfig, HeuristicIgnoresSmallBroadcastOperands) {
  // A row broadcast whose rows hold whole vectors, and a column broadcast: both fine.
  ir::Kernel k = kernel_of(R"(func @b(%x: f16[4096,1000], %w: f16[1000], %c: f16[4096,1]) -> (f16[4096,1000]) {
  %a = mul %x, %w : f16[4096,1000]
  %b = add %a, %c : f16[4096,1000]
  return %b
})");
  EXPECT_EQ(ir::heuristic(k).vec, 8);
}

TEST(TileConfig, HeuristicIsAlwaysValid) {
  for (const std::string& text : {std::string(kChainF16), add_f32(1), add_f32(7), add_f32(1000003), add_f32(1 << 24)}) {
    ir::Kernel k = kernel_of(text);
    EXPECT_NO_THROW(ir::validate(k, ir::heuristic(k))) << text;
  }
}

std::string validation_error(const ir::Kernel& k, ir::TileConfig c) {
  try {
    ir::validate(k, c);
  } catch (const Error& e) {
    return e.what();
  }
  return "(valid)";
}

TEST(TileConfig, ValidateRejectsBadThreadCounts) {
  ir::Kernel k = kernel_of(add_f32(1024));
  EXPECT_EQ(validation_error(k, {100, 4, 4}),
            "kernel @k0: tile config {threads = 100, elems = 4, vec = 4}: threads = 100: threads per block must be a "
            "multiple of 32 between 32 and 1024");
  EXPECT_NE(validation_error(k, {2048, 4, 4}).find("between 32 and 1024"), std::string::npos);
}

TEST(TileConfig, ValidateRejectsVectorsWiderThan16Bytes) {
  ir::Kernel k = kernel_of(add_f32(1024));
  EXPECT_EQ(validation_error(k, {256, 8, 8}),
            "kernel @k0: tile config {threads = 256, elems = 8, vec = 8}: vec = 8 with 4-byte elements "
            "(%x: f32[1024]) is a 32-byte vector; the widest load is 16 bytes");
}

TEST(TileConfig, ValidateRejectsOddVectorWidths) {
  ir::Kernel k = kernel_of(add_f32(1024));
  EXPECT_NE(validation_error(k, {256, 3, 3}).find("vec = 3: vec must be 1, 2, 4 or 8"), std::string::npos);
}

TEST(TileConfig, ValidateRejectsTooManyElementsPerThread) {
  ir::Kernel k = kernel_of(add_f32(1024));
  EXPECT_NE(validation_error(k, {256, 32, 4}).find("elems = 32: elements per thread must be between 1 and 16"),
            std::string::npos);
}

TEST(TileConfig, ValidateRejectsPartialVectorsPerThread) {
  ir::Kernel k = kernel_of(add_f32(1024));
  EXPECT_NE(validation_error(k, {256, 2, 4}).find("elems = 2 is not a multiple of vec = 4"), std::string::npos);
}

TEST(TileConfig, CandidatesAreTheLegalSpace) {
  ir::Kernel f32 = kernel_of(add_f32(1 << 20));
  std::vector<ir::TileConfig> c = ir::candidates(f32);
  EXPECT_EQ(c.size(), 60u);  // 5 thread counts x (5 + 4 + 3) (elems, vec) pairs with vec <= 4
  for (const ir::TileConfig& t : c) {
    EXPECT_NO_THROW(ir::validate(f32, t)) << t.str();
    EXPECT_LE(t.vec, 4);
  }
  EXPECT_NE(std::find(c.begin(), c.end(), ir::heuristic(f32)), c.end());
  EXPECT_EQ(ir::candidates(kernel_of(kChainF16)).size(), 70u);  // vec 8 joins: + 5 x 2
}

TEST(TileConfig, PrintsAndRoundTripsThroughAttributes) {
  ir::TileConfig c{256, 8, 8};
  EXPECT_EQ(c.str(), "{threads = 256, elems = 8, vec = 8}");
  EXPECT_EQ(ir::TileConfig::from_attrs(c.to_attrs()), c);
  EXPECT_EQ(ir::TileConfig{}.str(), "{}");
}

TEST(TileConfig, UnknownAttributeIsAnError) {
  ir::Attrs a;
  a.set("bq", int64_t{64});
  try {
    ir::TileConfig::from_attrs(a);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "tile config: unknown field 'bq' (known: threads, elems, vec, row_threads, rows, stream, "
                 "shared_elems, cluster, cols, k_threads, k_split, schedule, bm, bn, bk, warps_m, warps_n, stages, "
                 "group, split_k, handoff, br, bc, warps)");
  }
}

// ---- the tile pass ----

TEST(TilePass, StoresTheHeuristicConfigOnEachGroup) {
  ir::Graph g = fused(kChainF16);
  EXPECT_TRUE(passes::create_pass("tile")->run(g));
  ASSERT_EQ(g.groups().size(), 1u);
  EXPECT_EQ(ir::TileConfig::from_attrs(g.groups()[0].tile), (ir::TileConfig{256, 8, 8}));
  EXPECT_FALSE(passes::create_pass("tile")->run(g));  // already tiled
}

TEST(TilePass, KeepsAPinnedConfigAndLoweringUsesIt) {
  ir::Graph g = fused(kChainF16);
  g.group(0).tile = ir::TileConfig{128, 4, 2}.to_attrs();
  EXPECT_FALSE(passes::create_pass("tile")->run(g));
  EXPECT_EQ(passes::lower(g).kernels[0].config, (ir::TileConfig{128, 4, 2}));
}

TEST(TilePass, RejectsAnIllegalPinnedConfig) {
  ir::Graph g = fused(kChainF16);
  g.group(0).tile = ir::TileConfig{128, 4, 16}.to_attrs();
  try {
    passes::create_pass("tile")->run(g);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("vec = 16: vec must be 1, 2, 4 or 8"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace kiln
