// The kernel IR: one Kernel per fused group, what codegen reads. A kernel has a kind,
// tensor arguments (each input with the affine map by which the kernel indexes it), a
// scalar body (a small SSA list evaluated once per element of the iteration space) and
// a tile config. It prints as text, e.g.
//   kernel @k0 pointwise(%x: f16[64,256], %s: f16[256] strides[0,1], out %y: f16[64,256])
//       config {threads = 256, elems = 8, vec = 8} {
//     %0 = load %x : f16
//     %1 = load %s : f16
//     %2 = mul %0, %1 : f16
//     store %y, %2
//   }
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "ir/attrs.h"
#include "ir/kernel_attention.h"
#include "ir/kernel_gemm.h"
#include "ir/ops.h"
#include "ir/shape.h"
#include "ir/tile_config.h"

namespace kiln::ir {

// Kinds get a row here when their emitter exists.
enum class KernelKind : uint8_t { Pointwise, RowReduce, ColReduce, Gemm, Attention };
// "pointwise", "row_reduce", "col_reduce", "gemm", "attention": as in the graph's kernel blocks.
std::string_view kernel_kind_name(KernelKind k);

// A tensor the kernel reads or writes. The iteration space of a pointwise kernel is
// the shape of its outputs; element `i` of it (a multi-index) reads an input at offset
// sum_d i[d] * strides[d]. Broadcast (stride 0), transpose and reshape all fold into
// these strides. Outputs are written contiguously (row-major strides of the space).
struct KernelArg {
  std::string name;  // the graph value's printed name (unique within the kernel)
  TensorType type;
  bool is_output = false;
  std::vector<int64_t> strides;  // one per iteration dim; 0 on size-1 dims
  int value_id = -1;             // the graph value bound to this argument
};

enum class ScalarKind : uint8_t {
  Load,   // the input `arg` at the current element
  Const,  // `value` (already rounded to `dtype`)
  Index,  // sum_d i[d] * coeffs[d] as `dtype` (iota)
  Op,     // element-wise `op` (cast included) on earlier ids, result `dtype`
  Store,  // output `arg` = operands[0]
  // Row-reduce kernels: `op` (ReduceSum, ReduceMax, ReduceMin, ReduceMean) of
  // operands[0] over the current row. Col-reduce kernels: over the reduced dims, one
  // value per column; always phase 0 (the columns are read once). The result is one value per row. `phase` counts
  // the reductions it waits for: 0 when its operand needs none, else one more than the
  // latest reduction its operand uses (softmax: max is phase 0, the sum of exp(x - max)
  // phase 1). The emitter runs the phases in order over the row.
  Reduce,
  // Gemm kernels: the accumulator at the current output element, as the matmul's
  // value (`dtype`, its result type: the fp32 sum rounded to it). Attention kernels:
  // the scaled product q . k at the current score element, in fp32.
  Acc,
};

struct ScalarOp {
  ScalarKind kind = ScalarKind::Op;
  DType dtype = DType::f32;     // the result's dtype (Store: the stored value's)
  int arg = -1;                 // Load, Store: index into Kernel::args
  double value = 0;             // Const
  std::vector<int64_t> coeffs;  // Index: one per iteration dim
  OpKind op = OpKind::Add;      // Op; Reduce: the reduction (its combiner)
  int phase = 0;                // Reduce
  std::vector<int> operands;    // Op, Store: ids (indices into Kernel::body) of earlier ops
  Attrs attrs;                  // Op: the graph node's attributes (gelu's `approximate`)
};

struct Kernel {
  std::string name;  // the group's name: "k0"; also the CUDA entry point's name
  KernelKind kind = KernelKind::Pointwise;
  std::vector<KernelArg> args;  // the CUDA signature's order: inputs, then outputs
  std::vector<ScalarOp> body;   // SSA: an op's id is its index
  TileConfig config;
  std::vector<std::string> fused_nodes;  // the graph lines it computes, "%1 = add %x, %0 : f32[8]"
  // Row-reduce kernels: the iteration space [rows..., N], the shape of the rows being
  // reduced (N, the reduced axis, is innermost). Outputs are full-size (this shape) or
  // one value per row. Empty for pointwise kernels, whose space is their outputs' shape.
  Shape row_space;
  // Col-reduce kernels: row_space is the space of the reduced operand (its own shape,
  // in memory order) and these are its reduced dims (sorted): any set of them (a column
  // sum, a middle axis, several axes apart, all). Outputs hold one value per kept
  // element (a column), in the kept dims' row-major order.
  std::vector<int64_t> reduced_axes;
  // Gemm kernels: the product (see kernel_gemm.h); the body is its epilogue.
  GemmCore gemm;
  // Attention kernels (see kernel_attention.h): row_space is the score space and the
  // body computes the score.
  AttentionCore attention;

