// The pointwise kind's lowering: the outputs share one shape, the iteration space,
// and each is computed at the identity map; everything upstream that the group
// computes is inlined, the rest loaded.
#include <fmt/format.h>

#include "ir/error.h"
#include "passes/body_builder.h"
#include "passes/lower.h"
#include "passes/lower_group.h"

namespace kiln::passes {

using ir::Value;

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

ir::Kernel lower_pointwise_group(const ir::Graph& g, int group, const std::unordered_map<int, std::string>& names) {
  const ir::Group& grp = g.groups().at(static_cast<size_t>(group));
  const auto [members, roots] = checked_group_nodes(g, group);

  auto inside = [group](const Value* v) { return v->producer && v->producer->group == group; };
  PointwiseBuild build = build_pointwise(grp.name, roots, inside, names);
  check_build(build, grp, names);
  return finish_kernel(build, members, grp, names);
}

}  // namespace kiln::passes
