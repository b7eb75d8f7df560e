// The kernel IR's row-reduce part: a kernel's rows and their length, the strides of
// a per-row value, what belongs to a row or stays the same along it, and the
// collapsed form [rows..., N].
#include "ir/kernel.h"
#include "ir/kernel_internal.h"

namespace kiln::ir {

std::vector<int64_t> per_row_strides(const Shape& space) {
  Shape rows(space.begin(), space.end() - (space.empty() ? 0 : 1));
  std::vector<int64_t> s = contiguous_strides(rows);
  s.push_back(0);
  return s;
}

int64_t row_length(const Kernel& k) { return k.space().empty() ? 1 : k.space().back(); }
int64_t row_count(const Kernel& k) { return k.numel() / row_length(k); }

bool belongs_to_row(const Kernel& k, const CollapsedSpace& c, int arg) {
  const std::vector<int64_t>& st = c.arg_strides.at(static_cast<size_t>(arg));
  if (k.args.at(static_cast<size_t>(arg)).is_output || st.back() == 0) return false;
  bool owned = row_count(k) == 1;
  for (size_t d = 0; d + 1 < st.size(); ++d) owned = owned || st[d] != 0;
  return owned;
}

std::vector<bool> row_uniform(const Kernel& k) {
  return uniform_values(k, [](const std::vector<int64_t>& s) { return s.back() != 0; });
}

CollapsedSpace collapse_row(const Kernel& k, const std::vector<std::vector<int64_t>>& in) {
  const Shape& space = k.space();
  Shape rows(space.begin(), space.end() - 1);
  std::vector<std::vector<int64_t>> row_in;
  for (const auto& s : in) row_in.emplace_back(s.begin(), s.end() - 1);
  CollapsedSpace c;
  bool one_row = numel(rows) == 1;
  if (!one_row) c = merge_dims(rows, row_in, k.args.size());
  if (one_row) {
    c.dims = {1};
    c.arg_strides.assign(k.args.size(), {0});
    c.index_coeffs.assign(in.size() - k.args.size(), {0});
  }
  c.dims.push_back(space.back());
  for (size_t a = 0; a < in.size(); ++a) {
    auto& target = a < k.args.size() ? c.arg_strides[a] : c.index_coeffs[a - k.args.size()];
    target.push_back(space.back() == 1 ? 0 : in[a].back());
  }
  return c;
}

}  // namespace kiln::ir
