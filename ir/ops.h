// The op table: for every graph op its text name, category, arity, attribute
// schema and the rule that infers (and so verifies) its result type.
// Adding an op: one row in ops.def, its schema and type rule in ops.cpp, its
// meaning in the interpreter, its scalar emission in codegen.
#pragma once
#include <optional>
#include <string_view>
#include <vector>

#include "ir/attrs.h"
#include "ir/shape.h"

namespace kiln::ir {

enum class OpKind : uint8_t {
#define KILN_OP(Enum, text, category, arity) Enum,
#include "ir/ops.def"
#undef KILN_OP
};

enum class OpCategory { Unary, Cast, Binary, Compare, Select, Source, Reduce, View, Matmul, Dequant, Composite };

struct AttrSpec {
  std::string_view name;
  AttrKind kind;
  std::optional<AttrValue> default_value;  // nullopt: the attribute is required
};

struct OpInfo {
  OpKind kind;
  std::string_view name;
  OpCategory category;
  int arity;
  std::vector<AttrSpec> attrs;
  // True when the result type is given by the user (the `: type` in text, an
  // argument in the DSL) rather than derived: const, iota, cast, broadcast, reshape.
  bool type_from_annotation;
};

const OpInfo& op_info(OpKind k);
std::string_view op_name(OpKind k);
const std::vector<OpKind>& all_ops();
// Finds an op by its text name and operand count (e.g. "max" with 1 or 2 operands).
std::optional<OpKind> find_op(std::string_view name, int num_operands);
bool is_elementwise(OpKind k);  // unary, cast, binary, compare, select

// Fills in default attributes and checks the attributes against the schema
// (unknown names, wrong kinds, missing required ones). Throws kiln::Error.
Attrs complete_attrs(OpKind k, const Attrs& given);

// Infers the result type of `k` applied to operands of the given types; `annotated`
// is the user's result type (required for ops with type_from_annotation, checked
// against the inferred type otherwise by the caller). Throws kiln::Error naming the
// op, the operand types and the rule that was broken.
TensorType infer_type(OpKind k, const std::vector<TensorType>& operands, const Attrs& attrs,
                      const std::optional<TensorType>& annotated);

// Helpers shared by the interpreter, decompose and codegen.
std::vector<int> reduce_axes(const Attrs& attrs, int rank);  // normalised, sorted
int single_axis(const Attrs& attrs, int rank);               // for softmax / norms
// The floats of running state a reduction keeps while it walks its elements: one
// (sum, mean, max, min), two for logsumexp (the max and the sum rescaled to it) or
// three for var (count, mean and sum of squared deviations, merged by Chan's formula).
int reduce_state_size(OpKind k);
// Dequant's operand counts: the weights and scales, and optionally zero points.
inline constexpr int kDequantMinOperands = 2, kDequantMaxOperands = 3;

}  // namespace kiln::ir