  // Appends an op and returns its id.
  int add(ScalarOp op) {
    body.push_back(std::move(op));
    return static_cast<int>(body.size()) - 1;
  }
  // The iteration space: row_space when set, else the shape every output shares.
  const Shape& space() const;
  int64_t numel() const { return kiln::numel(space()); }
};

// The iteration space with size-1 dims dropped and neighbouring dims merged wherever
// every argument and index walks them as one (as a row-major tensor does): a
// same-shape element-wise kernel has one dim; a row broadcast keeps two. Empty dims
// (a one-element space) become {1}. A row-reduce kernel keeps its last (reduced) dim
// apart, even of size 1, and merges only the row dims: its form is [rows..., N]. A
// col-reduce kernel merges its reduced dims and its kept dims apart, each side at
// least one dim ({1} when it has no element to tell apart): [K..., N...].
// Codegen indexes through this form.
struct CollapsedSpace {
  Shape dims;
  std::vector<std::vector<int64_t>> arg_strides;    // per Kernel::args entry
  std::vector<std::vector<int64_t>> index_coeffs;   // per Index op, in body order
  int reduced_dims = 0;  // col_reduce: the leading dims of `dims` that are reduced (K), the rest kept (N)
};
CollapsedSpace collapse(const Kernel& k);

// Row-reduce kernels: per body op, whether its value is the same for the whole row
// (reductions, constants, loads of per-row arguments, and ops on those only).
std::vector<bool> row_uniform(const Kernel& k);
// Row-reduce kernels: whether input `arg` of the collapsed form `c` belongs to the row,
// so that a thread keeping the row in registers keeps it too: it moves along the row
// and differs between rows (or there is one row). An input every row shares (a norm's
// weight) does not: it is read where used.
bool belongs_to_row(const Kernel& k, const CollapsedSpace& c, int arg);
// Row-reduce kernels: the number of rows and the row length N (numel = rows * N).
int64_t row_count(const Kernel& k);
int64_t row_length(const Kernel& k);
// Row-major strides of a per-row value ([rows..., 1] or [rows...]) over `space`: the
// row-major strides of the leading dims and 0 on the last (and on size-1 dims).
std::vector<int64_t> per_row_strides(const Shape& space);

// Col-reduce kernels: per body op, whether its value is the same along the reduced
// dims (one value per column: reductions, constants, loads of per-column arguments).
std::vector<bool> col_uniform(const Kernel& k);
// Col-reduce kernels: the reduced count K and the column count N (numel = K * N).
int64_t col_reduced_count(const Kernel& k);
int64_t col_count(const Kernel& k);
// Col-reduce kernels: whether a block takes one column and its vectors run along the
// reduced elements: when nothing of size > 1 is kept (a full reduction) or the
// innermost dim of size > 1 is reduced ([K, R], [R1, K, R2]), so that consecutive
// threads read consecutive elements. Otherwise ([R, K], [K1, R, K2]) consecutive
// threads own consecutive columns of the innermost kept dim.
bool col_reads_along_reduced(const Kernel& k);
// Col-reduce kernels: the strides over the space of a per-column value (0 on the
// reduced dims, row-major over the kept ones).
std::vector<int64_t> per_col_strides(const Kernel& k);

// Row-major strides of `space` with 0 on size-1 dims: an argument read with these
// strides is contiguous over the iteration space.
std::vector<int64_t> contiguous_strides(const Shape& space);
bool is_contiguous(const KernelArg& a, const Shape& space);

// Checks the kernel's invariants (ids refer to earlier ops, loads read inputs, every
// output is stored once, strides have the space's rank, outputs share one shape).
// Throws kiln::Error naming the kernel and the op.
void verify(const Kernel& k);

std::string print(const Kernel& k);
// One scalar op of `k` (of its body, or of a gemm operand's prologue) as printed: "%3 = add %1, %2 : f16".
std::string print_scalar_op(const Kernel& k, const ScalarOp& op, size_t id);

}  // namespace kiln::ir
