// Long graphs: a chain of tens of thousands of element-wise ops goes through every
// pass, lowering, codegen and the interpreter without deep recursion, and fusion
// splits a long chain into kernels of at most kMaxFusedOps element-wise ops (NVRTC's
// time grows with a kernel's body).
#include <gtest/gtest.h>

#include <algorithm>

#include "codegen/emit.h"
#include "ir/interpreter.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "passes/fusion_limits.h"
#include "passes/lower.h"
#include "passes/pass_manager.h"
#include "runtime/program.h"

namespace kiln {
namespace {

// x -> exp -> add x -> exp -> add x ... (`ops` element-wise ops), then `tail` (if any).
ir::Graph chain(int ops, const Shape& shape = {256}, std::optional<ir::OpKind> tail = std::nullopt) {
  ir::Graph g("chain");
  ir::Value* x = g.add_input("x", {DType::f32, shape});
  ir::Value* v = x;
  for (int i = 0; i < ops; ++i) v = i % 2 == 0 ? g.add(ir::OpKind::Exp, {v}) : g.add(ir::OpKind::Add, {v, x});
  if (tail) {
    ir::Attrs a;
    a.set("axis", std::vector<int64_t>{-1});
    v = g.add(*tail, {v}, a);
  }
  g.add_output(v);
  return g;
}

passes::Plan compiled(ir::Graph& g) {
  passes::PassManager(runtime::kCompilePipeline).run(g);
  return passes::lower(g);
}

int element_wise_ops(const ir::Kernel& k) {
  return static_cast<int>(std::count_if(k.body.begin(), k.body.end(),
                                        [](const ir::ScalarOp& op) { return op.kind == ir::ScalarKind::Op; }));
}

TEST(DeepGraph, ThirtyThousandOpChainCompilesToCuda) {
  ir::Graph g = chain(30000);
  passes::Plan plan = compiled(g);
  ASSERT_FALSE(plan.kernels.empty());
  int total = 0;
  for (const ir::Kernel& k : plan.kernels) {
    EXPECT_LE(element_wise_ops(k), passes::kMaxFusedOps) << k.name;
    total += element_wise_ops(k);
    EXPECT_FALSE(codegen::emit_cuda(k).empty());
  }
  EXPECT_EQ(total, 30000);  // each op computed once: the cuts are written, not recomputed
}

TEST(DeepGraph, ThirtyThousandOpChainPrintsParsesAndEvaluates) {
  ir::Graph g = chain(30000, {4});
  ir::Graph again = ir::parse(ir::print(g));
  EXPECT_EQ(ir::print(again), ir::print(g));
  std::vector<HostTensor> out = ir::evaluate(g, ir::random_inputs(g, 1));
  EXPECT_EQ(out.size(), 1u);
}

TEST(DeepGraph, LongPrologueOfAReductionIsSplitToo) {
  ir::Graph g = chain(20000, {8, 64}, ir::OpKind::ReduceSum);
  passes::Plan plan = compiled(g);
  ASSERT_FALSE(plan.kernels.empty());
  EXPECT_EQ(plan.kernels.back().kind, ir::KernelKind::RowReduce);
  for (const ir::Kernel& k : plan.kernels) EXPECT_LE(element_wise_ops(k), passes::kMaxFusedOps) << k.name;
}

// A product or a reduction followed by a long chain: the epilogue stops at the cap.
ir::Graph chain_after(ir::OpKind head, int ops) {
  ir::Graph g("after");
  ir::Value* a = g.add_input("a", {DType::f32, {64, 64}});
  ir::Value* v = nullptr;
  ir::Attrs attrs;
  if (head == ir::OpKind::Matmul) {
    v = g.add(head, {a, a});
  } else {
    attrs.set("axis", std::vector<int64_t>{1});
    v = g.add(head, {a}, attrs);
  }
  for (int i = 0; i < ops; ++i) v = i % 2 == 0 ? g.add(ir::OpKind::Exp, {v}) : g.add(ir::OpKind::Mul, {v, v});
  g.add_output(v);
  return g;
}

TEST(DeepGraph, LongEpiloguesOfAProductAndAReductionAreSplit) {
  for (ir::OpKind head : {ir::OpKind::Matmul, ir::OpKind::ReduceSum}) {
    ir::Graph g = chain_after(head, 30000);
    passes::Plan plan = compiled(g);
    EXPECT_EQ(plan.kernels.front().kind, head == ir::OpKind::Matmul ? ir::KernelKind::Gemm : ir::KernelKind::RowReduce);
    for (const ir::Kernel& k : plan.kernels) EXPECT_LE(element_wise_ops(k), passes::kMaxFusedOps) << k.name;
  }
}

TEST(DeepGraph, ChainUpToTheCapIsOneKernel) {
  ir::Graph g = chain(passes::kMaxFusedOps);
  EXPECT_EQ(compiled(g).kernels.size(), 1u);
}

TEST(DeepGraph, ChainPastTheCapSplitsIntoEvenKernels) {
  const int ops = 4 * passes::kMaxFusedOps + 3;
  ir::Graph g = chain(ops);
  passes::Plan plan = compiled(g);
  ASSERT_EQ(plan.kernels.size(), 5u);
  for (size_t i = 0; i + 1 < plan.kernels.size(); ++i)  // the first holds the remainder
    EXPECT_EQ(element_wise_ops(plan.kernels[i + 1]), passes::kMaxFusedOps) << plan.kernels[i + 1].name;
  EXPECT_EQ(element_wise_ops(plan.kernels[0]), 3);
}

}  // namespace
}  // namespace kiln
