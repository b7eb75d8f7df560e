// A pass rewrites a graph in place and says whether it changed anything.
// Passes are registered by name in passes.def; PassManager builds a pipeline
// from a string such as "decompose,simplify,cse,dce".
#pragma once
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ir/graph.h"

namespace kiln::passes {

class Pass {
public:
  virtual ~Pass() = default;
  virtual std::string_view name() const = 0;
  // Returns true when the graph changed.
  virtual bool run(ir::Graph& g) = 0;
};

// Every registered pass name, in the order of passes.def.
std::vector<std::string_view> pass_names();
// A new instance of the named pass; throws kiln::Error listing the known names.
std::unique_ptr<Pass> create_pass(std::string_view name);

// The default lowering pipeline of Kiln's graph passes.
inline constexpr std::string_view kDefaultPipeline = "decompose,simplify,cse,dce,online-softmax,welford";

}  // namespace kiln::passes
