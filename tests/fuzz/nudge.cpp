#include "tests/fuzz/nudge.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <random>
#include <unordered_map>

#include "ir/interpreter.h"
#include "tests/fuzz/magnitude.h"

namespace kiln::fuzz {

namespace {

bool rounds(const ir::Node& n) {
  const ir::OpCategory c = ir::op_info(n.op).category;
  return is_float(n.result->type.dtype) && c != ir::OpCategory::Source && c != ir::OpCategory::View;
}

double rms(const HostTensor& t) {
  double sum = 0;
  size_t n = 0;
  for (double v : t.values)
    if (std::isfinite(v)) {
      sum += v * v;
      ++n;
    }
  return n ? std::sqrt(sum / static_cast<double>(n)) : 0.0;
}

// The elements an op folds into each of its results: a sum of n terms in fp32, in
// whatever order a kernel takes them, is off from the exact sum by up to about log2(n)
// roundings of the terms' magnitude (pairwise summation's bound).
double reduced_terms(const ir::Node& n) {
  const TensorType& in = n.operands[0]->type;
  switch (n.op) {
    case ir::OpKind::ReduceSum:
    case ir::OpKind::ReduceMean:
    case ir::OpKind::ReduceVar: return static_cast<double>(in.numel()) / static_cast<double>(n.result->type.numel());
    case ir::OpKind::Matmul: return static_cast<double>(in.shape[in.rank() - (n.attrs.get_bool("transpose_a") ? 2 : 1)]);
    default: return 1;
  }
}

// The fp32 units of its magnitude an op's absolute shift moves a value by: log2(terms).
double shift_units(const ir::Node& n) { return std::max(1.0, std::ceil(std::log2(reduced_terms(n)))); }

// Below what a result counts as flushable: silu is x sigmoid(x), and sigmoid(x) flushes
// below 2^-126 at x < -87, so silu's result may be lost up to 128 times that; others
// flush below 2^-126.
double flush_below(const ir::Node& n) { return n.op == ir::OpKind::Silu ? 128 * kFp32MinNormal : kFp32MinNormal; }

// Where the reference's value is near zero (magnitude.h), its nudge is one of +0, -0 and
// one fp32 unit of its magnitude either way (`to`), taken where the nudged value is still
// within that unit of zero (`within`; so a value that nudges upstream moved off zero
// keeps that move); nullopt where none is. Which one follows the try's pattern
// (nudge.h): the sign a GPU gives such a value is anyone's, so the first four tries take
// each of the four for certain rather than by chance.
struct Snap {
  HostTensor mask, to, within;
};

std::optional<Snap> snaps(const ir::Node& n, const Intermediates& at, int pattern, std::mt19937_64& rng) {
  const ir::Value& v = *n.result;
  auto value = at.values.find(&v);
  if (value == at.values.end()) return std::nullopt;
  auto m = at.magnitudes.find(&v);
  const HostTensor* magnitude = m == at.magnitudes.end() ? nullptr : &m->second;
  const double flush = flush_below(n), units = shift_units(n);
  const size_t count = value->second.values.size();
  std::vector<double> mask(count, 0.0), to(count, 0.0), within(count, 0.0);
  bool any = false;
  for (size_t e = 0; e < count; ++e) {
    const double was = value->second.values[e];
    if (!near_zero(was, magnitude, e, flush)) continue;
    any = true;
    mask[e] = 1;
    const double away = magnitude ? kFp32Unit * magnitude->values[e] : 0.0;
    within[e] = std::max((units + 1) * away, flush);
    const double flipped = std::signbit(was) ? 1.0 : -1.0;  // the other sign
    const double own = std::signbit(was) ? -1.0 : 1.0;
    switch (pattern) {
      case 0: to[e] = std::copysign(0.0, flipped); break;
      case 1: to[e] = away > 0 ? flipped * away : std::copysign(0.0, flipped); break;
      case 2: to[e] = std::copysign(0.0, was); break;
      case 3: to[e] = away > 0 ? own * away : std::copysign(0.0, flipped); break;
      default: {  // patterns 4 and up
        const uint64_t pick = rng() % 4;
        to[e] = pick == 0 ? 0.0 : pick == 1 ? -0.0 : pick == 2 ? away : -away;
      }
    }
  }
  if (!any) return std::nullopt;
  return Snap{HostTensor({DType::i1, v.type.shape}, std::move(mask)), HostTensor(v.type, std::move(to)),
              HostTensor(v.type, std::move(within))};
}

// Where the reference's value lies within `step` (the relative error of its op on a GPU)
// of an integer it is not, that integer; where it is an integer that has non-integer
// neighbours in its dtype, the neighbour above (`to`, under `mask`); nullopt where
// neither. Pattern 2 takes it: pow of a negative base is NaN at every exponent but an
// integer, so a GPU's powf landing on the integer next to the reference's value gives a
// number where the reference has NaN, or its exp2f one unit off an integer gives NaN
// where the reference has a number; the nudges either way step over the integer, or
// from one integer to the next (4987896 in f32, whose unit is 0.5, moved by 2.4 units).
struct IntegerSnap {
  HostTensor mask, to;
};
std::optional<IntegerSnap> integer_snaps(const ir::Node& n, const Intermediates& at, double step) {
  auto value = at.values.find(n.result);
  if (value == at.values.end() || step <= 0) return std::nullopt;
  const size_t count = value->second.values.size();
  std::vector<double> mask(count, 0.0), to(count, 0.0);
  bool any = false;
  for (size_t e = 0; e < count; ++e) {
    const double was = value->second.values[e], whole = std::nearbyint(was);
    if (!std::isfinite(was) || std::fabs(was) < 1 || std::fabs(was) >= 0x1p24) continue;
    const double unit = std::ldexp(dtype_unit(n.result->type.dtype), std::ilogb(was));  // its dtype's spacing
    if (whole == was && unit >= 1) continue;  // every neighbour is an integer too
    if (whole != was && std::fabs(was - whole) > step * std::fabs(was)) continue;
    any = true;
    mask[e] = 1;
    to[e] = whole == was ? was + unit : whole;
  }
  if (!any) return std::nullopt;
  return IntegerSnap{HostTensor({DType::i1, n.result->type.shape}, std::move(mask)),
                     HostTensor(n.result->type, std::move(to))};
}

// Casts that give their source back exactly: a widening of a float (f16, bf16 or fp8 to
// f32; fp8 to f16 or bf16), or of an integer or boolean whose result (`value`) is within
// the integers the float holds exactly (2^(fraction bits + 1)). Such an element is not
// nudged: an exponent of 2 must stay 2, or pow of a negative base turns NaN in every try
// and hides what the graph does hang on.
bool widens_a_float(const ir::Node& n) {
  if (n.op != ir::OpKind::Cast) return false;
  const DType from = n.operands[0]->type.dtype, to = n.result->type.dtype;
  if (!is_float(from)) return false;
  if (to == DType::f32) return true;
  return (from == DType::f8e4m3 || from == DType::f8e5m2) && (to == DType::f16 || to == DType::bf16);
}
bool holds_an_integer_exactly(const ir::Node& n, double value) {
  return n.op == ir::OpKind::Cast && !is_float(n.operands[0]->type.dtype) &&
         std::fabs(value) <= 2.0 / dtype_unit(n.result->type.dtype);
}

// The distance from `value` to its neighbour away from zero in a 16- or 8-bit float
// dtype: one unit at its binade, or the subnormals' spacing below the normal range.
double spacing_at(DType t, double value) {
  const double subnormal = t == DType::f16      ? 0x1p-24
                           : t == DType::f8e4m3 ? 0x1p-9
                           : t == DType::f8e5m2 ? 0x1p-16
                                                : 0x1p-133;  // bf16
  return std::max(std::ldexp(dtype_unit(t), std::ilogb(value)), subnormal);
}

// Ops whose result is one of their operands' values, or its negation: nothing rounds.
bool copies_a_value(ir::OpKind op) {
  switch (op) {
    case ir::OpKind::Neg:
    case ir::OpKind::Abs:
    case ir::OpKind::Relu:
    case ir::OpKind::Max:
    case ir::OpKind::Min:
    case ir::OpKind::Select:
    case ir::OpKind::ReduceMax:
    case ir::OpKind::ReduceMin: return true;
    default: return false;
  }
}

// +1, -1 or 0 for element e: in pattern 0 up at even elements and down at odd ones, in
// pattern 1 the other way round (so each element goes both ways for certain, and a row
// does not move all one way, which a normalisation would not see); 0 in patterns 2 and
// 3, which only snap near-zero values (a value snapped to 0 whose result is then moved
// off an integer would hide what the snap alone does); random after.
double sign_for(int pattern, size_t e, std::mt19937_64& rng) {
  if (pattern == 0) return e % 2 ? -1.0 : 1.0;
  if (pattern == 1) return e % 2 ? 1.0 : -1.0;
  if (pattern == 2 || pattern == 3) return 0.0;
  return rng() % 2 ? 1.0 : -1.0;
}

// Units in the last place an fp32 result of `op` may be off by on the GPU: CUDA's
// table of maximum errors gives 2 for expf, exp2f, rsqrtf and tanhf, 4 for powf and
// erfcf; a sigmoid (an exp and a division) and the composites built on exp or rsqrt take
// 2. Other ops round once (half a unit; a unit is their nudge).
double fp32_ulps(ir::OpKind op) {
  switch (op) {
    case ir::OpKind::Pow:
    case ir::OpKind::Gelu: return 4;
    case ir::OpKind::Exp:
    case ir::OpKind::Exp2:
    case ir::OpKind::Rsqrt:
    case ir::OpKind::Tanh:
    case ir::OpKind::Sigmoid:
    case ir::OpKind::Silu:
    case ir::OpKind::Softmax:
    case ir::OpKind::LogSoftmax:
    case ir::OpKind::ReduceLogSumExp:
    case ir::OpKind::LayerNorm:
    case ir::OpKind::RmsNorm:
    case ir::OpKind::Attention: return 2;
    default: return 1;
  }
}

// About log2(terms) fp32 units (at least one) of each element's magnitude, either way
// (magnitude.h): what a value made from larger ones is known to; nullopt for an op
// without a magnitude.
std::optional<HostTensor> absolute_shift(const ir::Node& n, const Intermediates& at, int pattern,
                                         std::mt19937_64& rng) {
  auto m = at.magnitudes.find(n.result);
  if (m == at.magnitudes.end()) return std::nullopt;
  const double units = shift_units(n);
  std::vector<double> by(m->second.values.size());
  for (size_t e = 0; e < by.size(); ++e) {
    const double scale = m->second.values[e];
    by[e] = std::isfinite(scale) ? sign_for(pattern, e, rng) * units * kFp32Unit * scale : 0.0;
  }
  return HostTensor(n.result->type, std::move(by));
}

// The elements of `v` a kernel cannot compute as the reference does (magnitude.h); null
// where there are none.
const HostTensor* out_of_range(const ir::Value& v, const Intermediates& at) {
  auto o = at.out_of_range.find(&v);
  if (o == at.out_of_range.end()) return nullptr;
  for (double b : o->second.values)
    if (b != 0) return &o->second;
  return nullptr;
}

// The reach of a value that moves with its operand: a view of it (the same view of the
// reach), or its negation, absolute value or exact widening (the same reach).
ir::Value* carried_reach(ir::Graph& out, const ir::Node& n,
                         const std::unordered_map<const ir::Value*, ir::Value*>& reach) {
  if (n.operands.size() != 1) return nullptr;
  auto from = reach.find(n.operands[0]);
  if (from == reach.end()) return nullptr;
  if (ir::op_info(n.op).category == ir::OpCategory::View)
    return out.add(n.op, {from->second}, n.attrs, TensorType{DType::f32, n.result->type.shape});
  if (n.op == ir::OpKind::Neg || n.op == ir::OpKind::Abs || widens_a_float(n)) return from->second;
  return nullptr;
}

// `eq` / `ne` of two values closer than their nudges' reach: a kernel may give either
// answer, anywhere in that reach, not only at its ends where the nudges put the values
// (an attention output within its error of an input equal to the neighbour the GPU rounds
// to). Such elements take the other answer. Strictly closer: exact equal values stay.
ir::Value* flip_ties(ir::Graph& out, const ir::Node& n, const std::vector<ir::Value*>& operands, ir::Value* r,
                     const std::unordered_map<const ir::Value*, ir::Value*>& reach) {
  ir::Value* far = nullptr;
  for (const ir::Value* o : n.operands)
    if (auto f = reach.find(o); f != reach.end()) far = far ? out.add(ir::OpKind::Add, {far, f->second}) : f->second;
  if (!far || !is_float(n.operands[0]->type.dtype)) return r;
  auto wide = [&](ir::Value* v) { return out.add(ir::OpKind::Cast, {v}, {}, TensorType{DType::f32, v->type.shape}); };
  ir::Value* apart = out.add(ir::OpKind::Abs, {out.add(ir::OpKind::Sub, {wide(operands[0]), wide(operands[1])})});
  ir::Value* tie = out.add(ir::OpKind::Lt, {apart, far});
  const ir::OpKind other = n.op == ir::OpKind::Eq ? ir::OpKind::Ne : ir::OpKind::Eq;
  return out.add(ir::OpKind::Select, {tie, out.add(other, operands, n.attrs, n.result->type), r});
}

}  // namespace

Nudged nudged(const ir::Graph& g, uint64_t seed, const Intermediates* at, int pattern) {
  std::mt19937_64 rng(seed);
  Nudged out{ir::Graph(g.name()), {}};
  std::unordered_map<const ir::Value*, ir::Value*> map;
  // How far each nudge may move a value of g either way, as an f32 value of the nudged
  // graph (absent: not at all); `eq` and `ne` read it in pattern 2, the only one that fills it.
  std::unordered_map<const ir::Value*, ir::Value*> reach;
  for (const ir::Value* in : g.inputs()) map[in] = out.graph.add_input(in->name, in->type);
  for (const ir::Node* n : g.nodes()) {
    std::vector<ir::Value*> operands;
    for (const ir::Value* o : n->operands) operands.push_back(map.at(o));
    ir::Value* r = out.graph.add(n->op, operands, n->attrs, n->result->type);
    if (ir::Value* far = carried_reach(out.graph, *n, reach)) reach[n->result] = far;
    if (at && pattern == 2 && (n->op == ir::OpKind::Eq || n->op == ir::OpKind::Ne))
      r = flip_ties(out.graph, *n, operands, r, reach);
    if (rounds(*n)) {
      const TensorType& t = n->result->type;
      auto extra = [&](HostTensor v) {  // a nudge's values, as an extra input
        ir::Value* in = out.graph.add_input("nudge" + std::to_string(out.factors.size()), v.type);
        out.factors.push_back(std::move(v));
        return in;
      };
      const bool exact = copies_a_value(n->op) || widens_a_float(*n);
      const double step = exact ? 0.0 : dtype_unit(t.dtype) * (t.dtype == DType::f32 ? fp32_ulps(n->op) : 1.0);
      const HostTensor* value = nullptr;  // the reference's result
      if (at)
        if (auto v = at->values.find(n->result); v != at->values.end()) value = &v->second;
      // A cast's results tell exact ones; a 16- or 8-bit result moves by its own spacing:
      // a factor of one unit moves values in the lower part of a binade by two spacings
      // once rounded (0.2285 by 1 - 2^-7 to 0.2266 in bf16), past the neighbour a kernel
      // rounding the other way gives, which an `eq` or `ne` against it tells apart.
      const HostTensor* was = n->op == ir::OpKind::Cast ? value : nullptr;
      const HostTensor* known = !exact && t.dtype != DType::f32 ? value : nullptr;
      std::vector<double> f(static_cast<size_t>(t.numel())), spacing(known ? f.size() : 0, 0.0);
      for (size_t e = 0; e < f.size(); ++e) {
        const double sign = sign_for(pattern, e, rng);
        if (was && holds_an_integer_exactly(*n, was->values[e])) {
          f[e] = 1.0;
        } else if (known && std::isfinite(known->values[e]) && known->values[e] != 0) {
          f[e] = 1.0;
          spacing[e] = sign * spacing_at(t.dtype, known->values[e]);
        } else {
          f[e] = 1.0 + sign * step;
        }
      }
      r = out.graph.add(ir::OpKind::Mul, {r, extra(HostTensor(t, std::move(f)))});
      std::optional<HostTensor> shift = at ? absolute_shift(*n, *at, pattern, rng) : std::nullopt;
      if (at && pattern == 2) {  // the reach, for flip_ties: a factor's move, a spacing, a shift
        const std::optional<HostTensor> most = absolute_shift(*n, *at, 0, rng);
        std::vector<double> far(static_cast<size_t>(t.numel()), 0.0);
        for (size_t e = 0; value && e < far.size(); ++e) {
          const double v = value->values[e];
          if (!std::isfinite(v)) continue;
          far[e] = known && v != 0 ? spacing_at(t.dtype, v) : std::fabs(v) * step;
          if (most) far[e] += std::fabs(most->values[e]);
        }
        reach[n->result] = extra(HostTensor({DType::f32, t.shape}, std::move(far)));
      }
      if (known) {
        if (shift)
          for (size_t e = 0; e < spacing.size(); ++e) spacing[e] += shift->values[e];
        shift = HostTensor(t, std::move(spacing));
      }
      if (shift) r = out.graph.add(ir::OpKind::Add, {r, extra(std::move(*shift))});
      // Where a kernel cannot follow the reference (magnitude.h: out_of_range), NaN marks
      // those elements, and every element made from them flips.
      if (const HostTensor* past = at ? out_of_range(*n->result, *at) : nullptr) {
        ir::Value* mask = extra(*past);
        ir::Value* nan = extra(HostTensor(t, std::vector<double>(static_cast<size_t>(t.numel()), NAN)));
        r = out.graph.add(ir::OpKind::Select, {mask, nan, r});
      }
      if (auto snap = at ? snaps(*n, *at, pattern, rng) : std::nullopt) {
        ir::Value* mask = extra(std::move(snap->mask));
        ir::Value* to = extra(std::move(snap->to));
        ir::Value* within = extra(std::move(snap->within));
        ir::Value* still_near = out.graph.add(ir::OpKind::Le, {out.graph.add(ir::OpKind::Abs, {r}), within});
        r = out.graph.add(ir::OpKind::Select, {mask, out.graph.add(ir::OpKind::Select, {still_near, to, r}), r});
      }
      if (auto snap = at && pattern == 2 ? integer_snaps(*n, *at, step) : std::nullopt)
        r = out.graph.add(ir::OpKind::Select, {extra(std::move(snap->mask)), extra(std::move(snap->to)), r});
    }
    map[n->result] = r;
  }
  for (const ir::Value* o : g.outputs()) out.graph.add_output(map.at(o));
  return out;
}

Sensitivity sensitivity(const ir::Graph& g, const std::vector<HostTensor>& inputs,
                        const std::vector<HostTensor>& reference, const std::vector<double>& bounds, int tries) {
  const Intermediates at = evaluate_intermediates(g, inputs);
  Sensitivity s;
  s.floors = absolute_floors(g, at, bounds);
  for (const HostTensor& r : reference) {
    s.flips.emplace_back(r.values.size(), false);
    s.spread.emplace_back(r.values.size(), 0.0);
    s.scale.push_back(rms(r));
  }
  for (int t = 0; t < tries; ++t) {
    const Nudged n = nudged(g, 0x9e3779b97f4a7c15ull * (t + 1), &at, t);
    std::vector<HostTensor> all = inputs;
    all.insert(all.end(), n.factors.begin(), n.factors.end());
    const std::vector<HostTensor> moved = ir::evaluate(n.graph, all);
    for (size_t i = 0; i < reference.size(); ++i) {
      const bool exact = !is_float(reference[i].type.dtype);
      for (size_t e = 0; e < reference[i].values.size(); ++e) {
        const double a = reference[i].values[e], b = moved[i].values[e];
        if (!std::isfinite(a) || !std::isfinite(b)) {
          if (!((std::isnan(a) && std::isnan(b)) || a == b)) s.flips[i][e] = true;
        } else if (exact) {
          if (a != b) s.flips[i][e] = true;
        } else {
          s.spread[i][e] = std::max(s.spread[i][e], std::fabs(a - b));
        }
      }
    }
  }
  return s;
}

std::vector<std::vector<bool>> stable_elements(const ir::Graph& g, const std::vector<HostTensor>& inputs,
                                               const std::vector<HostTensor>& reference,
                                               const std::vector<double>& bounds, int tries) {
  const Sensitivity s = sensitivity(g, inputs, reference, bounds, tries);
  std::vector<std::vector<bool>> stable;
  for (size_t i = 0; i < reference.size(); ++i) {
    stable.emplace_back(reference[i].values.size(), true);
    for (size_t e = 0; e < stable[i].size(); ++e)
      stable[i][e] = !s.flips[i][e] && s.spread[i][e] <= bounds[i] * s.scale[i] + s.floors[i][e];
  }
  return stable;
}

}  // namespace kiln::fuzz
