// Lowering of fused groups to kernels: each kind builds its body with the scalar
// body builder (passes/body_builder.h) over its iteration space.
#include "passes/lower.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <unordered_set>

#include "ir/error.h"
#include "ir/printer.h"
#include "passes/body_builder.h"

namespace kiln::passes {

using ir::Node;
using ir::Value;

namespace {

std::string unlowerable(const Node& n, const std::unordered_map<int, std::string>& names) {
  std::string what;
  switch (ir::op_info(n.op).category) {
    case ir::OpCategory::Reduce:
      what = "no kernel kind handles this reduction yet (row_reduce takes reductions along the innermost axis of "
             "float tensors, col_reduce reductions over axes outside all the kept ones)";
      break;
    case ir::OpCategory::Matmul: what = "no kernel kind handles matmul yet"; break;
    case ir::OpCategory::Composite: what = "no kernel kind handles composite ops yet"; break;
    default: what = "it is in no kernel; run the fuse pass before lowering"; break;
  }
  return fmt::format("{}{}: {} ({})", n.loc.empty() ? "" : n.loc + ": ", ir::op_name(n.op), what,
                     ir::print_node(n, names));
}

// Nodes whose result some graph output needs; the others are never computed.
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

}  // namespace

int Plan::buffer_of(int value_id) const {
  for (size_t i = 0; i < buffers.size(); ++i)
    if (buffers[i].value_id == value_id) return static_cast<int>(i);
  return -1;
}

PointwiseBuild build_pointwise(const std::string& name, const std::vector<const Value*>& roots,
                               const std::function<bool(const Value*)>& computed_inside,
                               const std::unordered_map<int, std::string>& names) {
  if (roots.empty()) throw Error(fmt::format("kernel @{} has no outputs", name));
  auto printed = [&](const Value* v) {
    auto it = names.find(v->id);
    return fmt::format("%{}: {}", it != names.end() ? it->second : fmt::format("v{}", v->id), v->type.str());
  };
  const Shape& space = roots[0]->type.shape;
  for (const Value* r : roots) {
    if (r->type.shape != space)
      throw Error(fmt::format("kernel @{}: outputs {} and {} have different shapes; a pointwise kernel has one "
                              "iteration space",
                              name, printed(roots[0]), printed(r)));
    if (!computed_inside(r))
      throw Error(fmt::format("kernel @{}: output {} is not computed inside it", name, printed(r)));
  }
  BodyBuilder b(name, space, computed_inside, names);
  std::vector<int> ids;
  for (const Value* r : roots) {
    int id = b.demand(r, identity_map(space));
    if (id < 0) return b.failed();
    ids.push_back(id);
  }
  return b.finish(roots, ids, std::vector<Map>(roots.size(), identity_map(space)));
}

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
  if (in.empty() || !is_float(n.operands[0]->type.dtype)) return {};
  const int rank = static_cast<int>(in.size());
  bool last = false;
  for (int64_t a : n.attrs.get_ints("axis")) {
    int64_t d = a < 0 ? a + rank : a;
    if (d == rank - 1) last = true;
    else if (in[static_cast<size_t>(d)] != 1) return {};
  }
  return last ? in : Shape{};
}

