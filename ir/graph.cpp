#include "ir/graph.h"

#include <fmt/format.h>

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "ir/error.h"

namespace kiln::ir {

Value* Graph::new_value(TensorType type, std::string name, Node* producer) {
  auto v = std::make_unique<Value>();
  v->id = next_id_++;
  v->type = std::move(type);
  v->name = std::move(name);
  v->producer = producer;
  values_.push_back(std::move(v));
  return values_.back().get();
}

Value* Graph::add_input(const std::string& name, TensorType type) {
  for (Value* in : inputs_)
    if (in->name == name) throw Error(fmt::format("graph '{}': input '{}' is defined twice", name_, name));
  for (int64_t d : type.shape)
    if (d <= 0) throw Error(fmt::format("input '{}': dimensions must be positive, got {}", name, type.str()));
  if (type.dtype == DType::i4 && (type.shape.empty() || type.shape.back() % 2 != 0))
    throw Error(fmt::format("input '{}': {}: an i4 tensor packs two elements a byte along its last axis, whose size "
                            "must be even", name, type.str()));
  Value* v = new_value(std::move(type), name, nullptr);
  inputs_.push_back(v);
  return v;
}

Value* Graph::add(OpKind op, std::vector<Value*> operands, const Attrs& attrs, std::optional<TensorType> annotated,
                  std::string loc) {
  try {
    Attrs full = complete_attrs(op, attrs);
    std::vector<TensorType> types;
    for (Value* v : operands) types.push_back(v->type);
    TensorType t = infer_type(op, types, full, annotated);
    if (annotated && !op_info(op).type_from_annotation && *annotated != t)
      throw Error(fmt::format("{}: the result type is {}, but {} was written", op_name(op), t.str(), annotated->str()));
    auto node = std::make_unique<Node>();
    node->op = op;
    node->operands = std::move(operands);
    node->attrs = std::move(full);
    node->loc = std::move(loc);
    node->result = new_value(std::move(t), "", node.get());
    nodes_.push_back(std::move(node));
    return nodes_.back()->result;
  } catch (const Error& e) {
    if (loc.empty()) throw;
    throw Error(loc + ": " + e.what());
  }
}

Value* Graph::constant(double value, DType dt, Shape shape) {
  Attrs a;
  a.set("value", value);
  return add(OpKind::Const, {}, a, TensorType{dt, std::move(shape)});
}

std::vector<Node*> Graph::nodes() const {
  std::vector<Node*> out;
  out.reserve(nodes_.size());
  for (const auto& n : nodes_) out.push_back(n.get());
  return out;
}

void Graph::replace_all_uses(Value* from, Value* to) {
  for (auto& n : nodes_)
    for (Value*& v : n->operands)
      if (v == from) v = to;
  for (Value*& v : outputs_)
    if (v == from) v = to;
}

int Graph::remove_dead_nodes() {
  std::unordered_set<const Value*> live(outputs_.begin(), outputs_.end());
  std::vector<bool> keep(nodes_.size(), false);
  for (size_t i = nodes_.size(); i-- > 0;) {
    if (!live.count(nodes_[i]->result)) continue;
    keep[i] = true;
    for (Value* v : nodes_[i]->operands) live.insert(v);
  }
  std::vector<std::unique_ptr<Node>> kept;
  int removed = 0;
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (keep[i]) kept.push_back(std::move(nodes_[i]));
    else ++removed;
  }
  nodes_ = std::move(kept);
  return removed;
}

void Graph::move_tail_before(size_t mark, const Node* before) {
  auto pos = std::find_if(nodes_.begin(), nodes_.end(), [&](const auto& n) { return n.get() == before; });
  if (pos == nodes_.end() || static_cast<size_t>(pos - nodes_.begin()) >= mark) return;
  std::rotate(pos, nodes_.begin() + static_cast<std::ptrdiff_t>(mark), nodes_.end());
}

std::vector<std::vector<Node*>> Graph::users() const {
  std::vector<std::vector<Node*>> u(next_id_);
  for (const auto& n : nodes_)
    for (Value* v : n->operands)
      if (u[v->id].empty() || u[v->id].back() != n.get()) u[v->id].push_back(n.get());
  return u;
}

void Graph::clear_groups() {
  groups_.clear();
  for (auto& n : nodes_) n->group = -1;
}

