// The load stage of a dequantised gemm operand (see gemm_operand_load.h): B holds i8 or
// i4 weights [N, K], K contiguous, with a scale (and a zero point) per `group`
// elements of K. A thread's chunk is 8 elements of one weight row; as the group is a
// multiple of 8 (or all of K) the chunk shares one scale. At issue time the chunk's
// packed elements (one 32-bit word of i4 or two of i8 where rows are aligned, else
// element by element) and its scale and zero point load into registers; at commit time
// each element becomes (w - z) * s in fp32, exactly the graph's dequant, and the chunk
// is stored to the shared tile as 8 f16 / bf16 values.
#include <fmt/format.h>

#include "codegen/gemm_common.h"
#include "codegen/gemm_operand_load.h"
#include "codegen/kernel_params.h"
#include "codegen/scalar_emit.h"
#include "ir/error.h"

namespace kiln::codegen {

namespace {

// A signed integer from the low `bits` bits of `x` (an unsigned expression).
std::string sign_extend(const std::string& x, int bits) {
  if (bits == 8) return fmt::format("(int)(signed char)(unsigned char)({})", x);
  return fmt::format("kiln_i4_value({})", x);
}

// Element `index` (a long long expression) of a packed i4 or i8 tensor, as an int.
std::string element_at(DType t, const std::string& param, const std::string& index) {
  if (t == DType::i4) return fmt::format("kiln_i4_value((unsigned){}[({}) >> 1] >> ((int)(({}) & 1) * 4))", param, index, index);
  return fmt::format("(int){}[{}]", param, index);
}

}  // namespace

std::string OperandLoad::dequant_dst() const {
  const std::string n = name();
  return uniform_swizzle_ ? fmt::format("{}_dst + i * {}", n, rows_per_pass_ * tile_.row_bytes())
                          : fmt::format("{}_dst[i]", n);
}

std::string OperandLoad::dequant_setup(const std::string& outer0) const {
  const ir::GemmOperand& op = k_.gemm.b;
  const ir::KernelArg& w = k_.args.at(static_cast<size_t>(op.arg));
  const int64_t groups = k_.gemm.k / op.dequant.group;
  const std::string n = name();
  std::string s = fmt::format("  // {}\n", describe());
  s += fmt::format("  const int {}_outer0 = {};\n", n, outer0);
  s += fmt::format("  const int {}_row = (int)threadIdx.x / {}, {}_chunk = (int)threadIdx.x % {};\n", n,
                   tile_.chunks_per_row(), n, tile_.chunks_per_row());
  s += fmt::format("  // Element (row, k) of the weights is element row * {} + k of %{}.\n", k_.gemm.k, w.name);
  s += fmt::format("  const long long {}_elem0 = (long long)({}_outer0 + {}_row) * {}ll + {}_chunk * 8;\n", n, n, n,
                   k_.gemm.k, n);
  s += fmt::format("  const long long {}_group0 = (long long)({}_outer0 + {}_row) * {}ll;  // the row's first group\n",
                   n, n, n, groups);
  s += dst_setup();
  const int words = w.type.dtype == DType::i4 ? 1 : 2;
  if (word_loads_) s += fmt::format("  unsigned {}_word[{}][{}];  // the next K step's packed weights\n", n, per_thread_, words);
  else s += fmt::format("  kiln_vec<signed char, 8> {}_elem[{}];  // the next K step's weights\n", n, per_thread_);
  s += fmt::format("  float {}_scale[{}], {}_zero[{}];\n", n, per_thread_, n, per_thread_);
  return s;
}

std::string OperandLoad::dequant_issue(const std::string& in, const std::string& k0) const {
  const ir::GemmOperand& op = k_.gemm.b;
  const ir::KernelArg& w = k_.args.at(static_cast<size_t>(op.arg));
  const std::vector<std::string> params = param_names(k_);
  const int64_t groups = k_.gemm.k / op.dequant.group;
  const std::string n = name();
  const int64_t row_step = int64_t{rows_per_pass_} * k_.gemm.k;
  std::string s = fmt::format("{}#pragma unroll\n{}for (int i = 0; i < {}; ++i) {}{{\n", in, in, per_thread_,
                              chunk_guard("i"));
  const std::string body = in + "  ";
  const std::string row_in = outer_in("i");
  const std::string chunk_in = both_conditions(row_in, k_in("i", k0, ""));
  s += fmt::format("{}const long long at = {}_elem0 + i * {}ll + {};\n", body, n, row_step, k0);
  s += fmt::format("{}const bool in = {};\n", body, chunk_in.empty() ? "true" : chunk_in);
  if (word_loads_) {
    if (w.type.dtype == DType::i4)
      s += fmt::format("{}{}_word[i][0] = in ? *reinterpret_cast<const unsigned*>({} + (at >> 1)) : 0u;\n", body, n,
                       param_);
    else
      s += fmt::format("{}{{ const uint2 q = in ? *reinterpret_cast<const uint2*>({} + at) : make_uint2(0u, 0u); "
                       "{}_word[i][0] = q.x; {}_word[i][1] = q.y; }}\n",
                       body, param_, n, n);
  } else {
    s += fmt::format("{}#pragma unroll\n{}for (int j = 0; j < 8; ++j)\n", body, body);
    const std::string elem_in = both_conditions(row_in, k_in("i", k0, "j"));
    const std::string value = "(signed char)" + element_at(w.type.dtype, param_, "at + j");
    s += fmt::format("{}  {}_elem[i].v[j] = {};\n", body, n,
                     elem_in.empty() ? value : fmt::format("({}) ? {} : (signed char)0", elem_in, value));
  }
  // The chunk's group: its first element's (a chunk lies in one group).
  const std::string group_at = fmt::format("{}_group0 + i * {}ll + ({} + {}_chunk * 8) / {}", n,
                                           int64_t{rows_per_pass_} * groups, k0, n, op.dequant.group);
  const ir::KernelArg& sc = k_.args.at(static_cast<size_t>(op.dequant.scale));
  s += fmt::format("{}{}_scale[i] = in ? {} : 0.0f;\n", body, n,
                   load_expr(sc.type.dtype, fmt::format("{}[{}]", params.at(static_cast<size_t>(op.dequant.scale)), group_at)));
  if (op.dequant.zero >= 0) {
    const ir::KernelArg& z = k_.args.at(static_cast<size_t>(op.dequant.zero));
    const std::string zp = params.at(static_cast<size_t>(op.dequant.zero));
    const std::string value = is_storage_only(z.type.dtype)
                                  ? fmt::format("(float){}", element_at(z.type.dtype, zp, group_at))
                                  : load_expr(z.type.dtype, fmt::format("{}[{}]", zp, group_at));
    s += fmt::format("{}{}_zero[i] = in ? {} : 0.0f;\n", body, n, value);
  } else {
    s += fmt::format("{}{}_zero[i] = 0.0f;\n", body, n);
  }
  return s + in + "}\n";
}

std::string OperandLoad::dequant_commit(const std::string& in, const std::string& stage, const std::string& k0) const {
  const ir::GemmOperand& op = k_.gemm.b;
  const ir::KernelArg& w = k_.args.at(static_cast<size_t>(op.arg));
  const std::string n = name();
  std::string s = fmt::format("{}#pragma unroll\n{}for (int i = 0; i < {}; ++i) {}{{\n", in, in, per_thread_,
                              chunk_guard("i"));
  const std::string body = in + "  ";
  s += fmt::format("{}float v[8];\n{}#pragma unroll\n{}for (int j = 0; j < 8; ++j) {{\n", body, body, body);
  std::string q;
  if (!word_loads_) q = fmt::format("(int){}_elem[i].v[j]", n);
  else if (w.type.dtype == DType::i4) q = sign_extend(fmt::format("{}_word[i][0] >> (4 * j)", n), 4);
  else q = sign_extend(fmt::format("{}_word[i][j >> 2] >> (8 * (j & 3))", n), 8);
  // Past K inside a chunk (element loads only): zero, whatever the zero point says.
  const std::string tail = word_loads_ || k_always_in_ ? "" : k_in("i", k0, "j");
  const std::string value = fmt::format("((float){} - {}_zero[i]) * {}_scale[i]", q, n, n);
  s += fmt::format("{}  v[j] = {};\n", body, tail.empty() ? value : fmt::format("({}) ? {} : 0.0f", tail, value));
  s += body + "}\n";
  s += fmt::format("{}*reinterpret_cast<uint4*>(kiln_smem + {} + {}) = kiln_pack8_{}(v);\n", body, stage,
                   dequant_dst(), k_.gemm.operand_dtype == DType::f16 ? "f16" : "bf16");
  return s + in + "}\n";
}

}  // namespace kiln::codegen
