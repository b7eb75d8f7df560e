// The col-reduce kind's lowering: the group's reduction gives the space (its operand's
// shape) and its reduced dims, any set of them; outputs hold one value per column (per
// kept element), and reductions of those columns inside the group become the body's
// Reduce ops. The kernel reads the operand in place: collapse() and the emitter turn
// the reduced and kept dims into index arithmetic (see ir/kernel_col_reduce.cpp).
#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "ir/error.h"
#include "ir/printer.h"
#include "passes/body_builder.h"
#include "passes/lower.h"
#include "passes/lower_group.h"

namespace kiln::passes {

using ir::Node;
using ir::Value;

std::optional<ColReduction> col_reduction(const Node& n) {
  if (ir::op_info(n.op).category != ir::OpCategory::Reduce) return std::nullopt;
  const Shape& in = n.operands[0]->type.shape;
  if (in.empty()) return std::nullopt;
  const int rank = static_cast<int>(in.size());
  std::vector<int64_t> axes;
  for (int64_t a : n.attrs.get_ints("axis")) axes.push_back(a < 0 ? a + rank : a);
  std::sort(axes.begin(), axes.end());
  axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  return ColReduction{in, axes};
}

PointwiseBuild build_col_reduce(const std::string& name, const ColReduction& cols,
                                const std::vector<const Value*>& roots,
                                const std::function<bool(const Value*)>& computed_inside,
                                const std::unordered_map<int, std::string>& names) {
  if (roots.empty()) throw Error(fmt::format("kernel @{} has no outputs", name));
  if (cols.space.empty() || cols.axes.empty())
    throw Error(fmt::format("kernel @{}: a column reduction needs a space of rank 1 or more and a reduced dim", name));
  BodyBuilder b(name, cols.space, computed_inside, names);
  b.reduce_columns(cols.axes);
  return demand_outputs(b, name, roots, computed_inside, names, [&](const Shape& s) { return b.col_map(s); },
                        fmt::format("not one value per column of {} reduced over {}", shape_str(cols.space),
                                    shape_str(cols.axes)));
}

// lower_group for a col_reduce group: its reduction's space and dims, then the
// outputs (values that leave the group) as per-column values.
ir::Kernel lower_col_reduce_group(const ir::Graph& g, int group, const std::unordered_map<int, std::string>& names) {
  const ir::Group& grp = g.groups().at(static_cast<size_t>(group));
  const auto [members, roots] = group_nodes(g, group);
  std::optional<ColReduction> cols;
  for (const Node* n : members) {
    if (cols || ir::op_info(n->op).category != ir::OpCategory::Reduce) continue;
    cols = col_reduction(*n);
    if (!cols)
      throw Error(fmt::format("kernel @{}: `{}` is not a reduction of a tensor of rank 1 or more, which a "
                              "col_reduce kernel needs",
                              grp.name, ir::print_node(*n, names)));
  }
  if (!cols) throw Error(fmt::format("kernel @{}: a col_reduce kernel has no reduction", grp.name));
  if (roots.empty()) throw Error(fmt::format("kernel @{} computes nothing that is used outside it", grp.name));
  auto inside = [group](const Value* v) { return v->producer && v->producer->group == group; };
  PointwiseBuild build = build_col_reduce(grp.name, *cols, roots, inside, names);
  if (build.must_load && !build.failure.empty()) throw Error(fmt::format("kernel @{}: {}", grp.name, build.failure));
  if (build.must_load)
    throw Error(fmt::format("kernel @{}: `{}` cannot become index arithmetic inside a col_reduce kernel", grp.name,
                            ir::print_node(*build.failed_reshape, names)));
  return finish_kernel(build, members, grp, names);
}

}  // namespace kiln::passes
