// A matmul of the reference computed on the GPU, for products too large for the CPU
// interpreter (4096^3 takes it many seconds, 8192^3 minutes). The kernel is plain on
// purpose, so that it is easy to trust: shared-memory tiles of 64 x 64 outputs, 4 x 4 of
// them per thread, fp32 CUDA-core arithmetic (no Tensor Cores), every operand layout
// read through strides (transpose_a, transpose_b, broadcast batch dims), any M, N, K.
//
// Its error: f16 and bf16 elements and their products are exact in fp32, so only the
// sums round. Each tile of 32 products is summed on its own (fp32 FMAs) and added to
// the running sum with a compensated (Kahan) addition, so an output's error is about
// that of one 32-term fp32 sum, ~1e-7 relative whatever K: far inside the f16/bf16
// bound of 1e-2 and the f32 bound matmul_rel_l2_bound gives. The result is rounded to
// the matmul's dtype the way the interpreter rounds (to fp32, then to 16 bits,
// round-to-nearest-even).
#pragma once
#include <string>

#include "ir/graph.h"
#include "ir/tensor.h"

namespace kiln::runtime {

inline constexpr const char* kReferenceMatmulEntry = "kiln_reference_matmul";

// The kernel's CUDA source for operands of dtype `t` (f16, bf16 or f32).
std::string reference_matmul_source(DType t);

// The product of `matmul` (a matmul node) for operand values `a` and `b`, on the GPU,
// rounded to the node's result dtype. Throws kiln::Error without a GPU, for a node
// that is no matmul or operands of other types than the node's.
HostTensor gpu_matmul(const ir::Node& matmul, const HostTensor& a, const HostTensor& b);

}  // namespace kiln::runtime
