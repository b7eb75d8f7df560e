// Scalar emission: the CUDA expression of every element-wise op, in one table.
// Values live in registers as float (f32, f16, bf16: all math in fp32), int (i32) or
// bool (i1); memory holds float, __half, __nv_bfloat16, int or one byte per i1.
#pragma once
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/attrs.h"
#include "ir/dtype.h"
#include "ir/kernel.h"
#include "ir/ops.h"

namespace kiln::codegen {

std::string_view register_type(DType t);  // float, int, bool
std::string_view storage_type(DType t);   // float, __half, __nv_bfloat16, int, unsigned char

// A loaded element (storage type) as a register value, and back for a store
// (rounding to nearest even for f16 / bf16).
std::string load_expr(DType t, const std::string& element);
std::string store_expr(DType t, const std::string& value);

// A constant's literal; `value` is already representable in `t`.
std::string const_expr(DType t, double value);
// An iteration index (an unsigned integer expression) as a value of `t` (iota).
std::string index_expr(DType t, const std::string& index);

// The expression of element-wise `op` (unary, cast, binary, compare, select) on
// operand registers of the given dtypes, producing a register of dtype `result`.
// Intermediate values stay in fp32, but comparisons and casts first round an f16 /
// bf16 operand to its dtype, so that decisions and conversions see the value the
// graph's types say (as the reference interpreter computes them).
// Throws kiln::Error for an op this table does not know.
std::string op_expr(ir::OpKind op, const ir::Attrs& attrs, DType result, const std::vector<DType>& operand_types,
                    const std::vector<std::string>& operands);

// A device function a kernel may call, by name, with its definition.
struct DeviceHelper {
  const char* name;
  const char* definition;
};
// The definitions among table[0..count) (callees listed before their callers) that
// `code` calls, directly or through another helper, in table order.
std::string called_helpers(const std::string& code, const DeviceHelper* table, size_t count);

// op_expr for body op `op` (ScalarKind::Op), whose operands are earlier ops of `body`,
// each register named by `name(id)`.
std::string body_op_expr(const std::vector<ir::ScalarOp>& body, const ir::ScalarOp& op,
                         const std::function<std::string(int)>& name);

// The definitions of the kiln_* device helpers that `code` calls (and those they
// call), in dependency order.
std::string helper_definitions(const std::string& code);

}  // namespace kiln::codegen
