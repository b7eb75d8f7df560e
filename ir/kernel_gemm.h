// The GEMM kind's part of the kernel IR: the matrix product at the kernel's core.
//
// A gemm kernel computes, for every element (batch..., m, n) of its output space,
//   acc = sum_k A[batch..., m, k] * B[batch..., k, n]
// in fp32, then runs its scalar body (the epilogue) at that element, where an `acc`
// op reads the accumulator as the matmul's value (rounded to the matmul's dtype, as
// the graph types it). The epilogue reads other inputs and stores outputs exactly as a
// pointwise body does over the output space [batch..., M, N].
//
// The operands are kernel arguments whose strides span the logical operand
// [batch..., M, K] (A) or [batch..., K, N] (B), one stride per output dim: a batch dim
// the operand broadcasts over has stride 0 (a weight shared by every batch entry is
// read in place), and the two matrix strides say the layout: K contiguous (stride 1
// along K: A row-major, B stored transposed) or the other dim contiguous. Transposes
// and reshapes of the operands are folded into these strides by lowering. Each operand
// may carry a prologue: element-wise ops (casts, scales) applied to every element it
// loads before the product.
//   kernel @k0 gemm(%a: f16[64,32], %b: f16[32,48], %bias: f16[48] strides[0,1], out %y: f16[64,48])
//       matmul 64x48x32 a %a [K contiguous] b %b [N contiguous] f16 -> f32
//       config {schedule = mma_sync, bm = 64, ...} {
//     %0 = acc : f16
//     %1 = load %bias : f16
//     %2 = add %0, %1 : f16
//     store %y, %2
//   }
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/dtype.h"
#include "ir/shape.h"

