#include "tests/fuzz/magnitude.h"

#include <cmath>

#include "ir/interpreter.h"
#include "ir/ops.h"

namespace kiln::fuzz {

namespace {

using ir::OpKind;
using ir::Value;

class MagnitudeGraph {
public:
  explicit MagnitudeGraph(const ir::Graph& g) : out_(g.name()) {
    for (const Value* in : g.inputs()) map_[in] = out_.add_input(in->name, in->type);
    for (const ir::Node* n : g.nodes()) {
      std::vector<Value*> operands;
      for (const Value* o : n->operands) operands.push_back(map_.at(o));
      Value* r = out_.add(n->op, operands, n->attrs, n->result->type);
      map_[n->result] = r;
      const ir::OpCategory c = ir::op_info(n->op).category;
      if (!is_float(r->type.dtype) || c == ir::OpCategory::Source || c == ir::OpCategory::View) continue;
      out_.add_output(r);
      order_.push_back({n->result, Kind::Value});
      if (Value* m = magnitude(*n, operands)) {
        out_.add_output(m);
        order_.push_back({n->result, Kind::Magnitude});
      }
      if (Value* o = out_of_range(*n, operands)) {
        out_.add_output(o);
        order_.push_back({n->result, Kind::OutOfRange});
      }
    }
  }

  Intermediates evaluate(const std::vector<HostTensor>& inputs) const {
    std::vector<HostTensor> got = ir::evaluate(out_, inputs);
    Intermediates r;
    for (size_t i = 0; i < order_.size(); ++i) {
      auto& into = order_[i].second == Kind::Value       ? r.values
                   : order_[i].second == Kind::Magnitude ? r.magnitudes
                                                         : r.out_of_range;
      into[order_[i].first] = std::move(got[i]);
    }
    return r;
  }

private:
  Value* f32(Value* v) {
    if (v->type.dtype == DType::f32) return v;
    return out_.add(OpKind::Cast, {v}, {}, TensorType{DType::f32, v->type.shape});
  }
  Value* abs(Value* v) { return out_.add(OpKind::Abs, {f32(v)}); }
  Value* shaped(Value* m, const Shape& shape) {
    if (m->type.shape == shape) return m;
    const TensorType t{m->type.dtype, shape};
    if (m->type.numel() == t.numel()) return out_.add(OpKind::Reshape, {m}, {}, t);
    return out_.add(OpKind::Broadcast, {m}, {}, t);
  }

  // A per-axis weight [N] of a rank-r value normalised along `axis`, as [N,1,...,1].
  Value* along_axis(Value* w, int axis, int rank) {
    if (axis == rank - 1) return w;
    Shape shape(static_cast<size_t>(rank - axis), 1);
    shape[0] = w->type.shape[0];
    return out_.add(OpKind::Reshape, {w}, {}, TensorType{w->type.dtype, shape});
  }

  // layer_norm subtracts the mean, then scales by rsqrt(var + eps) and w and adds b: x -
  // mean is known to a unit of the row's largest |x|, so the result to that unit times
  // rsqrt(var + eps) |w|, or to a unit of |b| where the bias cancels the rest.
  Value* layer_norm_magnitude(const ir::Node& n, const std::vector<Value*>& in) {
    const int rank = n.result->type.rank(), axis = ir::single_axis(n.attrs, rank);
    ir::Attrs over;
    over.set("axis", std::vector<int64_t>{axis});
    over.set("keepdim", true);
    Value* x = f32(in[0]);
    Value* largest = out_.add(OpKind::ReduceMax, {abs(x)}, over);
    Value* var = out_.add(OpKind::ReduceVar, {x}, over);
    Value* eps = out_.constant(n.attrs.get_float("eps"), DType::f32);
    Value* inverse = out_.add(OpKind::Rsqrt, {out_.add(OpKind::Add, {var, eps})});
    Value* scaled = out_.add(OpKind::Mul, {out_.add(OpKind::Mul, {largest, inverse}), along_axis(abs(in[1]), axis, rank)});
    return out_.add(OpKind::Max, {scaled, along_axis(abs(in[2]), axis, rank)});
  }

