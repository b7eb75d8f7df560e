// The pointwise emitter. Block b covers elements [b * T * E, (b + 1) * T * E) of the
// (collapsed) iteration space; in step s a thread handles the vector of V elements
// starting at b * T * E + (s * T + thread) * V, so neighbouring threads touch
// neighbouring vectors (coalesced). Per element, an inlined element function runs the
// kernel's scalar body. How each input is read decides its code:
//   contiguous  the element index is the offset: one vector load
//   vector      rows of the innermost dim hold whole vectors and the input is
//               contiguous along them: one aligned vector load at the row offset
//   uniform     constant along rows (a column broadcast): one scalar per vector
//   strided     any other stride along rows: one scalar load per element
//   per-element vectors cross rows: each element's offset from its own multi-index
// A vector that runs past the end takes the scalar tail, element by element.
#include "codegen/pointwise_emitter.h"

#include <fmt/format.h>

#include <algorithm>

#include <initializer_list>
#include <set>

#include "codegen/kernel_params.h"
#include "codegen/scalar_emit.h"
#include "ir/error.h"

namespace kiln::codegen {

using ir::Kernel;
using ir::ScalarKind;

namespace {


enum class Mode { Contiguous, Vector, Uniform, Strided, PerElement };

struct Access {
  std::vector<int64_t> strides;  // over the collapsed dims
  Mode mode = Mode::Contiguous;
};

class PointwiseEmitter {
public:
  explicit PointwiseEmitter(const Kernel& k) : k_(k), space_(ir::collapse(k)) {
    const ir::TileConfig& c = k.config;
    vec_ = c.vec;
    n_ = k.numel();
    wide_ = needs_wide_index(k);
    idx_ = wide_ ? "unsigned long long" : "unsigned int";
    const Shape& dims = space_.dims;
    const bool rows_hold_vectors = dims.back() % vec_ == 0;
    const Shape row_major = row_major_strides(dims);
    auto classify = [&](const std::vector<int64_t>& s, bool vector_ok) {
      if (s == row_major) return Mode::Contiguous;
      if (!rows_hold_vectors) return Mode::PerElement;
      if (s.back() == 0) return Mode::Uniform;
      bool aligned = s.back() == 1;
      for (size_t d = 0; d + 1 < s.size(); ++d) aligned = aligned && s[d] % vec_ == 0;
      return vector_ok && aligned ? Mode::Vector : Mode::Strided;
    };
    param_ = param_names(k);
    for (size_t i = 0; i < k.args.size(); ++i) {
      const ir::KernelArg& a = k.args[i];
      (a.is_output ? outputs_ : inputs_).push_back(static_cast<int>(i));
      position_.push_back(static_cast<int>((a.is_output ? outputs_ : inputs_).size()) - 1);
      args_.push_back(Access{space_.arg_strides[i], classify(space_.arg_strides[i], true)});
      // Packed i4 elements have no vector or array access: each is read through kiln_load_i4.
      if (a.type.dtype == DType::i4 && !a.is_output) args_.back().mode = Mode::PerElement;
    }
    for (size_t id = 0, j = 0; id < k.body.size(); ++id) {
      if (k.body[id].kind != ScalarKind::Index) continue;
      index_ops_.push_back(static_cast<int>(id));
      indices_.push_back(Access{space_.index_coeffs[j], classify(space_.index_coeffs[j], false)});
      ++j;
    }
  }

  std::string emit() {
    std::string out = header();
    out += element_function();
    out += entry();
    return out;
  }

private:
  std::string lit(int64_t v) const { return std::to_string(v) + (wide_ ? "ull" : "u"); }
  std::string_view type_of(int arg) const { return storage_type(k_.args[arg].type.dtype); }
  // The element of input `arg` at element offset `at`.
  std::string read(int arg, const std::string& at) const {
    if (k_.args[arg].type.dtype == DType::i4) return fmt::format("kiln_load_i4({}, {})", param_[arg], at);
    return fmt::format("{}[{}]", param_[arg], at);
  }
  std::string vec_type(int arg) const { return fmt::format("kiln_vec<{}, {}>", type_of(arg), vec_); }

  static const char* mode_name(Mode m) {
    switch (m) {
      case Mode::Contiguous: return "contiguous";
      case Mode::Vector: return "vector loads along rows";
      case Mode::Uniform: return "one value per row run";
      case Mode::Strided: return "strided";
      case Mode::PerElement: return "per-element index";
    }
    return "?";
  }

