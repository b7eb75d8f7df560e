// Where a dequant runs. Integer weights feed matrix products, and dequantised weights
// should never be written: a dequant whose every reader is a matmul that takes it as a
// K-contiguous B operand (`matmul(x, dequant(w, s), transpose_b = true)`) folds into
// that gemm kernel's operand load (fuse_gemm). Any other dequant is expanded by
// `decompose` into casts, a subtract and a multiply over [..., K / group, group], which
// pointwise kernels run.
//
// The interleaved layout. Decoding's gemv reads 8 weight rows at once, 16 bytes of each
// a lane; stored [N, K], a warp's load touches 8 rows K apart. A graph may instead take
// the weight as `%wp: i4[N / 8, K / 32, 8, 32]` (i8: `[N / 8, K / 16, 8, 16]`), the
// 16-byte pieces of 8 rows side by side, and write the layout out:
//
//   %t = transpose %wp {perm = [0, 2, 1, 3]}
//   %w = reshape %t : i4[N, K]
//   %wd = dequant %w, %s {group = ...}
//
// The reference reads that as written (packing is the inverse transpose of the bytes on
// the host). Where the gemv takes every reader, the transpose and reshape fold into its
// addresses (ir::GemmDequant::interleave) and each warp load covers 512 consecutive bytes.
#pragma once
#include "ir/graph.h"

namespace kiln::passes {

// The graph input `%wp` when `w` is `reshape(transpose(%wp, [0, 2, 1, 3]))` in the
// interleaved layout above ([N / 8, K / E, 8, E] to [N, K], i4 or i8); else nullptr.
const ir::Value* interleaved_weight_source(const ir::Value* w);

// Whether `dequant` folds into the gemm kernels of its readers: its operands are
// graph inputs (or, for the weights, the interleaved layout of one), the weights a
// matrix [N, K] (rank 2, K >= 2), the result f16 or bf16, the group a multiple of 8
// elements or all of K (a gemm loads 8 elements of K at a time), and every reader a
// matmul that reads it as its second operand with transpose_b. An interleaved weight
// folds only where the gemv reads it: every reader a matrix of at most 16 rows of the
// dequant's dtype, the group whole pieces of E elements, and the transpose and reshape
// read by nothing else.
bool dequant_folds_into_matmul(const ir::Graph& g, const ir::Node& dequant);

}  // namespace kiln::passes
