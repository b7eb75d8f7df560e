// The printer of Kiln's textual IR (see printer.h); parser.cpp reads the same form back.
#include "ir/printer.h"

#include <fmt/format.h>

#include <unordered_set>

namespace kiln::ir {

namespace {

// The printed name of a value; a value missing from `names` (a graph that does not
// verify) prints as its id so that the printer never throws while debugging a pass.
std::string name_of(const Value* v, const std::unordered_map<int, std::string>& names) {
  if (!v) return "%<null>";
  auto it = names.find(v->id);
  return it != names.end() ? "%" + it->second : fmt::format("%<undefined:{}>", v->id);
}

}  // namespace

std::unordered_map<int, std::string> value_names(const Graph& g) {
  std::unordered_set<std::string> taken;
  for (const Value* v : g.inputs()) taken.insert(v->name);
  for (const Node* n : g.nodes()) taken.insert(n->result->name);

  std::unordered_map<int, std::string> names;
  int next = 0;
  auto assign = [&](const Value* v) {
    if (!v->name.empty()) {
      names[v->id] = v->name;
      return;
    }
    while (taken.count(std::to_string(next))) ++next;
    names[v->id] = std::to_string(next++);
  };
  for (const Value* v : g.inputs()) assign(v);
  for (const Node* n : g.nodes()) assign(n->result);
  return names;
}

std::string print_node(const Node& n, const std::unordered_map<int, std::string>& names) {
  std::string line = fmt::format("{} = {}", name_of(n.result, names), op_name(n.op));
  // const writes its value positionally: "%c = const 0.5 : f16[]".
  bool positional_value = n.op == OpKind::Const;
  if (positional_value) {
    if (const AttrValue* v = n.attrs.find("value")) line += " " + attr_value_str(*v);
  }
  for (size_t i = 0; i < n.operands.size(); ++i) line += (i ? ", " : " ") + name_of(n.operands[i], names);
  std::string attrs;
  for (const auto& [key, value] : n.attrs.items()) {
    if (positional_value && key == "value") continue;
    attrs += fmt::format("{}{} = {}", attrs.empty() ? "" : ", ", key, attr_value_str(value));
  }
  if (!attrs.empty()) line += " {" + attrs + "}";
  return line + " : " + (n.result ? n.result->type.str() : "?");
}

std::string print(const Graph& g) {
  auto names = value_names(g);
  std::string out = fmt::format("func @{}(", g.name());
  for (size_t i = 0; i < g.inputs().size(); ++i) {
    const Value* v = g.inputs()[i];
    out += fmt::format("{}{}: {}", i ? ", " : "", name_of(v, names), v->type.str());
  }
  out += ") -> (";
  for (size_t i = 0; i < g.outputs().size(); ++i) out += (i ? ", " : "") + g.outputs()[i]->type.str();
  out += ") {\n";

  // A fused group's nodes are contiguous: open its block at its first node and
  // close it when the group changes.
  int open_group = -1;
  const int num_groups = static_cast<int>(g.groups().size());
  for (const Node* n : g.nodes()) {
    int group = n->group >= 0 && n->group < num_groups ? n->group : -1;
    if (group != open_group) {
      if (open_group >= 0) out += "  }\n";
      if (group >= 0) {
        const Group& grp = g.groups()[group];
        out += fmt::format("  kernel @{} {}", grp.name, grp.kind);
        if (!grp.tile.empty()) {  // the config the `tile` pass chose
          out += " tile {";
          for (size_t i = 0; i < grp.tile.items().size(); ++i)
            out += fmt::format("{}{} = {}", i ? ", " : "", grp.tile.items()[i].first,
                               attr_value_str(grp.tile.items()[i].second));
          out += "}";
        }
        out += " {\n";
      }
      open_group = group;
    }
    out += (open_group >= 0 ? "    " : "  ") + print_node(*n, names) + "\n";
  }
  if (open_group >= 0) out += "  }\n";

  out += "  return";
  for (size_t i = 0; i < g.outputs().size(); ++i) out += (i ? ", " : " ") + name_of(g.outputs()[i], names);
  return out + "\n}\n";
}

}  // namespace kiln::ir
