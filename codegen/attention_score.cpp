// The score function of an attention kernel (see attention_emitter.h): the kernel's body
// at one score element (batch, i, j), for bodies that do more than scale the product.
#include <fmt/format.h>

#include <algorithm>

#include "codegen/attention_emitter.h"
#include "codegen/attention_template.h"
#include "codegen/scalar_emit.h"
#include "ir/error.h"

namespace kiln::codegen {

namespace {

// The coordinate of score dim `d` as code: the batch dims from the linear batch index.
std::string coordinate(const Shape& space, size_t d) {
  const size_t rank = space.size();
  if (d == rank - 1) return "(long long)j";
  if (d == rank - 2) return "(long long)i";
  int64_t inner = 1;
  for (size_t e = d + 1; e < rank - 2; ++e) inner *= space[e];
  return fmt::format("(long long)((batch / {}u) % {}u)", inner, space[d]);
}

// sum_d coeffs[d] * coordinate(d), as 64-bit code.
std::string linear_code(const Shape& space, const std::vector<int64_t>& coeffs) {
  std::string s;
  for (size_t d = 0; d < coeffs.size(); ++d)
    if (coeffs[d] != 0 && space[d] != 1)
      s += fmt::format("{}{} * {}ll", s.empty() ? "" : " + ", coordinate(space, d), coeffs[d]);
  return s.empty() ? "0ll" : s;
}

}  // namespace

std::string attention_score_function(const ir::Kernel& k, const std::vector<std::string>& params) {
  const Shape& space = k.space();
  std::vector<std::string> inputs;
  for (size_t i = 0; i < k.args.size(); ++i) {
    const ir::KernelArg& a = k.args[i];
    if (a.is_output || ir::attention_operand(k, static_cast<int>(i))) continue;
    inputs.push_back(fmt::format("const {}* __restrict__ {}", storage_type(a.type.dtype), params.at(i)));
  }
  std::string s = "// The score at element (batch, i, j): the fused ops between the products, on the scaled q . k.\n";
  s += fmt::format("static __device__ __forceinline__ float {}_score(float acc, unsigned batch, int i, int j{}{}) {{\n",
                   k.name, inputs.empty() ? "" : ", ", fmt::join(inputs, ", "));
  auto name = [](int id) { return fmt::format("s{}", id); };
  for (size_t id = 0; id < k.body.size(); ++id) {
    const ir::ScalarOp& op = k.body[id];
    const std::string type(register_type(op.dtype));
    std::string value;
    switch (op.kind) {
      case ir::ScalarKind::Acc: value = "acc"; break;
      case ir::ScalarKind::Const: value = const_expr(op.dtype, op.value); break;
      case ir::ScalarKind::Index: value = index_expr(op.dtype, "(" + linear_code(space, op.coeffs) + ")"); break;
      case ir::ScalarKind::Load: {
        const ir::KernelArg& a = k.args.at(static_cast<size_t>(op.arg));
        value = load_expr(op.dtype, fmt::format("{}[{}]", params.at(static_cast<size_t>(op.arg)),
                                                linear_code(space, a.strides)));
        break;
      }
      case ir::ScalarKind::Op: value = body_op_expr(k.body, op, name); break;
      default: throw Error(fmt::format("kernel @{}: score op %{} cannot be emitted", k.name, id));
    }
    s += fmt::format("  const {} {} = {};\n", type, name(static_cast<int>(id)), value);
  }
  return s + fmt::format("  return {};\n}}\n\n", name(static_cast<int>(k.body.size()) - 1));
}

std::string attention_fill(std::string text, const std::map<std::string, std::string>& values) {
  std::vector<std::pair<std::string, std::string>> order(values.begin(), values.end());
  std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
  for (const auto& [key, value] : order) {
    const std::string token = "$" + key;
    for (size_t at = text.find(token); at != std::string::npos; at = text.find(token, at + value.size()))
      text.replace(at, token.size(), value);
  }
  if (text.find('$') != std::string::npos)
    throw Error(fmt::format("attention emitter: unfilled name near '{}'", text.substr(text.find('$'), 20)));
  return text;
}

std::string attention_header_title(const ir::Kernel& k) {
  const ir::AttentionCore& a = k.attention;
  std::string s = fmt::format("\n// ---- kernel {}: attention {}{} queries x {} keys, head dim {}, {} products, fp32 "
                              "softmax{} ----\n",
                              k.name, a.batch.empty() ? "" : "batch " + shape_str(a.batch) + " of ", a.sq, a.skv, a.d,
                              dtype_name(a.dtype), a.causal ? ", causal" : "");
  s += "// Fuses:\n";
  for (const std::string& line : k.fused_nodes) s += "//   " + line + "\n";
  return s;
}

std::string attention_float_literal(double v) { return fmt::format("{:.9g}f", v); }

std::string attention_score_loop(const ir::Kernel& k, const std::vector<std::string>& params, int bc,
                                 const std::string& element) {
  const ir::AttentionCore& a = k.attention;
  std::vector<std::string> score_args;
  for (size_t i = 0; i < k.args.size(); ++i)
    if (!k.args[i].is_output && !ir::attention_operand(k, static_cast<int>(i))) score_args.push_back(params[i]);
  return fmt::format(
      "#pragma unroll\n    for (int n = 0; n < {bc} / 8; ++n)\n#pragma unroll\n      for (int r = 0; r < 4; ++r) {{\n"
      "        const int i = row0 + (r >> 1) * 8, j = kv0 + n * 8 + (lane & 3) * 2 + (r & 1);\n"
      "        {el} = i < {sq} && j < {skv} ? {name}_score({el} * {scale}, batch, i, j{args}) "
      ": __int_as_float(0xff800000);\n      }}\n",
      fmt::arg("bc", bc), fmt::arg("sq", a.sq), fmt::arg("skv", a.skv), fmt::arg("name", k.name),
      fmt::arg("scale", attention_float_literal(a.scale)), fmt::arg("el", element),
      fmt::arg("args", score_args.empty() ? "" : ", " + fmt::format("{}", fmt::join(score_args, ", "))));
}

}  // namespace kiln::codegen
