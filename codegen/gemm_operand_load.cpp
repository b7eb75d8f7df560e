// The gemm load stage (see gemm_operand_load.h). Names in the generated code carry
// the operand's letter: a_src, a_dst, a_hold, ...
#include "codegen/gemm_operand_load.h"

#include <fmt/format.h>

#include "codegen/gemm_common.h"
#include "codegen/scalar_emit.h"
#include "ir/error.h"
#include "ir/tile_config.h"

namespace kiln::codegen {

int SharedTile::swizzle(int row) const {
  if (row_bytes() >= 128) return row % 8;
  if (row_bytes() == 64) return (row / 2) % 4;
  return (row / 4) % 2;
}

std::string SharedTile::swizzle_code(const std::string& row) const {
  if (row_bytes() >= 128) return fmt::format("(({}) & 7)", row);
  if (row_bytes() == 64) return fmt::format("((({}) >> 1) & 3)", row);
  return fmt::format("((({}) >> 2) & 1)", row);
}

std::string SharedTile::offset_code(const std::string& row, const std::string& chunk) const {
  return fmt::format("(({}) * {} + ((({}) ^ {}) << 4))", row, row_bytes(), chunk, swizzle_code(row));
}

OperandLoad::OperandLoad(const ir::Kernel& k, bool operand_a, const std::string& param, int tile_outer, int bk,
                         int threads)
    : k_(k), a_(operand_a), param_(param), threads_(threads), tile_outer_(tile_outer) {
  const ir::GemmLayout l = ir::gemm_layout(k, operand_a);
  k_contiguous_ = l.k_contiguous;
  async_ = ir::gemm_operand_async(k, operand_a);
  ld_ = l.ld;
  outer_ = l.outer;
  tile_.esize = dtype_bytes(k.gemm.operand_dtype);
  tile_.rows = k_contiguous_ ? tile_outer : bk;
  tile_.cols = k_contiguous_ ? bk : tile_outer;
  chunk_elems_ = 16 / tile_.esize;
  chunks_ = tile_.rows * tile_.chunks_per_row();
  per_thread_ = (chunks_ + threads - 1) / threads;
  rows_per_pass_ = threads / tile_.chunks_per_row();  // both powers of two; threads >= 32 >= chunks per row
  uniform_swizzle_ = rows_per_pass_ % 8 == 0 || per_thread_ == 1;
  outer_always_in_ = outer_ % tile_outer == 0;
  k_always_in_ = k.gemm.k % bk == 0;
  vector_source_ = ir::gemm_operand_vector_loads(k, operand_a);
  dequant_ = (operand_a ? k.gemm.a : k.gemm.b).dequant.active();
  word_loads_ = dequant_ && ir::gemm_dequant_word_loads(k);
  packed_ = dequant_ && ir::gemm_dequant_packed(k, k.config);
  if (packed_) {
    pd_ = ir::gemm_packed_dequant(k, k.config);
    async_ = true;
  }
}

int OperandLoad::stage_bytes() const { return packed_ ? pd_.packed_tile_bytes : tile_.bytes(); }

std::string OperandLoad::describe() const {
  const ir::GemmOperand& op = a_ ? k_.gemm.a : k_.gemm.b;
  const ir::KernelArg& arg = k_.args.at(static_cast<size_t>(op.arg));
  std::string how = async_ ? "16-byte cp.async copies"
                           : vector_source_ ? "vector loads through registers" : "element loads through registers";
  if (packed_)
    how = fmt::format("packed {} weights by 16-byte cp.async, dequantised in shared memory as each stage lands, "
                      "with a scale per {} elements of K",
                      dtype_name(arg.type.dtype), op.dequant.group);
  else if (dequant_)
    how = fmt::format("{} {} weights through registers, dequantised with a scale per {} elements of K",
                      word_loads_ ? "word loads of" : "element loads of", dtype_name(arg.type.dtype), op.dequant.group);
  return fmt::format("{} %{}: {} contiguous, {}{}; shared tile {} x {} (swizzled 16-byte chunks)", a_ ? "A" : "B",
                     arg.name, k_contiguous_ ? "K" : (a_ ? "M" : "N"), how,
                     op.prologue.empty() ? "" : ", prologue on every element", tile_.rows, tile_.cols);
}

std::string OperandLoad::chunk_guard(const std::string& i) const {
  if (chunks_ % threads_ == 0) return "";
  return fmt::format("if ({} * {} + (int)threadIdx.x < {}) ", i, threads_, chunks_);
}

std::string OperandLoad::outer_in(const std::string& i) const {
  if (outer_always_in_) return "";
  if (k_contiguous_) return fmt::format("{}_outer0 + {}_row + {} * {} < {}", name(), name(), i, rows_per_pass_, outer_);
  return fmt::format("{}_outer0 + {}_chunk * {} < {}", name(), name(), chunk_elems_, outer_);
}

std::string OperandLoad::k_in(const std::string& i, const std::string& k0, const std::string& j) const {
  if (k_always_in_) return "";
  if (k_contiguous_)
    return fmt::format("{} + {}_chunk * {}{} < k_end", k0, name(), chunk_elems_, j.empty() ? "" : " + " + j);
  return fmt::format("{} + {}_row + {} * {} < k_end", k0, name(), i, rows_per_pass_);
}

std::string OperandLoad::dst_setup() const {
  const std::string n = name();
  if (uniform_swizzle_)
    return fmt::format("  const unsigned {}_dst = {};\n", n, tile_.offset_code(n + "_row", n + "_chunk"));
  return fmt::format("  unsigned {}_dst[{}];\n#pragma unroll\n  for (int i = 0; i < {}; ++i) {}_dst[i] = {};\n", n,
                     per_thread_, per_thread_, n,
                     tile_.offset_code(fmt::format("{}_row + i * {}", n, rows_per_pass_), n + "_chunk"));
}

std::string OperandLoad::setup(const std::string& outer0) const {
  if (packed_) return packed_setup(outer0);
  if (dequant_) return dequant_setup(outer0);
  const ir::GemmOperand& op = a_ ? k_.gemm.a : k_.gemm.b;
  const ir::KernelArg& arg = k_.args.at(static_cast<size_t>(op.arg));
  const ir::GemmLayout l = ir::gemm_layout(k_, a_);
  const std::string n = name(), src_type(storage_type(arg.type.dtype));
  std::string s = fmt::format("  // {}\n", describe());
  s += fmt::format("  const int {}_outer0 = {};\n", n, outer0);
  s += fmt::format("  const int {}_row = (int)threadIdx.x / {}, {}_chunk = (int)threadIdx.x % {};\n", n,
                   tile_.chunks_per_row(), n, tile_.chunks_per_row());
  const std::string offset = k_contiguous_
                                 ? fmt::format("(long long)({}_outer0 + {}_row) * {}ll + {}_chunk * {}", n, n, ld_, n,
                                               chunk_elems_)
                                 : fmt::format("(long long){}_row * {}ll + {}_outer0 + {}_chunk * {}", n, ld_, n, n,
                                               chunk_elems_);
  s += fmt::format("  const {}* {}_src = {} + {} + {};\n", src_type, n, param_,
                   batch_offset_code(k_.gemm.batch, l.batch_strides, "batch"), offset);
  s += dst_setup();
  if (!async_)
    s += fmt::format("  kiln_vec<{}, {}> {}_hold[{}];  // the next K step, in flight to registers\n", src_type,
                     chunk_elems_, n, per_thread_);
  return s;
}

std::string OperandLoad::issue(const std::string& in, const std::string& stage, const std::string& k0) const {
  if (packed_) return packed_issue(in, stage, k0);
  if (dequant_) return dequant_issue(in, k0);
  const ir::GemmOperand& op = a_ ? k_.gemm.a : k_.gemm.b;
  const ir::KernelArg& arg = k_.args.at(static_cast<size_t>(op.arg));
  const std::string n = name(), src_type(storage_type(arg.type.dtype));
  const std::string dst = uniform_swizzle_
                              ? fmt::format("{}_dst + i * {}", n, rows_per_pass_ * tile_.row_bytes())
                              : fmt::format("{}_dst[i]", n);
  const std::string src = k_contiguous_
                              ? fmt::format("{}_src + {} + i * {}ll", n, k0, int64_t{rows_per_pass_} * ld_)
                              : fmt::format("{}_src + (long long)({} + i * {}) * {}ll", n, k0, rows_per_pass_, ld_);
  std::string s = fmt::format("{}#pragma unroll\n{}for (int i = 0; i < {}; ++i) {}{{\n", in, in, per_thread_,
                              chunk_guard("i"));
  const std::string body = in + "  ";
  s += fmt::format("{}const {}* src = {};\n", body, src_type, src);
  if (async_) {
    const std::string inside = both_conditions(outer_in("i"), k_in("i", k0, ""));
    if (inside.empty()) {
      s += fmt::format("{}kiln_copy_async16_zfill(smem + {} + {}, src, 16);\n", body, stage, dst);
    } else {
      s += fmt::format("{}const bool in = {};\n", body, inside);
      s += fmt::format("{}kiln_copy_async16_zfill(smem + {} + {}, in ? src : {}, in ? 16 : 0);\n", body, stage, dst,
                       param_);
    }
  } else if (vector_source_) {
    const std::string inside = both_conditions(outer_in("i"), k_in("i", k0, ""));
    const std::string vec = fmt::format("kiln_vec<{}, {}>", src_type, chunk_elems_);
    if (inside.empty())
      s += fmt::format("{}{}_hold[i] = *reinterpret_cast<const {}*>(src);\n", body, n, vec);
    else
      s += fmt::format("{}{}_hold[i] = ({}) ? *reinterpret_cast<const {}*>(src) : {}{{}};\n", body, n, inside, vec,
                       vec);
  } else {
    // Element by element (rows that do not start at a multiple of 16 bytes): each one
    // tested against the edges of the matrix. (Reading each chunk through the two aligned
    // 16-byte words that cover it and shifting them into place measured 2.3x slower on
    // the H200: bench/NOTES.md.)
    s += fmt::format("{}#pragma unroll\n{}for (int j = 0; j < {}; ++j) {{\n", body, body, chunk_elems_);
    const std::string row_test = k_contiguous_ ? outer_in("i") : k_in("i", k0, "");
    std::string elem_test = k_contiguous_ ? k_in("i", k0, "j") : "";
    if (!k_contiguous_ && !outer_always_in_)
      elem_test = fmt::format("{}_outer0 + {}_chunk * {} + j < {}", n, n, chunk_elems_, outer_);
    const std::string inside = both_conditions(row_test, elem_test);
    if (inside.empty())
      s += fmt::format("{}  {}_hold[i].v[j] = src[j];\n", body, n);
    else
      s += fmt::format("{}  {}_hold[i].v[j] = ({}) ? src[j] : {};\n", body, n, inside, zero_storage(arg.type.dtype));
    s += body + "}\n";
  }
  return s + in + "}\n";
}

std::string OperandLoad::commit(const std::string& in, const std::string& stage, const std::string& k0) const {
  if (async_) return "";
  if (dequant_) return dequant_commit(in, stage, k0);
  const ir::GemmOperand& op = a_ ? k_.gemm.a : k_.gemm.b;
  const ir::KernelArg& arg = k_.args.at(static_cast<size_t>(op.arg));
  const std::string n = name();
  const std::string dst = uniform_swizzle_
                              ? fmt::format("{}_dst + i * {}", n, rows_per_pass_ * tile_.row_bytes())
                              : fmt::format("{}_dst[i]", n);
  std::string s = fmt::format("{}#pragma unroll\n{}for (int i = 0; i < {}; ++i) {}{{\n", in, in, per_thread_,
                              chunk_guard("i"));
  const std::string body = in + "  ";
  const std::string target = fmt::format("*reinterpret_cast<uint4*>(kiln_smem + {} + {})", stage, dst);
  if (op.prologue.empty()) {  // the stored elements as they are; out-of-range ones were loaded as zeros
    s += fmt::format("{}{} = *reinterpret_cast<const uint4*>(&{}_hold[i]);\n", body, target, n);
    return s + in + "}\n";
  }
  // The prologue on every element, in fp32; elements outside the matrix are zeros of
  // the operand, whatever the prologue would make of a zero.
  s += fmt::format("{}float v[{}];\n", body, chunk_elems_);
  s += fmt::format("{}#pragma unroll\n{}for (int j = 0; j < {}; ++j) {{\n", body, body, chunk_elems_);
  const std::string el = body + "  ";
  std::string inside;
  if (k_contiguous_) inside = both_conditions(outer_in("i"), k_in("i", k0, "j"));
  else
    inside = both_conditions(k_in("i", k0, ""),
                  outer_always_in_ ? "" : fmt::format("{}_outer0 + {}_chunk * {} + j < {}", n, n, chunk_elems_, outer_));
  s += el + "float p[" + std::to_string(op.prologue.size()) + "];\n";
  for (size_t id = 0; id < op.prologue.size(); ++id) {
    const ir::ScalarOp& p = op.prologue[id];
    std::string value;
    switch (p.kind) {
      case ir::ScalarKind::Load: value = load_expr(arg.type.dtype, fmt::format("{}_hold[i].v[j]", n)); break;
      case ir::ScalarKind::Const: value = const_expr(p.dtype, p.value); break;
      case ir::ScalarKind::Op:
        value = body_op_expr(op.prologue, p, [](int x) { return fmt::format("p[{}]", x); });
        break;
      default:
        throw Error(fmt::format("kernel @{}: operand {} prologue op %{} cannot be emitted", k_.name, n, id));
    }
    // A load or a constant may be an integer or boolean that the next op casts or
    // selects on (held in the float register exactly: i1 as 0 / 1); ops compute floats.
    if (!is_float(p.dtype) && p.kind == ir::ScalarKind::Op)
      throw Error(fmt::format("kernel @{}: operand {} prologue op %{} has dtype {}; a prologue computes floats",
                              k_.name, n, id, dtype_name(p.dtype)));
    s += fmt::format("{}p[{}] = {};\n", el, id, value);
  }
  const std::string last = fmt::format("p[{}]", op.prologue.size() - 1);
  s += fmt::format("{}v[j] = {};\n", el, inside.empty() ? last : fmt::format("({}) ? {} : 0.0f", inside, last));
  s += body + "}\n";
  if (k_.gemm.operand_dtype == DType::f32) {
    s += fmt::format("{}{} = make_uint4(__float_as_uint(v[0]), __float_as_uint(v[1]), __float_as_uint(v[2]), "
                     "__float_as_uint(v[3]));\n",
                     body, target);
  } else {
    s += fmt::format("{}{} = kiln_pack8_{}(v);\n", body, target, k_.gemm.operand_dtype == DType::f16 ? "f16" : "bf16");
  }
  return s + in + "}\n";
}

}  // namespace kiln::codegen
