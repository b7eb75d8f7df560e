// The reference interpreter's driver: checks the inputs, runs the nodes in order,
// hands each one to its family's evaluator (ir/interpreter_*.cpp) and frees every
// intermediate once its last user has run, so long chains on big tensors stay small.
#include "ir/interpreter.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "ir/error.h"
#include "ir/interpreter_kernels.h"

namespace kiln::ir {

namespace {

using interp::Args;

std::string value_label(const Value* v, size_t index) {
  return v->name.empty() ? fmt::format("{}", index) : fmt::format("{} '%{}'", index, v->name);
}

void check_inputs(const Graph& g, const std::vector<HostTensor>& inputs) {
  if (inputs.size() != g.inputs().size())
    throw Error(fmt::format("evaluate '{}': the graph takes {} input{}, got {}", g.name(), g.inputs().size(),
                            g.inputs().size() == 1 ? "" : "s", inputs.size()));
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Value* v = g.inputs()[i];
    if (inputs[i].type != v->type)
      throw Error(fmt::format("evaluate '{}': input {} expects {}, got {}", g.name(), value_label(v, i), v->type.str(),
                              inputs[i].type.str()));
    if (static_cast<int64_t>(inputs[i].values.size()) != v->type.numel())
      throw Error(fmt::format("evaluate '{}': input {} of type {} holds {} values, not {}", g.name(),
                              value_label(v, i), v->type.str(), inputs[i].values.size(), v->type.numel()));
  }
}

HostTensor evaluate_node(const Node& n, const Args& a) {
  switch (op_info(n.op).category) {
    case OpCategory::Unary:
    case OpCategory::Cast: return interp::eval_unary(n, *a[0]);
    case OpCategory::Binary:
    case OpCategory::Compare: return interp::eval_binary(n, *a[0], *a[1]);
    case OpCategory::Select: return interp::eval_select(n, *a[0], *a[1], *a[2]);
    case OpCategory::Source: return interp::eval_source(n);
    case OpCategory::Reduce: return interp::eval_reduce(n, *a[0]);
    case OpCategory::View: return interp::eval_view(n, *a[0]);
    case OpCategory::Matmul: return interp::eval_matmul(n, *a[0], *a[1]);
    case OpCategory::Dequant: return interp::eval_dequant(n, a);
    case OpCategory::Composite: return interp::eval_composite(n, a);
  }
  throw Error(fmt::format("evaluate: op {} has no reference semantics", op_name(n.op)));
}

// A result supplied by a hook must be what the node would have given.
void check_supplied(const Graph& g, const Node& n, size_t index, const HostTensor& t) {
  if (t.type != n.result->type || static_cast<int64_t>(t.values.size()) != n.result->type.numel())
    throw Error(fmt::format("evaluate '{}': the result supplied for {} (node {}) is {} with {} values; the node gives {}",
                            g.name(), op_name(n.op), index, t.type.str(), t.values.size(), n.result->type.str()));
}

}  // namespace

std::vector<HostTensor> evaluate(const Graph& g, const std::vector<HostTensor>& inputs) {
  return evaluate(g, inputs, EvalHooks{});
}

std::vector<HostTensor> evaluate(const Graph& g, const std::vector<HostTensor>& inputs, const EvalHooks& hooks) {
  check_inputs(g, inputs);
  const std::vector<Node*> nodes = g.nodes();
  const size_t num_ids = static_cast<size_t>(g.num_value_ids());

  // The index of the last node that reads each value; outputs live to the end.
  constexpr size_t kNever = std::numeric_limits<size_t>::max() - 1, kForever = kNever + 1;
  std::vector<size_t> last_use(num_ids, kNever);
  for (size_t i = 0; i < nodes.size(); ++i)
    for (const Value* v : nodes[i]->operands) last_use[v->id] = i;
  for (const Value* v : g.outputs()) last_use[v->id] = kForever;

  // Inputs are read in place; node results are owned here.
  std::vector<const HostTensor*> live(num_ids, nullptr);
  std::vector<HostTensor> owned(num_ids);
  for (size_t i = 0; i < inputs.size(); ++i) live[g.inputs()[i]->id] = &inputs[i];

  Args args;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Node& n = *nodes[i];
    args.clear();
    for (size_t k = 0; k < n.operands.size(); ++k) {
      const HostTensor* t = live[n.operands[k]->id];
      if (!t)
        throw Error(fmt::format("evaluate '{}': operand {} of {} (node {}) is not defined before it", g.name(), k,
                                op_name(n.op), i));
      args.push_back(t);
    }
    const int id = n.result->id;
    std::optional<HostTensor> supplied;
    if (hooks.supply) supplied = hooks.supply(n, args);
    if (supplied) {
      check_supplied(g, n, i, *supplied);
      owned[id] = std::move(*supplied);
    } else {
      owned[id] = evaluate_node(n, args);
    }
    live[id] = &owned[id];
    if (last_use[id] == kNever) {  // a dead value: nothing reads it
      owned[id] = HostTensor();
      live[id] = nullptr;
    }
    for (const Value* v : n.operands) {
      if (last_use[v->id] != i || !v->producer) continue;
      owned[v->id] = HostTensor();  // its last reader has run
      live[v->id] = nullptr;
    }
  }

  std::vector<HostTensor> results;
  results.reserve(g.outputs().size());
  const auto& outs = g.outputs();
  for (size_t i = 0; i < outs.size(); ++i) {
    const Value* v = outs[i];
    if (!live[v->id]) throw Error(fmt::format("evaluate '{}': output {} is not defined in the graph", g.name(), i));
    bool read_again = std::find(outs.begin() + static_cast<std::ptrdiff_t>(i) + 1, outs.end(), v) != outs.end();
    if (v->producer && !read_again) results.push_back(std::move(owned[v->id]));  // its last use
    else results.push_back(*live[v->id]);
  }
  return results;
}

std::vector<HostTensor> random_inputs(const Graph& g, uint64_t seed) {
  std::vector<HostTensor> inputs;
  for (size_t i = 0; i < g.inputs().size(); ++i)
    inputs.push_back(random_tensor(g.inputs()[i]->type, seed * 1000003 + i));
  return inputs;
}

}  // namespace kiln::ir