std::optional<ColReduction> col_reduction(const Node& n) {
  if (ir::op_info(n.op).category != ir::OpCategory::Reduce) return std::nullopt;
  const Shape& in = n.operands[0]->type.shape;
  if (in.empty() || !is_float(n.operands[0]->type.dtype)) return std::nullopt;
  const int rank = static_cast<int>(in.size());
  std::vector<int64_t> axes;
  for (int64_t a : n.attrs.get_ints("axis")) axes.push_back(a < 0 ? a + rank : a);
  std::sort(axes.begin(), axes.end());
  axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  bool seen_kept = false;  // a kept dim of size > 1 outside a reduced one breaks the form
  for (int d = 0; d < rank; ++d) {
    if (in[static_cast<size_t>(d)] == 1) continue;
    bool reduced = std::binary_search(axes.begin(), axes.end(), d);
    if (reduced && seen_kept) return std::nullopt;
    seen_kept = seen_kept || !reduced;
  }
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

namespace {

// A group's nodes, in graph order, and its outputs: the values of the group that a
// node outside it reads or the graph returns.
struct GroupNodes {
  std::vector<const Node*> members;
  std::vector<const Value*> roots;
};

GroupNodes group_nodes(const ir::Graph& g, int group) {
  GroupNodes out;
  for (const Node* n : g.nodes())
    if (n->group == group) out.members.push_back(n);
  std::unordered_set<const Value*> escaping(g.outputs().begin(), g.outputs().end());
  for (const Node* n : g.nodes())
    if (n->group != group)
      for (const Value* v : n->operands) escaping.insert(v);
  for (const Node* n : out.members)
    if (escaping.count(n->result)) out.roots.push_back(n->result);
  return out;
}

// The kernel of a finished build: the graph lines it fuses, verified, and its config
// from the group's `tile` attribute (validated) or the heuristic.
ir::Kernel finish_kernel(PointwiseBuild& build, const std::vector<const Node*>& members, const ir::Group& grp,
                         const std::unordered_map<int, std::string>& names) {
  ir::Kernel k = std::move(build.kernel);
  for (const Node* n : members)
    if (build.nodes.count(n)) k.fused_nodes.push_back(ir::print_node(*n, names));
  ir::verify(k);
  if (grp.tile.empty()) {
    k.config = ir::heuristic(k);
  } else {
    k.config = ir::TileConfig::from_attrs(grp.tile);
    ir::validate(k, k.config);
  }
  return k;
}

// lower_group for a col_reduce group: its reduction's space and dims, then the
// outputs (values that leave the group) as per-column values.
ir::Kernel lower_col_group(const ir::Graph& g, int group, const std::unordered_map<int, std::string>& names) {
  const ir::Group& grp = g.groups().at(static_cast<size_t>(group));
  const auto [members, roots] = group_nodes(g, group);
  std::optional<ColReduction> cols;
  for (const Node* n : members) {
    if (cols || ir::op_info(n->op).category != ir::OpCategory::Reduce) continue;
    cols = col_reduction(*n);
    if (!cols)
      throw Error(fmt::format("kernel @{}: `{}` does not reduce only dims outside its kept ones of a float tensor, "
                              "which a col_reduce kernel needs",
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

}  // namespace

ir::Kernel lower_group(const ir::Graph& g, int group, const std::unordered_map<int, std::string>& names) {
  const ir::Group& grp = g.groups().at(static_cast<size_t>(group));
  const bool rows = grp.kind == "row_reduce";
  if (grp.kind == "col_reduce") return lower_col_group(g, group, names);
  if (grp.kind != "pointwise" && !rows)
    throw Error(fmt::format("kernel @{}: kernel kind '{}' has no lowering yet", grp.name, grp.kind));

  const auto [members, roots] = group_nodes(g, group);
  if (members.empty()) throw Error(fmt::format("kernel @{} has no nodes", grp.name));
  if (roots.empty()) throw Error(fmt::format("kernel @{} computes nothing that is used outside it", grp.name));

  auto inside = [group](const Value* v) { return v->producer && v->producer->group == group; };
  Shape row_space;
  for (const Node* n : members)
    if (rows && row_space.empty() && ir::op_info(n->op).category == ir::OpCategory::Reduce) {
      row_space = row_reduction_space(*n);
      if (row_space.empty())
        throw Error(fmt::format("kernel @{}: `{}` is not a reduction along the innermost axis of a float tensor, "
                                "which a row_reduce kernel needs",
                                grp.name, ir::print_node(*n, names)));
    }
  if (rows && row_space.empty()) throw Error(fmt::format("kernel @{}: a row_reduce kernel has no reduction", grp.name));
  PointwiseBuild build = rows ? build_row_reduce(grp.name, row_space, roots, inside, names)
                              : build_pointwise(grp.name, roots, inside, names);
  if (build.must_load && !build.failure.empty())
    throw Error(fmt::format("kernel @{}: {}", grp.name, build.failure));
  if (build.must_load) {
    auto it = names.find(build.must_load->id);
    throw Error(fmt::format("kernel @{}: `{}` regroups elements that a view inside the kernel has already reordered, "
                            "so it cannot become index arithmetic; %{} must be written to memory by an earlier kernel",
                            grp.name, ir::print_node(*build.failed_reshape, names),
                            it != names.end() ? it->second : std::to_string(build.must_load->id)));
  }
  return finish_kernel(build, members, grp, names);
}

Plan lower(const ir::Graph& g) {
  auto names = ir::value_names(g);
  auto live = live_nodes(g);
  const Node* outside = nullptr;  // a reduction (or matmul, ...) explains more than a view next to it
  for (const Node* n : g.nodes()) {
    if (n->group >= 0 || !live.count(n)) continue;
    bool opaque = !ir::is_elementwise(n->op) && ir::op_info(n->op).category != ir::OpCategory::Source &&
                  ir::op_info(n->op).category != ir::OpCategory::View;
    if (opaque) throw Error(unlowerable(*n, names));
    if (!outside) outside = n;
  }
  if (outside) throw Error(unlowerable(*outside, names));

  Plan plan;
  std::unordered_set<const Value*> outputs(g.outputs().begin(), g.outputs().end());
  for (const Value* in : g.inputs()) {
    plan.inputs.push_back(static_cast<int>(plan.buffers.size()));
    plan.buffers.push_back(Buffer{in->id, names.at(in->id), in->type, BufferRole::Input});
  }
  // Groups are contiguous and in topological order, so their order is a launch order.
  std::vector<int> order;
  for (const Node* n : g.nodes())
    if (n->group >= 0 && (order.empty() || order.back() != n->group)) order.push_back(n->group);
  for (int group : order) {
    ir::Kernel k = lower_group(g, group, names);
    for (const ir::KernelArg& a : k.args) {
      if (plan.buffer_of(a.value_id) >= 0) continue;
      if (!a.is_output)
        throw Error(fmt::format("kernel @{} reads %{}, which no earlier kernel writes", k.name, a.name));
      bool returned = std::any_of(outputs.begin(), outputs.end(), [&](const Value* o) { return o->id == a.value_id; });
      plan.buffers.push_back(
          Buffer{a.value_id, names.at(a.value_id), a.type, returned ? BufferRole::Output : BufferRole::Intermediate});
    }
    plan.kernels.push_back(std::move(k));
  }
  for (const Value* out : g.outputs()) {
    int b = plan.buffer_of(out->id);
    if (b < 0) throw Error(fmt::format("graph '{}': output %{} is computed by no kernel", g.name(), names.at(out->id)));
    plan.outputs.push_back(b);
  }
  return plan;
}

}  // namespace kiln::passes
