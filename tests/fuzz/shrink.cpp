#include "tests/fuzz/shrink.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "ir/error.h"
#include "ir/printer.h"

namespace kiln::fuzz {

using ir::Node;
using ir::Value;

std::optional<ir::Graph> edit_graph(const ir::Graph& g, const GraphEdit& edit) {
  const std::vector<Node*> nodes = g.nodes();
  std::vector<const Value*> outputs;
  for (size_t i = 0; i < g.outputs().size(); ++i)
    if (std::find(edit.drop_outputs.begin(), edit.drop_outputs.end(), i) == edit.drop_outputs.end())
      outputs.push_back(g.outputs()[i]);
  if (outputs.empty()) return std::nullopt;

  // What the kept outputs need, with the edit applied.
  std::unordered_set<const Value*> needed(outputs.begin(), outputs.end());
  for (size_t i = nodes.size(); i-- > 0;) {
    const Node* n = nodes[i];
    if (!needed.count(n->result) || static_cast<int>(i) == edit.to_input) continue;
    if (static_cast<int>(i) == edit.bypass) needed.insert(n->operands.at(static_cast<size_t>(edit.bypass_operand)));
    else needed.insert(n->operands.begin(), n->operands.end());
  }

  auto resized = [&](TensorType t) {
    if (edit.dim_from > 0)
      for (int64_t& d : t.shape)
        if (d == edit.dim_from) d = edit.dim_to;
    return t;
  };
  std::set<std::string> taken;  // every name of g, so that a new input's name is fresh
  for (const auto& [id, name] : ir::value_names(g)) taken.insert(name);

  ir::Graph out(g.name());
  std::unordered_map<const Value*, Value*> image;
  try {
    for (const Value* in : g.inputs())  // in their order, those still read
      if (needed.count(in)) image[in] = out.add_input(in->name, resized(in->type));
    for (size_t i = 0; i < nodes.size(); ++i) {
      const Node* n = nodes[i];
      if (!needed.count(n->result)) continue;
      if (static_cast<int>(i) == edit.to_input) {
        std::string name = fmt::format("cut{}", n->result->id);
        while (taken.count(name)) name += "_";
        image[n->result] = out.add_input(name, resized(n->result->type));
        continue;
      }
      if (static_cast<int>(i) == edit.bypass) {
        Value* u = image.at(n->operands.at(static_cast<size_t>(edit.bypass_operand)));
        if (u->type != resized(n->result->type)) return std::nullopt;
        image[n->result] = u;
        continue;
      }
      std::vector<Value*> operands;
      for (const Value* u : n->operands) operands.push_back(image.at(u));
      std::optional<TensorType> annotated;
      if (ir::op_info(n->op).type_from_annotation) annotated = resized(n->result->type);
      Value* v = out.add(n->op, operands, n->attrs, annotated, n->loc);
      v->name = n->result->name;
      image[n->result] = v;
    }
  } catch (const Error&) {
    return std::nullopt;
  }
  for (const Value* v : outputs) out.add_output(image.at(v));
  return out;
}

namespace {

size_t size_of(const ir::Graph& g) {
  size_t elements = 0;
  for (const Value* v : g.inputs()) elements += static_cast<size_t>(v->type.numel());
  for (const Node* n : g.nodes()) elements += static_cast<size_t>(n->result->type.numel());
  return g.num_nodes() * 1000000 + g.outputs().size() * 100000 + elements;
}

// The edits worth trying on `g`, the ones that remove most first.
std::vector<GraphEdit> candidates(const ir::Graph& g) {
  std::vector<GraphEdit> out;
  for (size_t i = 0; i < g.outputs().size() && g.outputs().size() > 1; ++i) out.push_back(GraphEdit{{i}});
  const std::vector<Node*> nodes = g.nodes();
  for (size_t i = nodes.size(); i-- > 0;) {
    const Node* n = nodes[i];
    for (size_t k = 0; k < n->operands.size(); ++k)
      if (n->operands[k]->type == n->result->type) {
        GraphEdit e;
        e.bypass = static_cast<int>(i);
        e.bypass_operand = static_cast<int>(k);
        out.push_back(e);
      }
    if (!n->operands.empty()) {
      GraphEdit e;
      e.to_input = static_cast<int>(i);
      out.push_back(e);
    }
  }
  std::set<int64_t, std::greater<>> dims;
  auto collect = [&](const TensorType& t) {
    for (int64_t d : t.shape)
      if (d > 1) dims.insert(d);
  };
  for (const Value* v : g.inputs()) collect(v->type);
  for (const Node* n : nodes) collect(n->result->type);
  for (int64_t d : dims) {
    for (int64_t to : {int64_t{1}, d / 2, int64_t{2}})
      if (to >= 1 && to < d) {
        GraphEdit e;
        e.dim_from = d;
        e.dim_to = to;
        out.push_back(e);
      }
  }
  return out;
}

}  // namespace

ir::Graph shrink_graph(const ir::Graph& g, const FailurePredicate& still_fails, const ShrinkOptions& options,
                       ShrinkStats* stats) {
  ShrinkStats local;
  ShrinkStats& s = stats ? *stats : local;
  ir::Graph current = g.clone();
  for (bool progress = true; progress && s.attempts < options.max_attempts;) {
    progress = false;
    for (const GraphEdit& e : candidates(current)) {
      if (s.attempts >= options.max_attempts) break;
      std::optional<ir::Graph> smaller = edit_graph(current, e);
      if (!smaller || size_of(*smaller) >= size_of(current)) continue;
      ++s.attempts;
      if (!still_fails(*smaller)) continue;
      current = std::move(*smaller);
      ++s.accepted;
      progress = true;
      break;
    }
  }
  return current;
}

}  // namespace kiln::fuzz
