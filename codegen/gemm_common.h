// What the pieces of the gemm emitters share: the batch offset of an argument, the
// zero of a storage type and the first lines of a kernel's header.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "ir/dtype.h"
#include "ir/kernel.h"
#include "ir/shape.h"

namespace kiln::codegen {

// The element offset of batch entry `batch` (a code expression, the linear index over
// `dims`) for an argument with `strides` along those dims, as 64-bit code; "0ll" when
// it does not move with the batch.
std::string batch_offset_code(const Shape& dims, const std::vector<int64_t>& strides, const std::string& batch);

// Two conditions (code) joined by &&; either may be empty (always true).
std::string both_conditions(const std::string& x, const std::string& y);

// A value-initialised (all bits zero) element of dtype `t`'s storage type.
std::string zero_storage(DType t);

// The kernel's pointer parameters ("const __half* __restrict__ in_a", ...), one per
// argument, named `names`.
std::vector<std::string> gemm_pointer_params(const ir::Kernel& k, const std::vector<std::string>& names);

// "// ---- kernel k0: gemm M x N x K ... ----", then the graph nodes it fuses.
std::string gemm_header_title(const ir::Kernel& k);

}  // namespace kiln::codegen
