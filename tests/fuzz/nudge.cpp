#include "tests/fuzz/nudge.h"

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

// Where the reference's value is near zero (magnitude.h), its nudge is a value drawn
// from +0, -0 and one fp32 unit of its magnitude either way; nullopt where none is.
std::optional<std::pair<HostTensor, HostTensor>> snaps(const ir::Value& v, const Intermediates& at,
                                                       std::mt19937_64& rng) {
  auto value = at.values.find(&v);
  if (value == at.values.end()) return std::nullopt;
  auto m = at.magnitudes.find(&v);
  const HostTensor* magnitude = m == at.magnitudes.end() ? nullptr : &m->second;
  const size_t n = value->second.values.size();
  std::vector<double> mask(n, 0.0), to(n, 0.0);
  bool any = false;
  for (size_t e = 0; e < n; ++e) {
    if (!near_zero(value->second.values[e], magnitude, e)) continue;
    any = true;
    mask[e] = 1;
    const double away = magnitude ? kFp32Unit * magnitude->values[e] : 0.0;
    const uint64_t pick = rng() % 4;
    to[e] = pick == 0 ? 0.0 : pick == 1 ? -0.0 : pick == 2 ? away : -away;
  }
  if (!any) return std::nullopt;
  return std::make_pair(HostTensor({DType::i1, v.type.shape}, std::move(mask)), HostTensor(v.type, std::move(to)));
}

// One fp32 unit of each element's magnitude, either way (magnitude.h): what a value made
// from larger ones is known to; nullopt for an op without a magnitude.
std::optional<HostTensor> absolute_shift(const ir::Value& v, const Intermediates& at, std::mt19937_64& rng) {
  auto m = at.magnitudes.find(&v);
  if (m == at.magnitudes.end()) return std::nullopt;
  std::vector<double> by(m->second.values.size());
  for (size_t e = 0; e < by.size(); ++e) {
    const double scale = m->second.values[e];
    by[e] = std::isfinite(scale) ? (rng() % 2 ? 1.0 : -1.0) * kFp32Unit * scale : 0.0;
  }
  return HostTensor(v.type, std::move(by));
}

}  // namespace

Nudged nudged(const ir::Graph& g, uint64_t seed, const Intermediates* at) {
  std::mt19937_64 rng(seed);
  Nudged out{ir::Graph(g.name()), {}};
  std::unordered_map<const ir::Value*, ir::Value*> map;
  for (const ir::Value* in : g.inputs()) map[in] = out.graph.add_input(in->name, in->type);
  for (const ir::Node* n : g.nodes()) {
    std::vector<ir::Value*> operands;
    for (const ir::Value* o : n->operands) operands.push_back(map.at(o));
    ir::Value* r = out.graph.add(n->op, operands, n->attrs, n->result->type);
    if (rounds(*n)) {
      const TensorType& t = n->result->type;
      const double step = dtype_unit(t.dtype);
      std::vector<double> f(static_cast<size_t>(t.numel()));
      for (double& x : f) x = 1.0 + (rng() % 2 ? step : -step);
      ir::Value* factor = out.graph.add_input("nudge" + std::to_string(out.factors.size()), t);
      out.factors.emplace_back(t, std::move(f));
      r = out.graph.add(ir::OpKind::Mul, {r, factor});
      if (auto shift = at ? absolute_shift(*n->result, *at, rng) : std::nullopt) {
        ir::Value* by = out.graph.add_input("nudge" + std::to_string(out.factors.size()), t);
        out.factors.push_back(std::move(*shift));
        r = out.graph.add(ir::OpKind::Add, {r, by});
      }
      if (auto snap = at ? snaps(*n->result, *at, rng) : std::nullopt) {
        ir::Value* mask = out.graph.add_input("nudge" + std::to_string(out.factors.size()), snap->first.type);
        out.factors.push_back(std::move(snap->first));
        ir::Value* to = out.graph.add_input("nudge" + std::to_string(out.factors.size()), t);
        out.factors.push_back(std::move(snap->second));
        r = out.graph.add(ir::OpKind::Select, {mask, to, r});
      }
    }
    map[n->result] = r;
  }
  for (const ir::Value* o : g.outputs()) out.graph.add_output(map.at(o));
  return out;
}

std::vector<std::vector<bool>> stable_elements(const ir::Graph& g, const std::vector<HostTensor>& inputs,
                                               const std::vector<HostTensor>& reference,
                                               const std::vector<double>& bounds, int tries) {
  const Intermediates at = evaluate_intermediates(g, inputs);
  const std::vector<std::vector<double>> floors = absolute_floors(g, at, bounds);
  std::vector<std::vector<bool>> stable;
  std::vector<double> scale;
  for (const HostTensor& r : reference) {
    stable.emplace_back(r.values.size(), true);
    scale.push_back(rms(r));
  }
  for (int t = 0; t < tries; ++t) {
    const Nudged n = nudged(g, 0x9e3779b97f4a7c15ull * (t + 1), &at);
    std::vector<HostTensor> all = inputs;
    all.insert(all.end(), n.factors.begin(), n.factors.end());
    const std::vector<HostTensor> moved = ir::evaluate(n.graph, all);
    for (size_t i = 0; i < reference.size(); ++i) {
      const bool exact = !is_float(reference[i].type.dtype);
      for (size_t e = 0; e < reference[i].values.size(); ++e) {
        const double a = reference[i].values[e], b = moved[i].values[e];
        bool same;
        if (!std::isfinite(a) || !std::isfinite(b)) same = (std::isnan(a) && std::isnan(b)) || a == b;
        else if (exact) same = a == b;
        else same = std::fabs(a - b) <= bounds[i] * scale[i] + floors[i][e];
        if (!same) stable[i][e] = false;
      }
    }
  }
  return stable;
}

}  // namespace kiln::fuzz
