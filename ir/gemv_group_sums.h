// The gemv schedule's i4 path for scale groups of 128 or more: a lane group's piece of K
// (four lanes of 32 elements, aligned to 128) then lies inside one group, so the biased
// nibbles are multiplied as they are, and each group's fp32 sum is corrected once by its
// offset (times the activations' sum over the piece) and scaled once, instead of every
// weight pair being dequantised before its product.
#pragma once

#include "ir/kernel.h"

namespace kiln::ir {

inline bool gemv_sums_groups(const Kernel& k) {
  const GemmDequant& dq = k.gemm.b.dequant;
  return dq.active() && k.args.at(static_cast<size_t>(k.gemm.b.arg)).type.dtype == DType::i4 && dq.group % 128 == 0;
}

}  // namespace kiln::ir
