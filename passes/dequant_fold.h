// Where a dequant runs. Integer weights feed matrix products, and dequantised weights
// should never be written: a dequant whose every reader is a matmul that takes it as a
// K-contiguous B operand (`matmul(x, dequant(w, s), transpose_b = true)`) folds into
// that gemm kernel's operand load (fuse_gemm). Any other dequant is expanded by
// `decompose` into casts, a subtract and a multiply over [..., K / group, group], which
// pointwise kernels run.
#pragma once
#include "ir/graph.h"

namespace kiln::passes {

// Whether `dequant` folds into the gemm kernels of its readers: its operands are
// graph inputs, the weights a matrix [N, K] (rank 2, K >= 2), the result f16 or bf16, the
// group a multiple of 8 elements or all of K (a gemm loads 8 elements of K at a time),
// and every reader a matmul that reads it as its second operand with transpose_b.
bool dequant_folds_into_matmul(const ir::Graph& g, const ir::Node& dequant);

}  // namespace kiln::passes
