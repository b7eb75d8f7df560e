// The `tile` pass: gives every kernel group a tile config.
//
// Configs live on the graph, in ir::Group::tile, so that they are visible next to the
// kernel they belong to, survive between passes, and can be pinned by hand; lowering
// reads them back (and falls back to the heuristic for a group without one). A config
// that is already there (written by a user, or by an earlier run) is kept and checked.
// The tuning database, once it exists, is consulted here before the heuristic.
#include "ir/printer.h"
#include "passes/lower.h"
#include "passes/pass.h"

namespace kiln::passes {

namespace {

class Tile : public Pass {
public:
  std::string_view name() const override { return "tile"; }
  bool run(ir::Graph& g) override {
    auto names = ir::value_names(g);
    bool changed = false;
    for (int i = 0; i < static_cast<int>(g.groups().size()); ++i) {
      // lower_group validates a config already there and picks the heuristic's otherwise.
      ir::Kernel k = lower_group(g, i, names);
      if (!g.groups()[i].tile.empty()) continue;
      g.group(i).tile = k.config.to_attrs();
      changed = true;
    }
    return changed;
  }
};

}  // namespace

std::unique_ptr<Pass> make_Tile() { return std::make_unique<Tile>(); }

}  // namespace kiln::passes