  std::string header() const {
    const ir::TileConfig& c = k_.config;
    LaunchDims dims = pointwise_launch_dims(k_);
    std::string s = fmt::format("\n// ---- kernel {}: pointwise over {} = {} elements ({}-bit indices) ----\n", k_.name,
                                shape_str(k_.space()), n_, wide_ ? 64 : 32);
    s += "// Fuses:\n";
    for (const std::string& line : k_.fused_nodes) s += "//   " + line + "\n";
    s += fmt::format("// Config {}: grid {} x {} threads; each thread handles {} vector{} of {} element{}.\n",
                     c.str(), dims.grid[0], dims.block[0], c.elems / c.vec, c.elems / c.vec == 1 ? "" : "s", c.vec,
                     c.vec == 1 ? "" : "s");
    s += fmt::format("// Indexing over {}:", shape_str(space_.dims));
    for (size_t i = 0; i < k_.args.size(); ++i)
      if (!k_.args[i].is_output) s += fmt::format(" {} {};", param_[i], mode_name(args_[i].mode));
    return s + " outputs contiguous.\n";
  }

  std::string element_function() const {
    std::vector<std::string> params;
    for (int i : inputs_)
      params.push_back(fmt::format("const {} a{}", k_.args[i].type.dtype == DType::i4 ? "int" : type_of(i),
                                   position_[i]));
    for (size_t j = 0; j < index_ops_.size(); ++j) params.push_back(fmt::format("const {} x{}", idx_, j));
    for (int i : outputs_) params.push_back(fmt::format("{}& o{}", type_of(i), position_[i]));
    std::string s = fmt::format("static __device__ __forceinline__ void {}_element({}) {{\n", k_.name,
                                fmt::join(params, ", "));
    size_t index_pos = 0;
    for (size_t id = 0; id < k_.body.size(); ++id) {
      const ir::ScalarOp& op = k_.body[id];
      std::string value;
      switch (op.kind) {
        case ScalarKind::Load: value = load_expr(op.dtype, fmt::format("a{}", position_[op.arg])); break;
        case ScalarKind::Const: value = const_expr(op.dtype, op.value); break;
        case ScalarKind::Index: value = index_expr(op.dtype, fmt::format("x{}", index_pos++)); break;
        case ScalarKind::Op:
          value = body_op_expr(k_.body, op, [](int x) { return fmt::format("r{}", x); });
          break;
        case ScalarKind::Store:
          s += fmt::format("  o{} = {};\n", position_[op.arg],
                           store_expr(op.dtype, fmt::format("r{}", op.operands[0])));
          continue;
        case ScalarKind::Reduce:  // ir::verify rejects it in a pointwise kernel
          throw Error(fmt::format("kernel @{}: a pointwise kernel cannot reduce", k_.name));
        case ScalarKind::Acc:  // ir::verify rejects it outside a gemm kernel
          throw Error(fmt::format("kernel @{}: a pointwise kernel has no accumulator", k_.name));
      }
      s += fmt::format("  const {} r{} = {};\n", register_type(op.dtype), id, value);
    }
    return s + "}\n";
  }

  // Declares the coordinates `prefix`0.. of element index `expr` that `used` marks.
  std::string decompose(const std::string& indent, const std::string& expr, const std::string& prefix,
                        const std::vector<bool>& used) const {
    const Shape& dims = space_.dims;
    const size_t rank = dims.size();
    if (!any(used)) return "";
    if (rank == 1) return fmt::format("{}const {} {}0 = {};\n", indent, idx_, prefix, expr);
    std::string divisions;
    for (size_t d = rank - 1; d >= 1; --d) {
      if (used[d])
        divisions += fmt::format("{}const {} {}{} = {}q % {};\n", indent, idx_, prefix, d, prefix, lit(dims[d]));
      bool more = false;  // a coordinate further out is still needed
      for (size_t e = 0; e < d; ++e) more = more || used[e];
      if (more) divisions += fmt::format("{}{}q /= {};\n", indent, prefix, lit(dims[d]));
    }
    bool divides = divisions.find("q /=") != std::string::npos;
    std::string s = fmt::format("{}{}{} {}q = {};\n", indent, divides ? "" : "const ", idx_, prefix, expr) + divisions;
    if (used[0]) s += fmt::format("{}const {} {}0 = {}q;\n", indent, idx_, prefix, prefix);
    return s;
  }

  std::string offset(const std::vector<int64_t>& strides, const std::string& prefix) const {
    std::string s;
    for (size_t d = 0; d < strides.size(); ++d) {
      if (strides[d] == 0) continue;
      s += s.empty() ? "" : " + ";
      s += strides[d] == 1 ? fmt::format("{}{}", prefix, d) : fmt::format("{}{} * {}", prefix, d, lit(strides[d]));
    }
    return s.empty() ? lit(0) : s;
  }

