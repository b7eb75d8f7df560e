// Reference semantics of dequant: wd[..., k] = (w[..., k] - z[..., k / group]) * s[..., k / group],
// in double (exact: the weights are small integers), rounded once to the scales' dtype.
#include <cstdint>
#include <vector>

#include "ir/interpreter_kernels.h"

namespace kiln::ir::interp {

HostTensor eval_dequant(const Node& n, const Args& args) {
  const HostTensor &w = *args[0], &s = *args[1];
  const HostTensor* z = args.size() > 2 ? args[2] : nullptr;
  const int64_t k = w.type.shape.back(), group = n.attrs.get_int("group");
  const int64_t groups = k / group;
  std::vector<double> out(w.values.size());
  parallel_for(w.numel() / k, k, [&](int64_t row_begin, int64_t row_end) {
    for (int64_t row = row_begin; row < row_end; ++row)
      for (int64_t i = 0; i < k; ++i) {
        const size_t at = static_cast<size_t>(row * k + i), g = static_cast<size_t>(row * groups + i / group);
        out[at] = (w.values[at] - (z ? z->values[g] : 0.0)) * s.values[g];
      }
  });
  return HostTensor(n.result->type, std::move(out));
}

}  // namespace kiln::ir::interp
