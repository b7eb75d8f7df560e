// dce: removes the nodes that no graph output needs. Inputs stay even when
// unused: they are the graph's signature, which callers bind by position.
#include "passes/pass.h"

namespace kiln::passes {

namespace {

class DCE : public Pass {
public:
  std::string_view name() const override { return "dce"; }
  bool run(ir::Graph& g) override { return g.remove_dead_nodes() > 0; }
};

}  // namespace

std::unique_ptr<Pass> make_DCE() { return std::make_unique<DCE>(); }

}  // namespace kiln::passes