  // Which coordinates the accesses with a mode in `modes` need.
  std::vector<bool> used_by(std::initializer_list<Mode> modes) const {
    std::vector<bool> used(space_.dims.size(), false);
    auto mark = [&](const Access& a) {
      if (std::find(modes.begin(), modes.end(), a.mode) == modes.end()) return;
      for (size_t d = 0; d < used.size(); ++d) used[d] = used[d] || a.strides[d] != 0;
    };
    for (int i : inputs_) mark(args_[i]);
    for (const Access& a : indices_) mark(a);
    return used;
  }

  static bool any(const std::vector<bool>& v) { return std::find(v.begin(), v.end(), true) != v.end(); }

  std::string call(const std::vector<std::string>& args) const {
    return fmt::format("{}_element({});\n", k_.name, fmt::join(args, ", "));
  }

  // A full vector: every element of it is inside the space.
  std::string vector_path() const {
    const std::string in = "      ";
    std::string s;
    for (int i : inputs_)
      if (args_[i].mode == Mode::Contiguous)
        s += fmt::format("{}const {} v{} = *reinterpret_cast<const {}*>({} + base);\n", in, vec_type(i), i, vec_type(i),
                         param_[i]);
    std::vector<bool> row_coords = used_by({Mode::Vector, Mode::Uniform, Mode::Strided});
    s += decompose(in, "base", "c", row_coords);
    for (int i : inputs_) {
      Mode m = args_[i].mode;
      if (m != Mode::Vector && m != Mode::Uniform && m != Mode::Strided) continue;
      s += fmt::format("{}const {} off{} = {};\n", in, idx_, i, offset(args_[i].strides, "c"));
      if (m == Mode::Vector)
        s += fmt::format("{}const {} v{} = *reinterpret_cast<const {}*>({} + off{});\n", in, vec_type(i), i,
                         vec_type(i), param_[i], i);
      if (m == Mode::Uniform) s += fmt::format("{}const {} v{} = {}[off{}];\n", in, type_of(i), i, param_[i], i);
    }
    for (size_t j = 0; j < indices_.size(); ++j) {
      Mode m = indices_[j].mode;
      if (m == Mode::Uniform || m == Mode::Strided)
        s += fmt::format("{}const {} ix{} = {};\n", in, idx_, j, offset(indices_[j].strides, "c"));
    }
    for (int i : outputs_) s += fmt::format("{}{} w{};\n", in, vec_type(i), i);

    s += in + "#pragma unroll\n";
    s += fmt::format("{}for (int j = 0; j < {}; ++j) {{\n", in, vec_);
    const std::string body = in + "  ";
    s += decompose(body, fmt::format("base + ({})j", idx_), "e", used_by({Mode::PerElement}));
    std::vector<std::string> args;
    for (int i : inputs_) {
      const Access& a = args_[i];
      switch (a.mode) {
        case Mode::Contiguous: case Mode::Vector: args.push_back(fmt::format("v{}.v[j]", i)); break;
        case Mode::Uniform: args.push_back(fmt::format("v{}", i)); break;
        case Mode::Strided:
          args.push_back(fmt::format("{}[off{} + ({})j * {}]", param_[i], i, idx_, lit(a.strides.back())));
          break;
        case Mode::PerElement: args.push_back(read(i, offset(a.strides, "e"))); break;
      }
    }
    for (size_t j = 0; j < indices_.size(); ++j) {
      const Access& a = indices_[j];
      switch (a.mode) {
        case Mode::Contiguous: args.push_back(fmt::format("base + ({})j", idx_)); break;
        case Mode::Uniform: args.push_back(fmt::format("ix{}", j)); break;
        case Mode::Vector:  // indices are never loaded
        case Mode::Strided: args.push_back(fmt::format("ix{} + ({})j * {}", j, idx_, lit(a.strides.back()))); break;
        case Mode::PerElement: args.push_back(offset(a.strides, "e")); break;
      }
    }
    for (int i : outputs_) args.push_back(fmt::format("w{}.v[j]", i));
    s += body + call(args);
    s += in + "}\n";
    for (int i : outputs_) {
      if (k_.args[i].type.dtype == DType::i4) {  // two nibbles a byte, the even element low
        s += fmt::format("{}kiln_vec<unsigned char, {}> b{};\n", in, vec_ / 2, i);
        s += fmt::format("{}#pragma unroll\n{}for (int j = 0; j < {}; ++j) b{}.v[j] = (unsigned char)(w{}.v[2 * j] | "
                         "(w{}.v[2 * j + 1] << 4));\n",
                         in, in, vec_ / 2, i, i, i);
        s += fmt::format("{}*reinterpret_cast<kiln_vec<unsigned char, {}>*>({} + base / 2) = b{};\n", in, vec_ / 2,
                         param_[i], i);
        continue;
      }
      s += fmt::format("{}*reinterpret_cast<{}*>({} + base) = w{};\n", in, vec_type(i), param_[i], i);
    }
    return s;
  }

