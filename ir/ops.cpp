#include "ir/ops.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "ir/error.h"

namespace kiln::ir {

namespace {

std::vector<AttrSpec> schema_for(OpKind k) {
  using K = AttrKind;
  switch (k) {
    case OpKind::Gelu: return {{"approximate", K::String, AttrValue{std::string("none")}}};
    case OpKind::Const: return {{"value", K::Float, std::nullopt}};
    case OpKind::Iota: return {{"axis", K::Int, AttrValue{int64_t{0}}}};
    case OpKind::ReduceSum:
    case OpKind::ReduceMax:
    case OpKind::ReduceMin:
    case OpKind::ReduceMean:
    case OpKind::ReduceLogSumExp:
    case OpKind::ReduceVar:
      return {{"axis", K::IntList, std::nullopt}, {"keepdim", K::Bool, AttrValue{false}}};
    case OpKind::Transpose: return {{"perm", K::IntList, std::nullopt}};
    case OpKind::Matmul:
      return {{"transpose_a", K::Bool, AttrValue{false}}, {"transpose_b", K::Bool, AttrValue{false}}};
    case OpKind::Softmax:
    case OpKind::LogSoftmax: return {{"axis", K::Int, AttrValue{int64_t{-1}}}};
    case OpKind::LayerNorm: return {{"axis", K::Int, AttrValue{int64_t{-1}}}, {"eps", K::Float, AttrValue{1e-5}}};
    case OpKind::RmsNorm: return {{"axis", K::Int, AttrValue{int64_t{-1}}}, {"eps", K::Float, AttrValue{1e-6}}};
    case OpKind::Attention: return {{"scale", K::Float, std::nullopt}, {"causal", K::Bool, AttrValue{false}}};
    case OpKind::Dequant: return {{"group", K::Int, std::nullopt}};
    default: return {};
  }
}

bool annotated_type(OpKind k) {
  switch (k) {
    case OpKind::Const: case OpKind::Iota: case OpKind::Cast:
    case OpKind::Broadcast: case OpKind::Reshape: return true;
    default: return false;
  }
}

std::vector<OpInfo> build_table() {
  std::vector<OpInfo> t;
#define KILN_OP(Enum, text, category, arity) \
  t.push_back(OpInfo{OpKind::Enum, text, OpCategory::category, arity, schema_for(OpKind::Enum), annotated_type(OpKind::Enum)});
#include "ir/ops.def"
#undef KILN_OP
  return t;
}

const std::vector<OpInfo>& table() {
  static const std::vector<OpInfo> t = build_table();
  return t;
}

std::string types_str(const std::vector<TensorType>& ts) {
  std::string s;
  for (size_t i = 0; i < ts.size(); ++i) s += (i ? ", " : "") + ts[i].str();
  return s;
}

[[noreturn]] void fail(OpKind k, const std::vector<TensorType>& in, const std::string& rule) {
  if (in.empty()) throw Error(fmt::format("{}: {}", op_name(k), rule));
  throw Error(fmt::format("{}({}): {}", op_name(k), types_str(in), rule));
}

void require_float(OpKind k, const std::vector<TensorType>& in, const TensorType& t) {
  if (!is_float(t.dtype))
    fail(k, in, fmt::format("operands must be floating point (f32, f16, bf16), got {}", dtype_name(t.dtype)));
}

void require_same_dtype(OpKind k, const std::vector<TensorType>& in, size_t from) {
  for (size_t i = from + 1; i < in.size(); ++i)
    if (in[i].dtype != in[from].dtype)
      fail(k, in, fmt::format("operand dtypes must match ({} vs {}); insert a cast", dtype_name(in[from].dtype),
                              dtype_name(in[i].dtype)));
}

Shape broadcast_all(OpKind k, const std::vector<TensorType>& in) {
  Shape out;
  for (const auto& t : in) {
    auto b = broadcast_shapes(out, t.shape);
    if (!b) fail(k, in, "shapes do not broadcast (numpy rule: trailing dimensions must be equal or 1)");
    out = *b;
  }
  return out;
}

TensorType need_annotation(OpKind k, const std::vector<TensorType>& in, const std::optional<TensorType>& a) {
  if (!a) fail(k, in, "the result type must be given");
  // Kiln has no zero-size tensors: every dim holds at least one element.
  for (int64_t d : a->shape)
    if (d <= 0)
      fail(k, in, fmt::format("result shape {} has a dimension of size {}; dimensions must be positive (Kiln has "
                              "no zero-size tensors)", shape_str(a->shape), d));
  return *a;
}

// i8 and i4 hold quantised weights: dequant and cast read them, views move them, and
// nothing else computes on them.
void reject_storage_only(OpKind k, const std::vector<TensorType>& in) {
  for (const auto& t : in) {
    if (is_storage_only(t.dtype))
      fail(k, in, fmt::format("{} is a storage type for quantised weights: dequant or cast it to a float or i32 first",
                              dtype_name(t.dtype)));
    if (is_fp8(t.dtype))
      fail(k, in, fmt::format("{} is an fp8 storage type: cast it to f16, bf16 or f32 first", dtype_name(t.dtype)));
  }
}

void check_positive_dims(OpKind k, const std::vector<TensorType>& in) {
  for (const auto& t : in)
    for (int64_t d : t.shape)
      if (d <= 0) fail(k, in, fmt::format("dimensions must be positive (Kiln has no zero-size tensors), got {}", t.str()));
}

TensorType infer_reduce(OpKind k, const std::vector<TensorType>& in, const Attrs& attrs) {
  const TensorType& x = in[0];
  const auto& axes = attrs.get_ints("axis");
  if (axes.empty()) fail(k, in, "axis must name at least one axis");
  std::vector<bool> reduced(x.rank(), false);
  for (int64_t a : axes) {
    auto n = normalize_axis(a, x.rank());
    if (!n) fail(k, in, fmt::format("axis {} is out of range for rank {}", a, x.rank()));
    if (reduced[*n]) fail(k, in, fmt::format("axis {} is named twice", a));
    reduced[*n] = true;
  }
  // Averages, exponentials and variances have no integer meaning.
  if (k == OpKind::ReduceMean || k == OpKind::ReduceLogSumExp || k == OpKind::ReduceVar) require_float(k, in, x);
  if (x.dtype == DType::i1) fail(k, in, "cannot reduce i1 values; cast them first");
  reject_storage_only(k, in);
  bool keep = attrs.get_bool("keepdim");
  Shape out;
  for (int i = 0; i < x.rank(); ++i) {
    if (!reduced[i]) out.push_back(x.shape[i]);
    else if (keep) out.push_back(1);
  }
  return {x.dtype, out};
}

TensorType infer_matmul(OpKind k, const std::vector<TensorType>& in, const Attrs& attrs) {
  const TensorType &a = in[0], &b = in[1];
  if (a.rank() < 2 || b.rank() < 2) fail(k, in, "operands must have rank >= 2 ([..., M, K] x [..., K, N])");
  require_float(k, in, a);
  require_same_dtype(k, in, 0);
  bool ta = attrs.get_bool("transpose_a"), tb = attrs.get_bool("transpose_b");
  int64_t m = a.shape[a.rank() - (ta ? 1 : 2)], ka = a.shape[a.rank() - (ta ? 2 : 1)];
  int64_t kb = b.shape[b.rank() - (tb ? 1 : 2)], n = b.shape[b.rank() - (tb ? 2 : 1)];
  if (ka != kb)
    fail(k, in, fmt::format("contraction sizes differ: K = {} in the first operand, {} in the second "
                            "(transpose_a = {}, transpose_b = {})", ka, kb, ta, tb));
  Shape batch_a(a.shape.begin(), a.shape.end() - 2), batch_b(b.shape.begin(), b.shape.end() - 2);
  auto batch = broadcast_shapes(batch_a, batch_b);
  if (!batch) fail(k, in, "batch dimensions do not broadcast");
  Shape out = *batch;
  out.push_back(m);
  out.push_back(n);
  return {a.dtype, out};
}

TensorType infer_dequant(OpKind k, const std::vector<TensorType>& in, const Attrs& attrs) {
  if (in.size() < kDequantMinOperands || in.size() > kDequantMaxOperands)
    fail(k, in, fmt::format("expects 2 or 3 operands (weights, scales[, zero points]), got {}", in.size()));
  const TensorType &w = in[0], &s = in[1];
  if (!is_storage_only(w.dtype))
    fail(k, in, fmt::format("the weights must be i8 or i4, got {}", dtype_name(w.dtype)));
  if (!is_float(s.dtype)) fail(k, in, fmt::format("the scales must be f32, f16 or bf16, got {}", dtype_name(s.dtype)));
  if (w.rank() < 1) fail(k, in, "the weights must have rank >= 1 (groups run along the last axis)");
  const int64_t kk = w.shape.back(), group = attrs.get_int("group");
  if (group < 1 || kk % group != 0)
    fail(k, in, fmt::format("group = {} must be positive and divide the last axis ({})", group, kk));
  Shape want = w.shape;
  want.back() = kk / group;
  if (s.shape != want)
    fail(k, in, fmt::format("the scales must have shape {} (one per group of {} along the last axis)", shape_str(want),
                            group));
  if (in.size() == 3) {
    const TensorType& z = in[2];
    if (z.shape != want) fail(k, in, fmt::format("the zero points must have the scales' shape {}", shape_str(want)));
    if (z.dtype != s.dtype && z.dtype != w.dtype)
      fail(k, in, fmt::format("the zero points must have the scales' dtype ({}) or the weights' ({}), got {}",
                              dtype_name(s.dtype), dtype_name(w.dtype), dtype_name(z.dtype)));
  }
  return {s.dtype, w.shape};
}

TensorType infer_composite(OpKind k, const std::vector<TensorType>& in, const Attrs& attrs) {
  const TensorType& x = in[0];
  require_float(k, in, x);
  require_same_dtype(k, in, 0);
  if (k == OpKind::Attention) {
    const TensorType &q = in[0], &kk = in[1], &v = in[2];
    if (q.rank() < 2 || kk.rank() < 2 || v.rank() < 2)
      fail(k, in, "q, k, v must have rank >= 2 ([..., S, D])");
    if (q.rank() != kk.rank() || q.rank() != v.rank()) fail(k, in, "q, k and v must have the same rank");
    int r = q.rank();
    // Batch dims broadcast as numpy's do: k and v of size 1 where a group of query heads
    // shares them (grouped-query attention).
    Shape bq(q.shape.begin(), q.shape.end() - 2), bk(kk.shape.begin(), kk.shape.end() - 2),
        bv(v.shape.begin(), v.shape.end() - 2);
    auto qk_batch = broadcast_shapes(bq, bk);
    auto batch = qk_batch ? broadcast_shapes(*qk_batch, bv) : std::nullopt;
    if (!batch)
      fail(k, in, "the batch dimensions of q, k and v do not broadcast");
    if (q.shape[r - 1] != kk.shape[r - 1]) fail(k, in, "q and k must have the same head dimension D");
    if (kk.shape[r - 2] != v.shape[r - 2]) fail(k, in, "k and v must have the same sequence length");
    Shape out = *batch;
    out.push_back(q.shape[r - 2]);
    out.push_back(v.shape[r - 1]);
    return {q.dtype, out};
  }
  auto axis = normalize_axis(attrs.get_int("axis"), x.rank());
  if (!axis) fail(k, in, fmt::format("axis {} is out of range for rank {}", attrs.get_int("axis"), x.rank()));
  if (k == OpKind::LayerNorm || k == OpKind::RmsNorm) {
    if (attrs.get_float("eps") < 0) fail(k, in, "eps must be >= 0");
    for (size_t i = 1; i < in.size(); ++i)
      if (in[i].shape != Shape{x.shape[*axis]})
        fail(k, in, fmt::format("weight and bias must have shape [{}] (the size of axis {})", x.shape[*axis], *axis));
  }
  return x;
}

}  // namespace

const OpInfo& op_info(OpKind k) { return table()[static_cast<size_t>(k)]; }
std::string_view op_name(OpKind k) { return op_info(k).name; }

const std::vector<OpKind>& all_ops() {
  static const std::vector<OpKind> ops = [] {
    std::vector<OpKind> v;
    for (const auto& info : table()) v.push_back(info.kind);
    return v;
  }();
  return ops;
}

std::optional<OpKind> find_op(std::string_view name, int num_operands) {
  std::optional<OpKind> any;
  for (const auto& info : table()) {
    if (info.name != name) continue;
    if (info.arity == num_operands || info.arity < 0) return info.kind;
    any = info.kind;
  }
  return any;  // the name exists with another arity: the verifier reports the count
}

bool is_elementwise(OpKind k) {
  switch (op_info(k).category) {
    case OpCategory::Unary: case OpCategory::Cast: case OpCategory::Binary:
    case OpCategory::Compare: case OpCategory::Select: return true;
    default: return false;
  }
}

Attrs complete_attrs(OpKind k, const Attrs& given) {
  const OpInfo& info = op_info(k);
  for (const auto& item : given.items()) {
    const std::string& name = item.first;  // not a structured binding: clang 14 cannot capture one
    auto spec = std::find_if(info.attrs.begin(), info.attrs.end(), [&](const AttrSpec& s) { return s.name == name; });
    if (spec == info.attrs.end()) {
      std::string known;
      for (const auto& s : info.attrs) known += (known.empty() ? "" : ", ") + std::string(s.name);
      throw Error(fmt::format("{}: unknown attribute '{}' (known: {})", info.name, name,
                              known.empty() ? "none" : known));
    }
  }
  Attrs out;
  for (const auto& spec : info.attrs) {
    const AttrValue* v = given.find(std::string(spec.name));
    if (!v) {
      if (!spec.default_value) throw Error(fmt::format("{}: attribute '{}' is required", info.name, spec.name));
      out.set(std::string(spec.name), *spec.default_value);
      continue;
    }
    AttrValue value = *v;
    // An integer literal is a fine float ("eps = 1").
    if (spec.kind == AttrKind::Float && attr_kind_of(value) == AttrKind::Int)
      value = static_cast<double>(std::get<int64_t>(value));
    // A single integer is a fine axis list ("axis = 1").
    if (spec.kind == AttrKind::IntList && attr_kind_of(value) == AttrKind::Int)
      value = std::vector<int64_t>{std::get<int64_t>(value)};
    if (attr_kind_of(value) != spec.kind)
      throw Error(fmt::format("{}: attribute '{}' must be {}, got {}", info.name, spec.name,
                              attr_kind_name(spec.kind), attr_kind_name(attr_kind_of(value))));
    out.set(std::string(spec.name), std::move(value));
  }
  return out;
}

TensorType infer_type(OpKind k, const std::vector<TensorType>& in, const Attrs& attrs,
                      const std::optional<TensorType>& annotated) {
  const OpInfo& info = op_info(k);
  if (info.arity >= 0 && static_cast<int>(in.size()) != info.arity)
    fail(k, in, fmt::format("expects {} operand{}, got {}", info.arity, info.arity == 1 ? "" : "s", in.size()));
  check_positive_dims(k, in);
  switch (info.category) {
    case OpCategory::Unary:
      reject_storage_only(k, in);
      if (k == OpKind::Neg || k == OpKind::Abs) {
        if (in[0].dtype == DType::i1) fail(k, in, "operand must be numeric, got i1");
      } else {
        require_float(k, in, in[0]);
      }
      if (k == OpKind::Gelu) {
        const auto& mode = attrs.get_string("approximate");
        if (mode != "tanh" && mode != "none")
          fail(k, in, fmt::format("approximate must be \"tanh\" or \"none\", got \"{}\"", mode));
      }
      return in[0];
    case OpCategory::Cast: {
      TensorType out = need_annotation(k, in, annotated);
      if (out.shape != in[0].shape)
        fail(k, in, fmt::format("cast keeps the shape; result {} has another shape", out.str()));
      if (out.dtype == DType::i4)
        fail(k, in, "Kiln reads i4 weights but does not write them: cast to i8 or a wider type");
      return out;
    }
    case OpCategory::Binary:
    case OpCategory::Compare: {
      reject_storage_only(k, in);
      require_same_dtype(k, in, 0);
      if (in[0].dtype == DType::i1 && k != OpKind::Eq && k != OpKind::Ne)
        fail(k, in, "operands must be numeric, got i1");
      if (k == OpKind::Pow) require_float(k, in, in[0]);
      Shape s = broadcast_all(k, in);
      return {info.category == OpCategory::Compare ? DType::i1 : in[0].dtype, s};
    }
    case OpCategory::Select: {
      if (in[0].dtype != DType::i1)
        fail(k, in, fmt::format("the condition must be i1, got {}", dtype_name(in[0].dtype)));
      reject_storage_only(k, in);
      require_same_dtype(k, in, 1);
      return {in[1].dtype, broadcast_all(k, in)};
    }
    case OpCategory::Source: {
      TensorType out = need_annotation(k, in, annotated);
      if (is_storage_only(out.dtype) || is_fp8(out.dtype))
        fail(k, in, fmt::format("{} cannot produce {}, a storage type; cast to it instead", info.name,
                                dtype_name(out.dtype)));
      if (k == OpKind::Iota) {
        if (out.dtype != DType::i32 && !is_float(out.dtype))
          fail(k, in, fmt::format("iota produces i32 or a float type, not {}", dtype_name(out.dtype)));
        if (!normalize_axis(attrs.get_int("axis"), out.rank()))
          fail(k, in, fmt::format("axis {} is out of range for {}", attrs.get_int("axis"), out.str()));
      }
      if (k == OpKind::Const && out.dtype == DType::i1) {
        double v = attrs.get_float("value");
        if (v != 0 && v != 1) fail(k, in, "an i1 constant must be 0 or 1");
      }
      return out;
    }
    case OpCategory::Reduce: return infer_reduce(k, in, attrs);
    case OpCategory::View: {
      const TensorType& x = in[0];
      if (k == OpKind::Transpose) {
        const auto& perm = attrs.get_ints("perm");
        if (static_cast<int>(perm.size()) != x.rank())
          fail(k, in, fmt::format("perm has {} entries; the operand has rank {}", perm.size(), x.rank()));
        std::vector<bool> seen(x.rank(), false);
        Shape out(x.rank());
        for (size_t i = 0; i < perm.size(); ++i) {
          if (perm[i] < 0 || perm[i] >= x.rank() || seen[perm[i]])
            fail(k, in, "perm must be a permutation of 0 .. rank-1");
          seen[perm[i]] = true;
          out[i] = x.shape[perm[i]];
        }
        return {x.dtype, out};
      }
      TensorType out = need_annotation(k, in, annotated);
      if (out.dtype != x.dtype)
        fail(k, in, fmt::format("{} keeps the dtype; result {} has another", info.name, out.str()));
      if (k == OpKind::Broadcast && !broadcasts_to(x.shape, out.shape))
        fail(k, in, fmt::format("{} does not broadcast to {} (numpy rule)", x.str(), shape_str(out.shape)));
      if (k == OpKind::Reshape && numel(out.shape) != x.numel())
        fail(k, in, fmt::format("reshape keeps the element count: {} has {}, {} has {}", x.str(), x.numel(),
                                shape_str(out.shape), numel(out.shape)));
      return out;
    }
    case OpCategory::Matmul: return infer_matmul(k, in, attrs);
    case OpCategory::Dequant: return infer_dequant(k, in, attrs);
    case OpCategory::Composite: return infer_composite(k, in, attrs);
  }
  fail(k, in, "unknown op category");
}

std::vector<int> reduce_axes(const Attrs& attrs, int rank) {
  std::vector<int> axes;
  for (int64_t a : attrs.get_ints("axis")) axes.push_back(*normalize_axis(a, rank));
  std::sort(axes.begin(), axes.end());
  return axes;
}

int single_axis(const Attrs& attrs, int rank) { return *normalize_axis(attrs.get_int("axis"), rank); }

int reduce_state_size(OpKind k) {
  if (k == OpKind::ReduceLogSumExp) return 2;
  if (k == OpKind::ReduceVar) return 3;
  return 1;
}

}  // namespace kiln::ir
