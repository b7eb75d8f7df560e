// cse: common subexpression elimination. Two nodes with the same op, the same
// operands, the same attributes and the same result type compute the same tensor
// (every Kiln op is pure), so the later one is replaced by the first.
#include <fmt/format.h>

#include <string>
#include <unordered_map>

#include "passes/pass.h"

namespace kiln::passes {

namespace {

// A text key that is equal exactly when two nodes compute the same value. Float
// attributes print as their shortest round-trip text, so distinct values
// (0.0 and -0.0 included) get distinct keys.
std::string node_key(const ir::Node& n) {
  std::string key = fmt::format("{}/{}/{}/{}(", static_cast<int>(n.op), op_name(n.op), n.group, n.result->type.str());
  for (const ir::Value* v : n.operands) key += fmt::format("{},", v->id);
  key += "){";
  for (const auto& [name, value] : n.attrs.items()) key += fmt::format("{}={};", name, ir::attr_value_str(value));
  return key + "}";
}

// Numbers are what the printer gives unnamed values (and what parsing them back
// leaves as names): a user's name is anything else.
bool has_user_name(const ir::Value* v) {
  return v->name.find_first_not_of("0123456789") != std::string::npos;
}

class CSE : public Pass {
public:
  std::string_view name() const override { return "cse"; }

  bool run(ir::Graph& g) override {
    std::unordered_map<std::string, ir::Value*> first;
    int merged = 0;
    // Operands are replaced as we go, so a chain of duplicates collapses in one walk.
    for (ir::Node* n : g.nodes()) {
      auto [it, inserted] = first.try_emplace(node_key(*n), n->result);
      if (inserted) continue;
      ir::Value* kept = it->second;
      g.replace_all_uses(n->result, kept);
      if (!has_user_name(kept) && has_user_name(n->result)) kept->name = n->result->name;
      n->result->name.clear();
      ++merged;
    }
    // The duplicates are now unused; dropping them drops any other unused node too,
    // as MLIR's CSE does (Kiln's ops have no side effects).
    if (merged > 0) g.remove_dead_nodes();
    return merged > 0;
  }
};

}  // namespace

std::unique_ptr<Pass> make_CSE() { return std::make_unique<CSE>(); }

}  // namespace kiln::passes
