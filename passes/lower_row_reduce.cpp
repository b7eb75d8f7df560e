// The row-reduce kind's lowering: the group's first reduction gives the rows
// [rows..., N] (N reduced, innermost); outputs are full rows or one value per row, and
// reductions of the rows inside the group become the body's Reduce ops.
#include <fmt/format.h>

#include "ir/error.h"
#include "ir/printer.h"
#include "passes/body_builder.h"
#include "passes/lower.h"
#include "passes/lower_group.h"

namespace kiln::passes {

using ir::Node;
using ir::Value;

PointwiseBuild build_row_reduce(const std::string& name, const Shape& rows,
                                const std::vector<const Value*>& roots,
                                const std::function<bool(const Value*)>& computed_inside,
                                const std::unordered_map<int, std::string>& names) {
  if (roots.empty()) throw Error(fmt::format("kernel @{} has no outputs", name));
  if (rows.empty()) throw Error(fmt::format("kernel @{}: a row reduction needs rows of rank 1 or more", name));
  BodyBuilder b(name, rows, computed_inside, names, true);
  return demand_outputs(b, name, roots, computed_inside, names, [&](const Shape& s) { return b.row_map(s); },
                        fmt::format("neither the rows {} nor one value per row", shape_str(rows)));
}

Shape row_reduction_space(const Node& n) {
  if (ir::op_info(n.op).category != ir::OpCategory::Reduce) return {};
  const Shape& in = n.operands[0]->type.shape;
  if (in.empty()) return {};
  const int rank = static_cast<int>(in.size());
  bool last = false;
  for (int64_t a : n.attrs.get_ints("axis")) {
    int64_t d = a < 0 ? a + rank : a;
    if (d == rank - 1) last = true;
    else if (in[static_cast<size_t>(d)] != 1) return {};
  }
  return last ? in : Shape{};
}

ir::Kernel lower_row_reduce_group(const ir::Graph& g, int group, const std::unordered_map<int, std::string>& names) {
  const ir::Group& grp = g.groups().at(static_cast<size_t>(group));
  const auto [members, roots] = checked_group_nodes(g, group);

  auto inside = [group](const Value* v) { return v->producer && v->producer->group == group; };
  Shape row_space;
  for (const Node* n : members)
    if (row_space.empty() && ir::op_info(n->op).category == ir::OpCategory::Reduce) {
      row_space = row_reduction_space(*n);
      if (row_space.empty())
        throw Error(fmt::format("kernel @{}: `{}` is not a reduction along the innermost axis, which a row_reduce "
                                "kernel needs",
                                grp.name, ir::print_node(*n, names)));
    }
  if (row_space.empty()) throw Error(fmt::format("kernel @{}: a row_reduce kernel has no reduction", grp.name));
  PointwiseBuild build = build_row_reduce(grp.name, row_space, roots, inside, names);
  check_build(build, grp, names);
  return finish_kernel(build, members, grp, names);
}

}  // namespace kiln::passes