  // The last, partial vector: element by element up to the end of the space.
  std::string tail_path() const {
    const std::string in = "      ";
    std::string s = fmt::format("{}for (int j = 0; j < {}; ++j) {{\n", in, vec_);
    const std::string body = in + "  ";
    s += fmt::format("{}const {} i = base + ({})j;\n", body, idx_, idx_);
    s += body + "if (i >= n) break;\n";
    s += decompose(body, "i", "e",
                   used_by({Mode::Vector, Mode::Uniform, Mode::Strided, Mode::PerElement}));
    std::vector<std::string> args;
    for (int i : inputs_) {
      const std::string at = args_[i].mode == Mode::Contiguous ? "i" : offset(args_[i].strides, "e");
      args.push_back(read(i, at));
    }
    for (const Access& a : indices_) args.push_back(a.mode == Mode::Contiguous ? "i" : offset(a.strides, "e"));
    std::string gathered, packed;  // i4 outputs: the nibbles gathered, then stored a byte at a time
    for (int i : outputs_) {
      if (k_.args[i].type.dtype != DType::i4) {
        args.push_back(fmt::format("{}[i]", param_[i]));
        continue;
      }
      args.push_back(fmt::format("w{}[j]", i));
      gathered += fmt::format("{}unsigned char w{}[{}] = {{}};\n", in, i, vec_);
      packed += fmt::format("{}for (int j = 0; j < {} && base + ({})j < n; j += 2)\n", in, vec_, idx_);
      packed += fmt::format("{}  {}[(base + ({})j) / 2] = (unsigned char)(w{}[j] | (base + ({})j + 1 < n ? w{}[j + 1] "
                            "<< 4 : 0));\n",
                            in, param_[i], idx_, i, idx_, i);
    }
    s += body + call(args);
    return gathered + s + in + "}\n" + packed;
  }

  std::string entry() const {
    const ir::TileConfig& c = k_.config;
    std::vector<std::string> params;
    for (size_t i = 0; i < k_.args.size(); ++i) {
      const char* constness = k_.args[i].is_output ? "" : "const ";
      params.push_back(fmt::format("{}{}* __restrict__ {}", constness, type_of(static_cast<int>(i)), param_[i]));
    }
    std::string s = fmt::format("extern \"C\" __global__ void __launch_bounds__({}) {}({}) {{\n", c.threads, k_.name,
                                fmt::join(params, ", "));
    s += fmt::format("  const {} n = {};\n", idx_, lit(n_));
    s += fmt::format("  const {} block_base = ({})blockIdx.x * {};\n", idx_, idx_, lit(int64_t{c.threads} * c.elems));
    s += "#pragma unroll\n";
    s += fmt::format("  for (int step = 0; step < {}; ++step) {{\n", c.elems / c.vec);
    s += fmt::format("    const {} base = block_base + (({})step * {} + ({})threadIdx.x) * {};\n", idx_, idx_,
                     lit(c.threads), idx_, lit(vec_));
    s += fmt::format("    if (base + {} <= n) {{\n", lit(vec_));
    s += vector_path();
    if (n_ % vec_ != 0) {
      s += "    } else if (base < n) {\n";
      s += tail_path();
    }
    s += "    }\n  }\n}\n";
    return s;
  }

  const Kernel& k_;
  ir::CollapsedSpace space_;
  int vec_ = 1;
  int64_t n_ = 0;
  bool wide_ = false;
  std::string idx_;
  std::vector<int> inputs_, outputs_;  // indices into Kernel::args
  std::vector<int> position_;          // per arg: its place among the inputs or outputs
  std::vector<std::string> param_;     // per arg: its CUDA parameter name
  std::vector<Access> args_;           // per arg
  std::vector<int> index_ops_;         // ids of the Index ops
  std::vector<Access> indices_;        // per Index op
};

}  // namespace

LaunchDims pointwise_launch_dims(const Kernel& k) {
  const ir::TileConfig& c = k.config;
  if (c.threads <= 0 || c.elems <= 0) throw Error(fmt::format("kernel @{} has no tile config", k.name));
  int64_t per_block = int64_t{c.threads} * c.elems;
  LaunchDims d;
  d.grid[0] = static_cast<unsigned>((k.numel() + per_block - 1) / per_block);
  d.block[0] = static_cast<unsigned>(c.threads);
  return d;
}

std::string emit_pointwise(const Kernel& k) {
  ir::verify(k);
  ir::validate(k, k.config);
  if (!is_c_identifier(k.name))
    throw Error(fmt::format("kernel @{}: its name must be a C identifier to name a CUDA function", k.name));
  return PointwiseEmitter(k).emit();
}

}  // namespace kiln::codegen
