// The gemm kind's kernel IR: operand layouts, the matmul line of the text form and
// the checks of a gemm kernel's core (see kernel_gemm.h).
#include "ir/kernel_gemm.h"

#include <fmt/format.h>

#include "ir/error.h"
#include "ir/kernel.h"

namespace kiln::ir {

namespace {

// The logical operand's shape: [batch..., M, K] for A, [batch..., K, N] for B.
Shape operand_space(const GemmCore& g, bool operand_a) {
  Shape s = g.batch;
  s.push_back(operand_a ? g.m : g.k);
  s.push_back(operand_a ? g.k : g.n);
  return s;
}

std::string strides_str(const std::vector<int64_t>& v) { return fmt::format("[{}]", fmt::join(v, ",")); }

// A dequantised operand: B, an i8 / i4 weight [N, K] read K-contiguous with rows of K
// (a weight every batch entry shares), f16 or bf16 products, scales (and zero points)
// [N, K / group] in arguments of their own.
template <class Fail>
void verify_dequant(const Kernel& k, bool operand_a, const Fail& fail) {
  const GemmCore& g = k.gemm;
  const GemmOperand& op = operand_a ? g.a : g.b;
  const KernelArg& w = k.args.at(static_cast<size_t>(op.arg));
  if (operand_a) fail("operand A cannot be dequantised (weights are operand B)");
  if (!is_storage_only(w.type.dtype)) fail(fmt::format("dequantised operand %{} holds {}, not i8 or i4", w.name, w.type.str()));
  if (!op.prologue.empty()) fail("a dequantised operand has no prologue");
  if (g.operand_dtype != DType::f16 && g.operand_dtype != DType::bf16)
    fail(fmt::format("dequantised weights feed f16 or bf16 products, not {}", dtype_name(g.operand_dtype)));
  const GemmLayout l = gemm_layout(k, false);
  if (op.dequant.interleave != 0) {
    // [N / 8, K / E, 8, E]: the 16-byte pieces of 8 rows side by side (E elements each).
    const int64_t e = gemm_piece_elems(w.type.dtype);
    const Shape pieces{g.n / 8, g.k / e, 8, e};
    if (op.dequant.interleave != 8 || g.n % 8 != 0 || g.k % e != 0 || w.type.shape != pieces || !l.k_contiguous ||
        l.ld != g.k)
      fail(fmt::format("interleaved operand %{} ({}) must be a [N / 8, K / {}, 8, {}] = {} weight, 8 rows a piece",
                       w.name, w.type.str(), e, e, shape_str(pieces)));
  } else if (w.type.shape != Shape{g.n, g.k} || !l.k_contiguous || l.ld != g.k) {
    fail(fmt::format("dequantised operand %{} ({}) must be a [N, K] = [{}, {}] weight read K-contiguous", w.name,
                     w.type.str(), g.n, g.k));
  }
  for (int64_t s : l.batch_strides)
    if (s != 0) fail(fmt::format("dequantised operand %{} must be shared by every batch entry", w.name));
  if (op.dequant.group < 1 || g.k % op.dequant.group != 0)
    fail(fmt::format("dequant group {} does not divide K = {}", op.dequant.group, g.k));
  const Shape groups{g.n, g.k / op.dequant.group};
  for (int arg : {op.dequant.scale, op.dequant.zero}) {
    if (arg < 0 && arg == op.dequant.zero) continue;
    if (arg < 0 || static_cast<size_t>(arg) >= k.args.size()) fail("the dequant scales name no argument");
    const KernelArg& s = k.args[static_cast<size_t>(arg)];
    if (s.is_output || s.type.shape != groups)
      fail(fmt::format("dequant argument %{} ({}) must be an input of shape {}", s.name, s.type.str(), shape_str(groups)));
    const bool zero_of_weight_type = arg == op.dequant.zero && s.type.dtype == w.type.dtype;
    if (!is_float(s.type.dtype) && !zero_of_weight_type)
      fail(fmt::format("dequant argument %{} holds {}; scales and zero points are floats (or zero points of the "
                       "weights' type)", s.name, dtype_name(s.type.dtype)));
  }
}

}  // namespace

int gemm_piece_elems(DType stored) { return 128 / dtype_bits(stored); }

bool gemm_rows_of_k(const Kernel& k, bool operand_a) {
  const GemmLayout l = gemm_layout(k, operand_a);
  for (int64_t s : l.batch_strides)
    if (s != 0) return false;
  return l.k_contiguous && l.ld == k.gemm.k;
}

GemmLayout gemm_layout(const Kernel& k, bool operand_a) {
  const GemmOperand& op = operand_a ? k.gemm.a : k.gemm.b;
  const std::vector<int64_t>& st = k.args.at(static_cast<size_t>(op.arg)).strides;
  const size_t r = st.size();
  // Matrix dims: for A (rows M, cols K), for B (rows K, cols N).
  const int64_t rows_stride = st[r - 2], cols_stride = st[r - 1];
  const int64_t k_stride = operand_a ? cols_stride : rows_stride;
  const int64_t other_stride = operand_a ? rows_stride : cols_stride;
  const int64_t outer = operand_a ? k.gemm.m : k.gemm.n;
  GemmLayout l;
  l.outer = outer;
  l.batch_strides.assign(st.begin(), st.end() - 2);
  // A dim of size 1 has stride 0 and no say: the other dim decides, and a row stride
  // of 0 along a single row is replaced by the extent it would have (any value reads
  // the same elements). A broadcast dim of more rows keeps its stride of 0: each of its
  // rows reads the same elements, which a stride of the row's extent would walk past.
  if (k.gemm.k == 1) l.k_contiguous = other_stride != 1;
  else l.k_contiguous = k_stride == 1;
  const int64_t row_stride = l.k_contiguous ? other_stride : k_stride;
  const int64_t rows = l.k_contiguous ? outer : k.gemm.k;
  l.ld = row_stride != 0 || rows != 1 ? row_stride : (l.k_contiguous ? k.gemm.k : outer);
  return l;
}

namespace {

// Whether every chunk of `chunk` elements along the operand's contiguous dim starts at
// a multiple of `chunk` and lies inside the matrix.
bool chunks_aligned(const Kernel& k, bool operand_a, int64_t chunk) {
  const GemmLayout l = gemm_layout(k, operand_a);
  const int64_t extent = l.k_contiguous ? k.gemm.k : l.outer;
  bool aligned = extent % chunk == 0 && l.ld % chunk == 0;
  for (int64_t s : l.batch_strides) aligned = aligned && s % chunk == 0;
  return aligned;
}

}  // namespace

bool gemm_operand_async(const Kernel& k, bool operand_a) {
  const GemmOperand& op = operand_a ? k.gemm.a : k.gemm.b;
  return op.prologue.empty() && !op.dequant.active() &&
         chunks_aligned(k, operand_a, 16 / dtype_bytes(k.gemm.operand_dtype));
}

bool gemm_operand_arg(const Kernel& k, int arg) {
  if (k.kind != KernelKind::Gemm) return false;
  for (const GemmOperand* op : {&k.gemm.a, &k.gemm.b})
    if (arg == op->arg || (op->dequant.active() && (arg == op->dequant.scale || arg == op->dequant.zero))) return true;
  return false;
}

bool gemm_dequant_word_loads(const Kernel& k) { return k.gemm.b.dequant.active() && chunks_aligned(k, false, 8); }

bool gemm_operand_vector_loads(const Kernel& k, bool operand_a) {
  const GemmOperand& op = operand_a ? k.gemm.a : k.gemm.b;
  const int64_t chunk = 16 / dtype_bytes(k.gemm.operand_dtype);
  const int src_bytes = dtype_bytes(k.args.at(static_cast<size_t>(op.arg)).type.dtype);
  if (op.dequant.active()) return false;  // its loads are gemm_dequant_word_loads'
  return chunk * src_bytes <= 32 && chunks_aligned(k, operand_a, chunk);
}

std::optional<DType> gemm_fp8_operand(const Kernel& k, bool operand_a) {
  const GemmOperand& op = operand_a ? k.gemm.a : k.gemm.b;
  const std::vector<ScalarOp>& p = op.prologue;
  if (p.size() != 2 || p[0].kind != ScalarKind::Load || p[0].arg != op.arg || !is_fp8(p[0].dtype)) return std::nullopt;
  const ScalarOp& widen = p[1];
  if (widen.kind != ScalarKind::Op || widen.op != OpKind::Cast || widen.operands != std::vector<int>{0} ||
      widen.dtype != k.gemm.operand_dtype)
    return std::nullopt;
  return p[0].dtype;
}

bool gemm_fp8_products(const Kernel& k) { return gemm_fp8_operand(k, true) && gemm_fp8_operand(k, false); }

int gemm_tile_element_bytes(const Kernel& k) {
  return gemm_fp8_products(k) ? 1 : dtype_bytes(k.gemm.operand_dtype);
}

bool gemm_operand_tma(const Kernel& k, bool operand_a) {
  const GemmOperand& op = operand_a ? k.gemm.a : k.gemm.b;
  const DType t = k.gemm.operand_dtype;
  const GemmLayout l = gemm_layout(k, operand_a);
  if (gemm_fp8_products(k)) {
    if (!l.k_contiguous) return false;
  } else {
    if (!op.prologue.empty() || (t != DType::f16 && t != DType::bf16)) return false;
    if (k.args.at(static_cast<size_t>(op.arg)).type.dtype != t) return false;
  }
  const int64_t chunk = 16 / gemm_tile_element_bytes(k);
  bool legal = l.ld % chunk == 0 && l.ld > 0;
  int batch_dims = 0;
  for (int64_t s : l.batch_strides) {
    legal = legal && s % chunk == 0;
    batch_dims += s != 0;
  }
  return legal && batch_dims <= 3;
}

bool gemm_operand_stageable(const Kernel& k, bool operand_a) {
  const GemmOperand& op = operand_a ? k.gemm.a : k.gemm.b;
  const DType t = k.gemm.operand_dtype;
  if (!op.prologue.empty() || (t != DType::f16 && t != DType::bf16)) return false;
  if (k.args.at(static_cast<size_t>(op.arg)).type.dtype != t) return false;
  for (int64_t s : gemm_layout(k, operand_a).batch_strides)
    if (s != 0) return false;
  return true;
}

int64_t gemm_staged_ld(const Kernel& k, bool operand_a) {
  const GemmLayout l = gemm_layout(k, operand_a);
  const int64_t chunk = 16 / dtype_bytes(k.gemm.operand_dtype);
  const int64_t inner = l.k_contiguous ? k.gemm.k : l.outer;
  return (inner + chunk - 1) / chunk * chunk;
}

std::string gemm_compute_name(const GemmCore& g) {
  if (g.operand_dtype == DType::f32 && g.tf32) return "tf32";
  return std::string(dtype_name(g.operand_dtype));
}

int64_t gemm_batch_count(const GemmCore& g) { return numel(g.batch); }

std::string gemm_core_str(const Kernel& k) {
  const GemmCore& g = k.gemm;
  auto operand = [&](bool a) {
    const GemmOperand& op = a ? g.a : g.b;
    const KernelArg& arg = k.args.at(static_cast<size_t>(op.arg));
    const GemmLayout l = gemm_layout(k, a);
    std::string s = fmt::format("{} %{} strides{} [{} contiguous]", a ? "a" : "b", arg.name, strides_str(arg.strides),
                                l.k_contiguous ? "K" : (a ? "M" : "N"));
    if (op.dequant.active()) {
      s += fmt::format(" dequant {{scales %{}", k.args.at(static_cast<size_t>(op.dequant.scale)).name);
      if (op.dequant.zero >= 0) s += fmt::format(", zeros %{}", k.args.at(static_cast<size_t>(op.dequant.zero)).name);
      s += fmt::format(", group {}", op.dequant.group);
      if (op.dequant.interleave != 0) s += fmt::format(", interleaved by {} rows", op.dequant.interleave);
      s += "}";
    }
    if (!op.prologue.empty()) {
      s += " prologue {";
      for (size_t id = 0; id < op.prologue.size(); ++id)
        s += (id ? "; " : " ") + print_scalar_op(k, op.prologue[id], id);
      s += " }";
    }
    return s;
  };
  std::string batch = g.batch.empty() ? "" : fmt::format("batch {} ", shape_str(g.batch));
  return fmt::format("matmul {}{}x{}x{} {} {} {} -> f32", batch, g.m, g.n, g.k, operand(true), operand(false),
                     gemm_compute_name(g));
}

void verify_gemm(const Kernel& k) {
  auto fail = [&](const std::string& what) { throw Error(fmt::format("kernel @{}: {}", k.name, what)); };
  const GemmCore& g = k.gemm;
  if (g.m < 1 || g.n < 1 || g.k < 1) fail(fmt::format("matmul sizes {}x{}x{} must be positive", g.m, g.n, g.k));
  if (g.operand_dtype != DType::f16 && g.operand_dtype != DType::bf16 && g.operand_dtype != DType::f32)
    fail(fmt::format("matmul operands must be f16, bf16 or f32, not {}", dtype_name(g.operand_dtype)));
  if (g.tf32 && g.operand_dtype != DType::f32) fail("tf32 applies to f32 operands only");
  Shape out = g.batch;
  out.push_back(g.m);
  out.push_back(g.n);
  if (k.space() != out)
    fail(fmt::format("the output space {} is not the product's [batch..., M, N] = {}", shape_str(k.space()),
                     shape_str(out)));
  for (bool a : {true, false}) {
    const GemmOperand& op = a ? g.a : g.b;
    const char* which = a ? "A" : "B";
    if (op.arg < 0 || static_cast<size_t>(op.arg) >= k.args.size()) fail(fmt::format("operand {} names no argument", which));
    const KernelArg& arg = k.args[static_cast<size_t>(op.arg)];
    if (arg.is_output) fail(fmt::format("operand {} (%{}) is an output", which, arg.name));
    const Shape space = operand_space(g, a);
    if (arg.strides.size() != space.size())
      fail(fmt::format("operand {} (%{}) has {} strides; its space {} has rank {}", which, arg.name,
                       arg.strides.size(), shape_str(space), space.size()));
    int64_t last = 0;
    for (size_t d = 0; d < space.size(); ++d) {
      if (arg.strides[d] < 0) fail(fmt::format("operand {} (%{}) has a negative stride", which, arg.name));
      last += (space[d] - 1) * arg.strides[d];
    }
    if (last >= arg.type.numel())
      fail(fmt::format("operand {} (%{}: {}) is read at offset {}, past its end", which, arg.name, arg.type.str(),
                       last));
    const size_t r = space.size();
    const int64_t k_stride = a ? arg.strides[r - 1] : arg.strides[r - 2];
    const int64_t other = a ? arg.strides[r - 2] : arg.strides[r - 1];
    const bool k_one = g.k == 1, other_one = (a ? g.m : g.n) == 1;
    if (!(k_stride == 1 || k_one) && !(other == 1 || other_one))
      fail(fmt::format("operand {} (%{}) strides {} have no contiguous matrix dim (stride 1 along K or along {})",
                       which, arg.name, strides_str(arg.strides), a ? "M" : "N"));
    if (op.dequant.active()) {
      verify_dequant(k, a, fail);
      continue;
    }
    // The prologue: loads of the operand, element-wise ops, a last value of the operand dtype.
    const DType want = op.prologue.empty() ? arg.type.dtype : op.prologue.back().dtype;
    if (want != g.operand_dtype)
      fail(fmt::format("operand {} gives {} elements; the products multiply {}", which, dtype_name(want),
                       dtype_name(g.operand_dtype)));
    for (size_t id = 0; id < op.prologue.size(); ++id) {
      const ScalarOp& p = op.prologue[id];
      for (int x : p.operands)
        if (x < 0 || static_cast<size_t>(x) >= id)
          fail(fmt::format("operand {} prologue op %{} uses %{}, which is not defined before it", which, id, x));
      const bool ok = (p.kind == ScalarKind::Load && p.arg == op.arg && p.dtype == arg.type.dtype) ||
                      p.kind == ScalarKind::Const ||
                      (p.kind == ScalarKind::Op && is_elementwise(p.op) &&
                       static_cast<int>(p.operands.size()) == op_info(p.op).arity);
      if (!ok)
        fail(fmt::format("operand {} prologue op %{} ({}) must load the operand, be a constant or an element-wise op",
                         which, id, print_scalar_op(k, p, id)));
    }
  }
  int acc = 0;
  for (const ScalarOp& op : k.body) acc += op.kind == ScalarKind::Acc;
  if (acc > 1) fail("the epilogue reads the accumulator more than once");
}

}  // namespace kiln::ir
