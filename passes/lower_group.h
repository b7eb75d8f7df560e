// What the kinds' group lowerings (passes/lower_<kind>.cpp) share, and each kind's
// lower_group, which lower_group (passes/lower.cpp) dispatches to on the group's kind.
// Internal to passes/.
#pragma once
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "ir/graph.h"
#include "ir/kernel.h"
#include "passes/lower.h"

namespace kiln::passes {

// A group's nodes, in graph order, and its outputs: the values of the group that a
// node outside it reads or the graph returns.
struct GroupNodes {
  std::vector<const ir::Node*> members;
  std::vector<const ir::Value*> roots;
};
GroupNodes group_nodes(const ir::Graph& g, int group);
// The same, for a group whose nodes make the kernel (pointwise, row_reduce): throws
// when it has no nodes or computes nothing that is used outside it.
GroupNodes checked_group_nodes(const ir::Graph& g, int group);

// The kernel of a finished build: the graph lines it fuses, verified, and its config
// from the group's `tile` attribute (validated) or the heuristic.
ir::Kernel finish_kernel(PointwiseBuild& build, const std::vector<const ir::Node*>& members, const ir::Group& grp,
                         const std::unordered_map<int, std::string>& names);

// A lowered kernel's config: the group's `tile` attribute (validated) or the heuristic's.
void choose_config(ir::Kernel& k, const ir::Group& grp);

// Throws when a build stopped at a value that it must load (PointwiseBuild::must_load):
// with a reduction's reason, or naming the reshape that cannot become index arithmetic.
void check_build(const PointwiseBuild& build, const ir::Group& grp, const std::unordered_map<int, std::string>& names);

// The error for a live node outside every group: the op, where it stands, and why no
// kernel computes it.
std::string unlowerable(const ir::Node& n, const std::unordered_map<int, std::string>& names);
// Nodes whose result some graph output needs; the others are never computed.
std::unordered_set<const ir::Node*> live_nodes(const ir::Graph& g);

// Each kind's lower_group: the kernel of group `group`, whose kind it is.
ir::Kernel lower_pointwise_group(const ir::Graph& g, int group, const std::unordered_map<int, std::string>& names);
ir::Kernel lower_row_reduce_group(const ir::Graph& g, int group, const std::unordered_map<int, std::string>& names);
ir::Kernel lower_col_reduce_group(const ir::Graph& g, int group, const std::unordered_map<int, std::string>& names);

}  // namespace kiln::passes
