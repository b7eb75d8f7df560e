// Integer reductions in the row_reduce and col_reduce kernels. An i32 sum accumulates
// exactly in 64 bits and saturates to the i32 range once, at the end; i32 max and min
// stay in 32 bits (ir/ops.def: the reference computes the same). Integer addition is
// associative, so any order of threads and blocks gives the reference's bits. Shared
// memory and split partials hold an integer state as 64 bits, apart from the fp32
// state of the float reductions of the same kernel.
#pragma once
#include <string>
#include <string_view>

#include "ir/kernel.h"

namespace kiln::codegen {

// Whether body op `op` is a Reduce of integer (i32) values.
bool is_integer_reduce(const ir::ScalarOp& op);

// The accumulator's register type: long long for a sum, int for max and min.
std::string_view integer_accumulator(ir::OpKind op);
// The empty accumulator: 0, or the i32 bound that max / min start from.
std::string integer_identity(ir::OpKind op);
// acc combined with one more value v (either may be a wider or narrower integer).
std::string integer_combine(ir::OpKind op, const std::string& acc, const std::string& v);
// The i32 result of a finished accumulator.
std::string integer_result(ir::OpKind op, const std::string& acc);
// The suffix of the helpers that combine accumulators across threads: kiln_warp_<it>,
// kiln_block_<it>, kiln_cluster_<it> for "isum", "imax", "imin".
std::string integer_combiner(ir::OpKind op);

// The definitions of the integer-reduction device helpers that `code` calls; they call
// kiln_cluster_sync, which helper_definitions supplies.
std::string integer_reduce_helpers(const std::string& code);

}  // namespace kiln::codegen
