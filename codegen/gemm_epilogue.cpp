// The gemm epilogue (see gemm_epilogue.h). Offsets are 64-bit: an output of a batched
// product passes 2^31 elements long before its operands do.
#include "codegen/gemm_epilogue.h"

#include <fmt/format.h>

#include <algorithm>

#include "codegen/gemm_common.h"
#include "codegen/scalar_emit.h"
#include "ir/error.h"

namespace kiln::codegen {

using ir::ScalarKind;

namespace {

Shape batch_dims(const ir::Kernel& k) { return k.gemm.batch; }

}  // namespace

GemmEpilogue::GemmEpilogue(const ir::Kernel& k, const std::vector<std::string>& params, int vec)
    : k_(k), params_(params), vec_(vec) {
  for (size_t i = 0; i < k.args.size(); ++i) {
    const int a = static_cast<int>(i);
    if (ir::gemm_operand_arg(k, a)) continue;
    (k.args[i].is_output ? outputs_ : inputs_).push_back(a);
  }
  for (size_t id = 0; id < k.body.size(); ++id)
    if (k.body[id].kind == ScalarKind::Index) index_ops_.push_back(static_cast<int>(id));
  vector_stores_ = vec > 1 && k.gemm.n % vec == 0;
}

std::string GemmEpilogue::type_of(int arg) const {
  return std::string(storage_type(k_.args.at(static_cast<size_t>(arg)).type.dtype));
}

GemmEpilogue::Mode GemmEpilogue::mode_of(int arg) const {
  const std::vector<int64_t>& st = k_.args.at(static_cast<size_t>(arg)).strides;
  const size_t r = st.size();
  if (st[r - 1] == 0) return Mode::Uniform;
  bool aligned = st[r - 1] == 1 && k_.gemm.n % vec_ == 0 && st[r - 2] % vec_ == 0 &&
                 vec_ * dtype_bytes(k_.args.at(static_cast<size_t>(arg)).type.dtype) <= 32;
  for (size_t d = 0; d + 2 < r; ++d) aligned = aligned && st[d] % vec_ == 0;
  return aligned ? Mode::Vector : Mode::Strided;
}

std::string GemmEpilogue::describe() const {
  std::string s = fmt::format("{} column{} per call", vec_, vec_ == 1 ? "" : "s");
  for (int i : inputs_) {
    const Mode m = mode_of(i);
    s += fmt::format("; %{} {}", k_.args[i].name,
                     m == Mode::Vector ? "one vector" : m == Mode::Uniform ? "one value per row" : "per element");
  }
  s += vector_stores_ ? "; outputs as vectors" : "; outputs element by element (N is not a multiple of the vector)";
  return s;
}

std::string GemmEpilogue::element_function() const {
  std::vector<std::string> params = {"const float acc"};
  for (size_t i = 0; i < inputs_.size(); ++i) params.push_back(fmt::format("const {} a{}", type_of(inputs_[i]), i));
  for (size_t j = 0; j < index_ops_.size(); ++j) params.push_back(fmt::format("const unsigned long long x{}", j));
  for (size_t o = 0; o < outputs_.size(); ++o) params.push_back(fmt::format("{}& o{}", type_of(outputs_[o]), o));
  std::string s = fmt::format("static __device__ __forceinline__ void {}_element({}) {{\n", k_.name,
                              fmt::join(params, ", "));
  auto position = [](const std::vector<int>& v, int arg) {
    return static_cast<size_t>(std::find(v.begin(), v.end(), arg) - v.begin());
  };
  size_t index_pos = 0;
  for (size_t id = 0; id < k_.body.size(); ++id) {
    const ir::ScalarOp& op = k_.body[id];
    std::string value;
    switch (op.kind) {
      case ScalarKind::Acc:
        // The fp32 sums, held like any f16 / bf16 intermediate of a fused body: the
        // store (or a cast, or a compare) rounds them. Rounding here too cost two
        // conversions an element, a fifth of a bias + GELU epilogue's instructions.
        value = "acc";
        break;
      case ScalarKind::Load:
        if (ir::gemm_operand_arg(k_, op.arg))
          throw Error(fmt::format("kernel @{}: the epilogue loads an operand of the product", k_.name));
        value = load_expr(op.dtype, fmt::format("a{}", position(inputs_, op.arg)));
        break;
      case ScalarKind::Const: value = const_expr(op.dtype, op.value); break;
      case ScalarKind::Index: value = index_expr(op.dtype, fmt::format("x{}", index_pos++)); break;
      case ScalarKind::Op: value = body_op_expr(k_.body, op, [](int x) { return fmt::format("r{}", x); }); break;
      case ScalarKind::Store:
        s += fmt::format("  o{} = {};\n", position(outputs_, op.arg),
                         store_expr(op.dtype, fmt::format("r{}", op.operands[0])));
        continue;
      case ScalarKind::Reduce: throw Error(fmt::format("kernel @{}: a gemm epilogue cannot reduce", k_.name));
    }
    s += fmt::format("  const {} r{} = {};\n", register_type(op.dtype), id, value);
  }
  return s + "}\n";
}

std::string GemmEpilogue::row_offset(int arg) const {
  const std::vector<int64_t>& st = k_.args.at(static_cast<size_t>(arg)).strides;
  const size_t r = st.size();
  const std::vector<int64_t> batch_strides(st.begin(), st.end() - 2);
  return fmt::format("{} + (long long)m * {}ll", batch_offset_code(batch_dims(k_), batch_strides, "batch"), st[r - 2]);
}

std::string GemmEpilogue::index_code(const std::vector<int64_t>& coeffs, const std::string& col) const {
  const size_t r = coeffs.size();
  const std::vector<int64_t> batch_coeffs(coeffs.begin(), coeffs.end() - 2);
  return fmt::format("(unsigned long long)({} + (long long)m * {}ll + (long long)({}) * {}ll)",
                     batch_offset_code(batch_dims(k_), batch_coeffs, "batch"), coeffs[r - 2], col, coeffs[r - 1]);
}

std::vector<int> GemmEpilogue::preloadable() const {
  std::vector<int> out;
  for (int i : inputs_) {
    const std::vector<int64_t>& st = k_.args.at(static_cast<size_t>(i)).strides;
    bool invariant = mode_of(i) == Mode::Vector;
    for (size_t d = 0; d + 1 < st.size(); ++d) invariant = invariant && st[d] == 0;
    if (invariant) out.push_back(i);
  }
  return out;
}

bool GemmEpilogue::is_preloadable(int arg) const {
  const std::vector<int> ahead = preloadable();
  return std::find(ahead.begin(), ahead.end(), arg) != ahead.end();
}

std::string GemmEpilogue::preloaded_type(int arg) const { return fmt::format("kiln_vec<{}, {}>", type_of(arg), vec_); }

std::string GemmEpilogue::preload(int arg, const std::string& n) const {
  const std::string vt = preloaded_type(arg);
  return fmt::format("({} < {} ? *reinterpret_cast<const {}*>({} + {}) : {}{{}})", n, k_.gemm.n, vt, params_[arg], n, vt);
}

std::string GemmEpilogue::function_params(bool preloaded) const {
  std::vector<std::string> params;
  for (int i : inputs_)
    params.push_back(preloaded && is_preloadable(i)
                         ? fmt::format("const {}& p{}", preloaded_type(i), i)
                         : fmt::format("const {}* __restrict__ {}", type_of(i), params_[i]));
  for (int o : outputs_) params.push_back(fmt::format("{}* __restrict__ {}", type_of(o), params_[o]));
  params.push_back("const unsigned batch");
  params.push_back("const int m");
  params.push_back("const int n");
  params.push_back(fmt::format("const float (&acc)[{}]", vec_));
  return fmt::format("{}", fmt::join(params, ", "));
}

namespace {

// The bits of element `i` of the vector `value` of dtype `t`, as an unsigned integer.
std::string element_bits(DType t, const std::string& value, int i) {
  const std::string e = fmt::format("{}.v[{}]", value, i);
  switch (t) {
    case DType::f16: return fmt::format("(unsigned)__half_as_ushort({})", e);
    case DType::bf16: return fmt::format("(unsigned)__bfloat16_as_ushort({})", e);
    case DType::f32: return fmt::format("__float_as_uint({})", e);
    case DType::i32: return fmt::format("(unsigned){}", e);
    case DType::i1: return fmt::format("(unsigned){}", e);
    case DType::i8: return fmt::format("(unsigned)(unsigned char){}", e);
    case DType::i4: break;  // never an output (cast rejects i4 results)
    case DType::f8e4m3: case DType::f8e5m2: break;  // only pointwise kernels write fp8
  }
  return e;
}

// Stores the vector `value` (`count` elements of dtype `t`) at `at` as 32-bit words put
// together in registers, 16 bytes a store: a store of the vector struct itself compiles
// to one 16-bit store per pair of f16 elements.
std::string store_vector(const std::string& at, const std::string& value, DType t, int count) {
  const int bytes = dtype_bytes(t), per_word = 4 / bytes, words = count * bytes / 4;
  if (words == 0) return fmt::format("    *reinterpret_cast<decltype({})*>({}) = {};\n", value, at, value);
  std::vector<std::string> w;
  for (int i = 0; i < words; ++i) {
    std::string word;
    for (int j = 0; j < per_word; ++j) {
      const std::string bits = element_bits(t, value, i * per_word + j);
      word += word.empty() ? bits : fmt::format(" | ({} << {})", bits, 8 * bytes * j);
    }
    w.push_back(word);
  }
  std::string s;
  for (int i = 0; i < words;) {
    const int n = words - i >= 4 ? 4 : words - i >= 2 ? 2 : 1;
    const char* type = n == 4 ? "uint4" : n == 2 ? "uint2" : "unsigned";
    std::vector<std::string> part(w.begin() + i, w.begin() + i + n);
    const std::string make = n == 1 ? part[0] : fmt::format("make_{}({})", type, fmt::join(part, ", "));
    if (n == 4)
      s += fmt::format("    kiln_store16(reinterpret_cast<uint4*>({}) + {}, {});\n", at, i / n, make);
    else
      s += fmt::format("    reinterpret_cast<{}*>({})[{}] = {};\n", type, at, i / n, make);
    i += n;
  }
  return s;
}

}  // namespace

std::string GemmEpilogue::vector_function(bool preloaded) const {
  const int64_t M = k_.gemm.m, N = k_.gemm.n;
  auto is_ahead = [&](int i) { return preloaded && is_preloadable(i); };
  // kChecked = false: the caller knows the columns to be inside the output, so no
  // branch stands between one call's loads and stores and the next call's.
  std::string s = fmt::format("template <bool kChecked>\nstatic __device__ __forceinline__ void {}_epilogue{}({}) {{\n",
                              k_.name, preloaded ? "_preloaded" : "", function_params(preloaded));
  s += fmt::format("  if (kChecked && (m >= {} || n >= {})) return;\n", M, N);
  for (int i : inputs_)
    if (!is_ahead(i)) s += fmt::format("  const long long row{} = {};\n", i, row_offset(i));
  for (int o : outputs_)
    s += fmt::format("  const long long row{} = (long long)batch * {}ll + (long long)m * {}ll;\n", o, M * N, N);
  auto element_call = [&](bool full) {
    std::vector<std::string> args = {"acc[j]"};
    for (int i : inputs_) {
      const int64_t sn = k_.args[i].strides.back();
      const Mode m = mode_of(i);
      if (full && m == Mode::Vector) args.push_back(fmt::format("v{}.v[j]", i));
      else if (full && m == Mode::Uniform) args.push_back(fmt::format("v{}", i));
      else args.push_back(fmt::format("{}[row{} + (long long)(n + j) * {}ll]", params_[i], i, sn));
    }
    for (size_t j = 0; j < index_ops_.size(); ++j)
      args.push_back(index_code(k_.body[static_cast<size_t>(index_ops_[j])].coeffs, "n + j"));
    for (int o : outputs_)
      args.push_back(full && vector_stores_ ? fmt::format("w{}.v[j]", o) : fmt::format("{}[row{} + n + j]", params_[o], o));
    return fmt::format("{}_element({});\n", k_.name, fmt::join(args, ", "));
  };
  const bool edge = N % vec_ != 0;  // a vector of the last columns can run past N
  s += edge ? fmt::format("  if (!kChecked || n + {} <= {}) {{\n", vec_, N) : "  {\n";
  for (int i : inputs_) {
    const Mode m = mode_of(i);
    const std::string vt = fmt::format("kiln_vec<{}, {}>", type_of(i), vec_);
    if (m == Mode::Vector && is_ahead(i)) s += fmt::format("    const {}& v{} = p{};\n", vt, i, i);
    else if (m == Mode::Vector)
      s += fmt::format("    const {} v{} = *reinterpret_cast<const {}*>({} + row{} + n);\n", vt, i, vt, params_[i], i);
    if (m == Mode::Uniform) s += fmt::format("    const {} v{} = {}[row{}];\n", type_of(i), i, params_[i], i);
  }
  if (vector_stores_)
    for (int o : outputs_) s += fmt::format("    kiln_vec<{}, {}> w{};\n", type_of(o), vec_, o);
  s += fmt::format("#pragma unroll\n    for (int j = 0; j < {}; ++j) {}", vec_, element_call(true));
  if (vector_stores_)
    for (int o : outputs_)
      s += store_vector(fmt::format("{} + row{} + n", params_[o], o), fmt::format("w{}", o), k_.args[o].type.dtype,
                        vec_);
  s += "  }\n";
  if (edge) {
    s += "  else {\n";
    s += fmt::format("#pragma unroll\n    for (int j = 0; j < {}; ++j)\n      if (n + j < {}) {}", vec_, N,
                     element_call(false));
    s += "  }\n";
  }
  return s + "}\n";
}

std::string GemmEpilogue::functions() const {
  return element_function() + vector_function(false) +
         (vec_ == 1 || preloadable().empty() ? "" : vector_function(true));
}

std::vector<std::string> GemmEpilogue::call_args(const std::string& m, const std::string& n, const std::string& acc,
                                                 const std::string& prefix) const {
  std::vector<std::string> args;
  for (int i : inputs_) args.push_back(!prefix.empty() && is_preloadable(i) ? prefix + std::to_string(i) : params_[i]);
  for (int o : outputs_) args.push_back(params_[o]);
  args.push_back("batch");
  args.push_back(m);
  args.push_back(n);
  args.push_back(acc);
  return args;
}

std::string GemmEpilogue::call(const std::string& m, const std::string& n, const std::string& acc,
                               bool checked) const {
  return fmt::format("{}_epilogue<{}>({});\n", k_.name, checked ? "true" : "false",
                     fmt::join(call_args(m, n, acc, ""), ", "));
}

std::string GemmEpilogue::call_preloaded(const std::string& m, const std::string& n, const std::string& acc,
                                         const std::string& prefix) const {
  return fmt::format("{}_epilogue_preloaded<true>({});\n", k_.name, fmt::join(call_args(m, n, acc, prefix), ", "));
}

}  // namespace kiln::codegen