  // Where a kernel cannot follow the reference, an i1 true (null for ops where it can):
  // var and the norms square their inputs in fp32, and past sqrt(FLT_MAX) (1.8e19) the
  // squares overflow where the reference, in double, goes on; attention multiplies the
  // rows of v of the keys a mask hides by a probability of 0 (in its diagonal tile or its
  // three-kernel form), which an infinite or NaN v turns into NaN where the reference
  // leaves those keys out.
  Value* out_of_range(const ir::Node& n, const std::vector<Value*>& in) {
    if (n.op == OpKind::Attention) {
      ir::Attrs keys;
      keys.set("axis", std::vector<int64_t>{-2});
      keys.set("keepdim", true);
      // 0 |v| summed over the keys is NaN exactly where a v is infinite or NaN.
      Value* zeroed = out_.add(OpKind::Mul, {abs(in[2]), out_.constant(0.0, DType::f32)});
      Value* sum = out_.add(OpKind::ReduceSum, {zeroed}, keys);
      return shaped(out_.add(OpKind::Ne, {sum, sum}), n.result->type.shape);
    }
    ir::Attrs over;
    if (n.op == OpKind::ReduceVar) {
      over = n.attrs;
    } else if (n.op == OpKind::LayerNorm || n.op == OpKind::RmsNorm) {
      over.set("axis", std::vector<int64_t>{ir::single_axis(n.attrs, n.result->type.rank())});
      over.set("keepdim", true);
    } else {
      return nullptr;
    }
    Value* largest = out_.add(OpKind::ReduceMax, {abs(in[0])}, over);
    return shaped(out_.add(OpKind::Gt, {largest, out_.constant(1.8e19, DType::f32)}), n.result->type.shape);
  }

  Value* magnitude(const ir::Node& n, const std::vector<Value*>& in) {
    const Shape& shape = n.result->type.shape;
    Value* m = nullptr;
    switch (n.op) {
      case OpKind::Gelu: m = abs(in[0]); break;
      case OpKind::Add:
      case OpKind::Sub: m = out_.add(OpKind::Max, {abs(in[0]), abs(in[1])}); break;
      case OpKind::ReduceSum:
      case OpKind::ReduceMean: m = out_.add(n.op, {abs(in[0])}, n.attrs); break;
      case OpKind::ReduceLogSumExp: m = out_.add(OpKind::ReduceMax, {abs(in[0])}, n.attrs); break;
      case OpKind::ReduceVar: {
        Value* x = f32(in[0]);
        m = out_.add(OpKind::ReduceMean, {out_.add(OpKind::Mul, {x, x})}, n.attrs);
        break;
      }
      case OpKind::LogSoftmax: {
        ir::Attrs over;
        over.set("axis", std::vector<int64_t>{n.attrs.get_int("axis")});
        over.set("keepdim", true);
        m = out_.add(OpKind::ReduceMax, {abs(in[0])}, over);
        break;
      }
      case OpKind::Matmul: m = out_.add(OpKind::Matmul, {abs(in[0]), abs(in[1])}, n.attrs); break;
      case OpKind::LayerNorm: m = layer_norm_magnitude(n, in); break;
      case OpKind::Attention: {
        // A mix of V's rows, weighed by probabilities that tensor cores take rounded to
        // the dtype: its error counts in the dtype's units of the largest |v| a column has.
        ir::Attrs keys;
        keys.set("axis", std::vector<int64_t>{-2});
        keys.set("keepdim", true);
        Value* largest = out_.add(OpKind::ReduceMax, {abs(in[2])}, keys);
        const double units = dtype_unit(n.result->type.dtype) / kFp32Unit;
        m = out_.add(OpKind::Mul, {largest, out_.constant(units, DType::f32)});
        break;
      }
      default: return nullptr;
    }
    return shaped(m, shape);
  }

  ir::Graph out_;
  std::unordered_map<const Value*, Value*> map_;
  enum class Kind { Value, Magnitude, OutOfRange };
  std::vector<std::pair<const Value*, Kind>> order_;  // each output: whose, and what of it
};

}  // namespace

double dtype_unit(DType t) {
  switch (t) {
    case DType::f32: return kFp32Unit;
    case DType::f16: return 1.0 / (1 << 10);
    case DType::bf16: return 1.0 / (1 << 7);
    case DType::f8e4m3: return 1.0 / (1 << 3);
    case DType::f8e5m2: return 1.0 / (1 << 2);
    default: return 1.0;
  }
}

Intermediates evaluate_intermediates(const ir::Graph& g, const std::vector<HostTensor>& inputs) {
  return MagnitudeGraph(g).evaluate(inputs);
}

bool near_zero(double value, const HostTensor* m, size_t e, double flush) {
  if (std::fabs(value) < flush) return true;
  if (!m || !std::isfinite(value)) return false;
  const double scale = m->values[e];
  return std::isfinite(scale) && std::fabs(value) <= kFp32Unit * scale;
}

std::vector<std::vector<double>> absolute_floors(const ir::Graph& g, const Intermediates& at,
                                                 const std::vector<double>& bounds) {
  std::vector<std::vector<double>> floors;
  for (size_t i = 0; i < g.outputs().size(); ++i) {
    const ir::Value* out = g.outputs()[i];
    floors.emplace_back(static_cast<size_t>(out->type.numel()), 0.0);
    auto m = at.magnitudes.find(out);
    if (m == at.magnitudes.end()) continue;
    const double per_unit = bounds[i] / dtype_unit(out->type.dtype) * kFp32Unit;
    for (size_t e = 0; e < floors.back().size(); ++e) {
      const double scale = m->second.values[e];
      floors.back()[e] = std::isfinite(scale) ? per_unit * scale : 0.0;
    }
  }
  return floors;
}

}  // namespace kiln::fuzz