void Graph::reorder(const std::vector<Node*>& order) {
  if (order.size() != nodes_.size()) throw Error("reorder: the new order must name every node once");
  std::unordered_map<const Node*, size_t> index;
  for (size_t i = 0; i < nodes_.size(); ++i) index[nodes_[i].get()] = i;
  std::vector<std::unique_ptr<Node>> out;
  for (Node* n : order) {
    auto it = index.find(n);
    if (it == index.end() || !nodes_[it->second]) throw Error("reorder: the new order must name every node once");
    out.push_back(std::move(nodes_[it->second]));
  }
  nodes_ = std::move(out);
}

Graph Graph::clone() const {
  Graph g(name_);
  std::unordered_map<const Value*, Value*> map;
  auto copy_value = [&](const Value* v, Node* producer) {
    auto c = std::make_unique<Value>(*v);
    c->producer = producer;
    g.values_.push_back(std::move(c));
    map[v] = g.values_.back().get();
    return g.values_.back().get();
  };
  for (Value* in : inputs_) g.inputs_.push_back(copy_value(in, nullptr));
  for (const auto& n : nodes_) {
    auto c = std::make_unique<Node>(*n);
    for (Value*& v : c->operands) v = map.at(v);
    c->result = copy_value(n->result, c.get());
    g.nodes_.push_back(std::move(c));
  }
  for (Value* out : outputs_) g.outputs_.push_back(map.at(out));
  g.groups_ = groups_;
  g.next_id_ = next_id_;
  return g;
}

// Attribute lists compared as written in text, so that a `const nan` (NaN != NaN)
// still counts as canonical.
static bool same_attrs(const Attrs& a, const Attrs& b) {
  if (a.items().size() != b.items().size()) return false;
  for (size_t i = 0; i < a.items().size(); ++i)
    if (a.items()[i].first != b.items()[i].first ||
        attr_value_str(a.items()[i].second) != attr_value_str(b.items()[i].second))
      return false;
  return true;
}

void verify(const Graph& g) {
  std::unordered_set<const Value*> defined(g.inputs().begin(), g.inputs().end());
  std::unordered_set<std::string> names;
  auto check_name = [&](const Value* v) {
    if (v->name.empty()) return;
    if (!names.insert(v->name).second)
      throw Error(fmt::format("graph '{}': the name %{} is defined twice", g.name(), v->name));
  };
  for (const Value* in : g.inputs()) check_name(in);
  for (const Node* n : g.nodes()) {
    std::string where = n->loc.empty() ? "" : n->loc + ": ";
    for (size_t i = 0; i < n->operands.size(); ++i)
      if (!defined.count(n->operands[i]))
        throw Error(fmt::format("{}{}: operand {} is used before it is defined", where, op_name(n->op), i));
    std::vector<TensorType> types;
    for (const Value* v : n->operands) types.push_back(v->type);
    try {
      Attrs full = complete_attrs(n->op, n->attrs);
      if (!same_attrs(full, n->attrs))
        throw Error(fmt::format("{}: attributes are not in canonical form", op_name(n->op)));
      TensorType t = infer_type(n->op, types, n->attrs, n->result->type);
      if (t != n->result->type)
        throw Error(fmt::format("{}: the result type is {}, but the node says {}", op_name(n->op), t.str(),
                                n->result->type.str()));
    } catch (const Error& e) {
      throw Error(where + e.what());
    }
    if (n->result->producer != n) throw Error(fmt::format("{}{}: result does not point back at its node", where, op_name(n->op)));
    check_name(n->result);
    defined.insert(n->result);
  }
  // Each group's nodes are contiguous, and every group index is valid.
  std::vector<bool> closed(g.groups().size(), false);
  int current = -1;
  for (const Node* n : g.nodes()) {
    if (n->group >= static_cast<int>(g.groups().size()) || n->group < -1)
      throw Error(fmt::format("graph '{}': a node names kernel group {}, which does not exist", g.name(), n->group));
    if (n->group != current) {
      if (current >= 0) closed[current] = true;
      if (n->group >= 0 && closed[n->group])
        throw Error(fmt::format("graph '{}': the nodes of kernel @{} are not contiguous", g.name(),
                                g.groups()[n->group].name));
      current = n->group;
    }
  }
  if (g.outputs().empty()) throw Error(fmt::format("graph '{}' has no outputs", g.name()));
  for (size_t i = 0; i < g.outputs().size(); ++i)
    if (!defined.count(g.outputs()[i]))
      throw Error(fmt::format("graph '{}': output {} is not defined in the graph", g.name(), i));
}

}  // namespace kiln::ir
