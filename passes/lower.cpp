// Lowering: the graph's kernel groups become kernels in launch order, each through
// its kind's lowering (passes/lower_<kind>.cpp, chosen by the table below), and the
// buffer plan binds the values that cross kernel boundaries.
#include "passes/lower.h"

#include <fmt/format.h>

#include <algorithm>
#include <unordered_set>

#include "ir/error.h"
#include "ir/printer.h"
#include "passes/lower_attention.h"
#include "passes/lower_gemm.h"
#include "passes/lower_group.h"

namespace kiln::passes {

using ir::Node;
using ir::Value;

namespace {

// A kernel kind that has a lowering: its name in a group's `kind`, and its lower_group.
struct KindLowering {
  const char* kind;
  ir::Kernel (*lower)(const ir::Graph& g, int group, const std::unordered_map<int, std::string>& names);
};

constexpr KindLowering kLowerings[] = {
    {"pointwise", lower_pointwise_group},
    {"row_reduce", lower_row_reduce_group},
    {"col_reduce", lower_col_reduce_group},
    {"gemm", lower_gemm_group},
    {"attention", lower_attention_group},
};

}  // namespace

int Plan::buffer_of(int value_id) const {
  for (size_t i = 0; i < buffers.size(); ++i)
    if (buffers[i].value_id == value_id) return static_cast<int>(i);
  return -1;
}

ir::Kernel lower_group(const ir::Graph& g, int group, const std::unordered_map<int, std::string>& names) {
  const ir::Group& grp = g.groups().at(static_cast<size_t>(group));
  for (const KindLowering& k : kLowerings)
    if (grp.kind == k.kind) return k.lower(g, group, names);
  throw Error(fmt::format("kernel @{}: kernel kind '{}' has no lowering yet", grp.name, grp.kind));
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