namespace kiln::ir {

struct Kernel;
struct ScalarOp;

// A dequantised operand: a weight stored [N, K] (B, K contiguous) as i8 or i4 whose
// element (k, n) is (w[n, k] - zero[n, k / group]) * scale[n, k / group], computed in
// fp32 and rounded to the operand dtype, as the graph's dequant computes it. The scales
// and zero points are kernel arguments of shape [N, K / group] (strides over the
// logical operand [batch..., K, N]: 0 along K, whose index is divided by the group).
struct GemmDequant {
  int scale = -1;  // the Kernel::args entry of the scales; -1: the operand is not dequantised
  int zero = -1;   // of the zero points, or -1
  int64_t group = 0;
  // 0: the weight is stored [N, K]. 8: it is stored [N / 8, K / E, 8, E] (E: the elements of
  // 16 bytes), the 16-byte pieces of 8 rows side by side, so that a gemv warp's loads cover
  // consecutive bytes; the graph says so with a transpose and a reshape (dequant_fold.h).
  int interleave = 0;
  bool active() const { return scale >= 0; }
};

// One operand of the product.
struct GemmOperand {
  int arg = -1;  // the Kernel::args entry it reads
  // Applied to every loaded element: `load` ops of `arg`, then element-wise ops; the
  // last op's value is the operand element (of the product's operand dtype). Empty: the
  // stored element as it is.
  std::vector<ScalarOp> prologue;
  GemmDequant dequant;  // instead of a prologue, for integer weights
};

struct GemmCore {
  Shape batch;  // the output's batch dims (the product's are broadcast to them)
  int64_t m = 0, n = 0, k = 0;
  DType operand_dtype = DType::f16;  // what the products multiply: f16, bf16 or f32
  // f32 operands: multiplied on Tensor Cores after rounding to TF32 (10 mantissa bits)
  // when set; exactly, on CUDA cores, when not.
  bool tf32 = false;
  GemmOperand a, b;
};

// How one operand is stored, read off its argument's strides.
struct GemmLayout {
  bool k_contiguous = true;           // stride 1 along K (else along M for A, N for B)
  int64_t ld = 0;                     // elements between neighbouring rows of the other dim
  std::vector<int64_t> batch_strides; // per output batch dim; 0 where it broadcasts
  int64_t outer = 0;                  // M (A) or N (B): the extent of the non-K dim
};
GemmLayout gemm_layout(const Kernel& k, bool operand_a);
// Whether an operand is one matrix stored as whole rows of K (K contiguous, rows K apart,
// no batch dim it moves with): what the decoding schedules (gemv, dequant_wgmma) stream.
bool gemm_rows_of_k(const Kernel& k, bool operand_a);
// The elements of one 16-byte piece of a stored operand: 32 i4, 16 i8, 8 f16 / bf16. The
// gemv's lanes load whole pieces, and the interleaved layout sets them side by side.
int gemm_piece_elems(DType stored);
// Whether an operand can move from memory to shared memory as 16-byte copies that
// bypass registers (cp.async): it has no prologue, and every 16-byte chunk along its
// contiguous dim starts aligned and lies wholly inside the matrix (the contiguous
// extent, the row stride and the batch strides are multiples of the chunk). Otherwise
// its elements go through registers, one at a time where alignment demands.
bool gemm_operand_async(const Kernel& k, bool operand_a);
// Whether an operand that goes through registers can still load each 16-byte chunk of
// the shared tile (8 f16 / bf16 or 4 f32 elements of the operand) as one aligned
// vector of its stored elements; else it loads them one at a time.
bool gemm_operand_vector_loads(const Kernel& k, bool operand_a);

// The fp8 type an operand is stored in when its prologue only widens it: a load of an
// f8e4m3 or f8e5m2 argument and one cast to the operand dtype. Every fp8 value is an
// f16, bf16 and f32 value, so multiplying the stored bytes gives the same products.
std::optional<DType> gemm_fp8_operand(const Kernel& k, bool operand_a);
// Whether both operands are widened fp8 (any mix of e4m3 and e5m2): the wgmma schedule
// then loads their bytes and multiplies them on the fp8 Tensor Cores, 32 K a product.
bool gemm_fp8_products(const Kernel& k);
// The bytes one element of an operand tile takes in shared memory under the wgmma
// schedule: 1 for fp8 products, else the operand dtype's size.
int gemm_tile_element_bytes(const Kernel& k);

// Whether Hopper's copy engine (TMA) can load an operand's tiles straight into the
// swizzled shared memory that wgmma reads: f16 or bf16 elements with no prologue (or
// fp8 products, whose tiles wgmma reads K-major only), row and batch strides that are
// multiples of 16 bytes (TMA's rule), and at most three batch dims it does not
// broadcast over (a tensor map has five dims). Tails need no alignment: the copy
// engine fills elements past the matrix with zeros.
bool gemm_operand_tma(const Kernel& k, bool operand_a);
// Whether an operand TMA cannot load in place (rows not a multiple of 16 bytes) can
// load from a staged copy instead: f16 or bf16 without a prologue, one matrix (no
// batch dim it does not broadcast over). The runtime copies it into rows padded to 16
// bytes before each launch (what a zero-padded copy costs: one pass over the operand).
bool gemm_operand_stageable(const Kernel& k, bool operand_a);
// The padded row length (elements) of a staged operand's copy.
int64_t gemm_staged_ld(const Kernel& k, bool operand_a);

// Whether argument `arg` belongs to the product's operands (A, B, or a dequantised
// operand's scales and zero points) rather than to the epilogue.
bool gemm_operand_arg(const Kernel& k, int arg);
// Whether a dequantised operand's rows can load as aligned words: 8 elements (4 bytes of
// i4, 8 of i8) at a time, every row starting at a multiple of 8 elements with K too.
bool gemm_dequant_word_loads(const Kernel& k);

// "f16", "bf16", "f32" or "tf32": what the products multiply once the prologues have run.
std::string gemm_compute_name(const GemmCore& g);
// The number of output matrices (the product of the batch dims).
int64_t gemm_batch_count(const GemmCore& g);

// The gemm line of the kernel's text form ("matmul 64x48x32 a %a [K contiguous] ...").
std::string gemm_core_str(const Kernel& k);
// Checks the core's invariants: shapes agree with the output space, the operands are
// inputs read in bounds with one contiguous dim, prologues are well formed.
void verify_gemm(const Kernel& k);

}  // namespace kiln::ir
