#include "tests/fuzz/nudge.h"

#include <cmath>
#include <random>
#include <unordered_map>

#include "ir/interpreter.h"

namespace kiln::fuzz {

namespace {

int fraction_bits(DType t) {
  switch (t) {
    case DType::f32: return 23;
    case DType::f16: return 10;
    case DType::bf16: return 7;
    case DType::f8e4m3: return 3;
    case DType::f8e5m2: return 2;
    default: return 0;
  }
}

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

}  // namespace

Nudged nudged(const ir::Graph& g, uint64_t seed) {
  std::mt19937_64 rng(seed);
  Nudged out{ir::Graph(g.name()), {}};
  std::unordered_map<const ir::Value*, ir::Value*> map;
  for (const ir::Value* in : g.inputs()) map[in] = out.graph.add_input(in->name, in->type);
  std::vector<std::pair<const ir::Node*, ir::Value*>> factor_inputs;
  for (const ir::Node* n : g.nodes())
    if (rounds(*n))
      factor_inputs.emplace_back(n, out.graph.add_input("nudge" + std::to_string(factor_inputs.size()),
                                                         n->result->type));
  size_t next = 0;
  for (const ir::Node* n : g.nodes()) {
    std::vector<ir::Value*> operands;
    for (const ir::Value* o : n->operands) operands.push_back(map.at(o));
    ir::Value* r = out.graph.add(n->op, operands, n->attrs, n->result->type);
    if (rounds(*n)) {
      const TensorType& t = n->result->type;
      const double step = std::ldexp(1.0, -fraction_bits(t.dtype));
      std::vector<double> f(static_cast<size_t>(t.numel()));
      for (double& x : f) x = 1.0 + (rng() % 2 ? step : -step);
      out.factors.emplace_back(t, std::move(f));
      r = out.graph.add(ir::OpKind::Mul, {r, factor_inputs.at(next++).second});
    }
    map[n->result] = r;
  }
  for (const ir::Value* o : g.outputs()) out.graph.add_output(map.at(o));
  return out;
}

std::vector<std::vector<bool>> stable_elements(const ir::Graph& g, const std::vector<HostTensor>& inputs,
                                               const std::vector<HostTensor>& reference,
                                               const std::vector<double>& bounds, int tries) {
  std::vector<std::vector<bool>> stable;
  std::vector<double> scale;
  for (const HostTensor& r : reference) {
    stable.emplace_back(r.values.size(), true);
    scale.push_back(rms(r));
  }
  for (int t = 0; t < tries; ++t) {
    const Nudged n = nudged(g, 0x9e3779b97f4a7c15ull * (t + 1));
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
        else same = std::fabs(a - b) <= bounds[i] * scale[i];
        if (!same) stable[i][e] = false;
      }
    }
  }
  return stable;
}

}  // namespace kiln::fuzz
