// What the kinds' group lowerings share (see lower_group.h): a group's nodes and
// outputs, the finished kernel with its config, and the errors for what cannot be lowered.
#include "passes/lower_group.h"

#include <fmt/format.h>

#include "ir/error.h"
#include "ir/printer.h"

namespace kiln::passes {

using ir::Node;
using ir::Value;

GroupNodes group_nodes(const ir::Graph& g, int group) {
  GroupNodes out;
  for (const Node* n : g.nodes())
    if (n->group == group) out.members.push_back(n);
  // Only the members' results can escape: a set of those, looked up, stays small for
  // each of a long graph's many groups.
  std::unordered_set<const Value*> results, escaping;
  for (const Node* n : out.members) results.insert(n->result);
  for (const Value* v : g.outputs())
    if (results.count(v)) escaping.insert(v);
  for (const Node* n : g.nodes())
    if (n->group != group)
      for (const Value* v : n->operands)
        if (results.count(v)) escaping.insert(v);
  for (const Node* n : out.members)
    if (escaping.count(n->result)) out.roots.push_back(n->result);
  return out;
}

GroupNodes checked_group_nodes(const ir::Graph& g, int group) {
  const ir::Group& grp = g.groups().at(static_cast<size_t>(group));
  GroupNodes out = group_nodes(g, group);
  if (out.members.empty()) throw Error(fmt::format("kernel @{} has no nodes", grp.name));
  if (out.roots.empty()) throw Error(fmt::format("kernel @{} computes nothing that is used outside it", grp.name));
  return out;
}

ir::Kernel finish_kernel(PointwiseBuild& build, const std::vector<const Node*>& members, const ir::Group& grp,
                         const std::unordered_map<int, std::string>& names) {
  ir::Kernel k = std::move(build.kernel);
  for (const Node* n : members)
    if (build.nodes.count(n)) k.fused_nodes.push_back(ir::print_node(*n, names));
  ir::verify(k);
  choose_config(k, grp);
  return k;
}

void choose_config(ir::Kernel& k, const ir::Group& grp) {
  if (grp.tile.empty()) {
    k.config = ir::heuristic(k);
  } else {
    k.config = ir::TileConfig::from_attrs(grp.tile);
    ir::validate(k, k.config);
  }
}

void check_build(const PointwiseBuild& build, const ir::Group& grp, const std::unordered_map<int, std::string>& names) {
  if (build.must_load && !build.failure.empty())
    throw Error(fmt::format("kernel @{}: {}", grp.name, build.failure));
  if (build.must_load) {
    auto it = names.find(build.must_load->id);
    throw Error(fmt::format("kernel @{}: `{}` regroups elements that a view inside the kernel has already reordered, "
                            "so it cannot become index arithmetic; %{} must be written to memory by an earlier kernel",
                            grp.name, ir::print_node(*build.failed_reshape, names),
                            it != names.end() ? it->second : std::to_string(build.must_load->id)));
  }
}

std::string unlowerable(const Node& n, const std::unordered_map<int, std::string>& names) {
  std::string what;
  switch (ir::op_info(n.op).category) {
    case ir::OpCategory::Reduce:
      what = "it is in no row_reduce or col_reduce kernel; run the fuse pass before lowering";
      break;
    case ir::OpCategory::Matmul: what = "it is in no gemm kernel; run the fuse pass before lowering"; break;
    case ir::OpCategory::Composite: what = "no kernel kind handles composite ops yet"; break;
    case ir::OpCategory::Dequant:
      what = "it folds into no gemm kernel's operand load; run the decompose pass to expand it into element-wise ops";
      break;
    default: what = "it is in no kernel; run the fuse pass before lowering"; break;
  }
  return fmt::format("{}{}: {} ({})", n.loc.empty() ? "" : n.loc + ": ", ir::op_name(n.op), what,
                     ir::print_node(n, names));
}

std::unordered_set<const Node*> live_nodes(const ir::Graph& g) {
  std::unordered_set<const Value*> needed(g.outputs().begin(), g.outputs().end());
  std::unordered_set<const Node*> live;
  auto nodes = g.nodes();
  for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
    if (!needed.count((*it)->result)) continue;
    live.insert(*it);
    for (const Value* v : (*it)->operands) needed.insert(v);
  }
  return live;
}

}  // namespace kiln::passes
