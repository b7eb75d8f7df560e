// The wide reference: a graph evaluated the way Kiln's fused kernels keep precision.
// The reference interpreter rounds every op's result to its dtype; a fused kernel keeps
// f16 / bf16 values in fp32 registers and rounds what it stores (as torch.compile's
// Inductor does by default), so an f16 intermediate such as x * 1e3 * 1e3 / 1e6 that
// overflows to inf per op stays finite on the GPU. kiln-difftest uses this reference
// as a second opinion where the per-op one disagrees with the GPU (judge.h).
//
// It is a rewrite of the graph, evaluated by the plain interpreter: every computed
// f16 / bf16 value becomes f32 (its f16 / bf16 operands cast to f32 first, exact), and a
// cast back to the dtype (rounding as the kernel's store does) appears where the graph's
// outputs leave it. It keeps the roundings that the kernels do in registers
// (codegen/scalar_emit.h, codegen/gemm_epilogue.cpp): a cast and a compare read their
// operand rounded to its dtype and a cast rounds its result; a matmul reads operands of
// their dtype (tensor cores take f16 / bf16) and keeps its fp32 sums wide;
// dequant and attention read and give values of their dtypes (their kernels round the
// same way). Constants and iotas are rounded to their dtype in both.
//
// A value that a kernel stores for the next kernel is rounded on the GPU but wide here:
// the GPU sits between the per-op reference and this one, at the per-op end for values
// that cross kernels and at this end inside a kernel. (One rounding the other way: an
// attention that `fuse` finds in primitives keeps its scores in fp32, where both
// references round the score product to its dtype.)
#pragma once
#include <vector>

#include "ir/graph.h"
#include "ir/tensor.h"

namespace kiln::fuzz {

struct WideGraph {
  ir::Graph graph;   // g's inputs and output types; intermediates held at f32
  int widened = 0;   // values of g computed at f32 instead of f16 / bf16 (0: g itself)
};
WideGraph wide_graph(const ir::Graph& g);

// The outputs of `g` on `inputs` (in the order of g.inputs()) under the wide semantics.
std::vector<HostTensor> wide_reference(const ir::Graph& g, const std::vector<HostTensor>& inputs);

}  // namespace kiln::fuzz
