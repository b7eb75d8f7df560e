// The list of every hand-written baseline and the look-ups the benchmark uses.
#include <fmt/format.h>

#include <algorithm>

#include "baselines/baseline.h"
#include "baselines/families.h"
#include "ir/error.h"

namespace kiln::baselines {

const std::vector<Baseline>& all() {
  static const std::vector<Baseline> baselines = [] {
    std::vector<Baseline> list;
    for (auto family : {elementwise_chain_baselines, multi_input_elementwise_baselines, softmax_baselines,
                        norm_baselines, reduction_baselines, gemm_baselines, attention_baselines})
      for (Baseline& b : family()) list.push_back(std::move(b));
    return list;
  }();
  return baselines;
}

std::vector<const Baseline*> for_op(std::string_view op, DType dtype) {
  std::vector<const Baseline*> found;
  for (const Baseline& b : all())
    if (b.op == op && std::find(b.dtypes.begin(), b.dtypes.end(), dtype) != b.dtypes.end()) found.push_back(&b);
  return found;
}

const Baseline* find(const Problem& p) {
  for (const Baseline* b : for_op(p.op, p.dtype))
    if (b->why_unsupported(p).empty()) return b;
  return nullptr;
}

const Baseline& by_name(std::string_view name) {
  std::vector<std::string> names;
  for (const Baseline& b : all()) {
    if (b.name == name) return b;
    names.push_back(b.name);
  }
  throw Error(fmt::format("no baseline named '{}'; known: {}", name, fmt::join(names, ", ")));
}

}  // namespace kiln::baselines
