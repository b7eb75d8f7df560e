// The kernel IR's col-reduce part: a kernel's reduced count and column count, the
// strides of a per-column value, what stays the same along the reduced dims, and the
// collapsed form [K..., N...].
//
// Canonical form. A col_reduce kernel takes any set of reduced dims of its space.
// collapse() drops the size-1 dims and merges neighbouring dims of the same class
// (reduced or kept) wherever every access walks them as one, then lists the reduced
// dims first, [R..., K...], keeping each side in memory order. The emitter walks
// each side by one linear index whose mixed-radix digits give the coordinates, so
// every pattern is one loop with index arithmetic:
//   [R, K]       a column reduction: threads across K, the loop down R;
//   [K1, R, K2]  the same batched over K1 (a middle axis): the kept side is [K1, K2],
//                and a block's columns are consecutive along K2, so each of its rows
//                is one contiguous, coalesced stretch of the [R, K2] slab;
//   [K, R]       a row-like reduction (row_reduce takes the plain ones): a block per
//                column, its threads and vectors walk R (col_reads_along_reduced);
//   [R1, K, R2]  the same with the reduced side [R1, R2]: R2 is read as a contiguous
//                row inside, R1 by the digit above it;
//   [R]          a full reduction: one column, split across the GPU.
// Longer alternations map onto these in the same way.
#include <algorithm>

#include "ir/kernel.h"
#include "ir/kernel_internal.h"

namespace kiln::ir {

namespace {

bool is_reduced_axis(const Kernel& k, size_t d) {
  return std::find(k.reduced_axes.begin(), k.reduced_axes.end(), static_cast<int64_t>(d)) != k.reduced_axes.end();
}

}  // namespace

int64_t col_reduced_count(const Kernel& k) {
  int64_t n = 1;
  for (int64_t d : k.reduced_axes) n *= k.space().at(static_cast<size_t>(d));
  return n;
}
int64_t col_count(const Kernel& k) { return k.numel() / col_reduced_count(k); }

bool col_reads_along_reduced(const Kernel& k) {
  const Shape& space = k.space();
  for (size_t d = space.size(); d-- > 0;)
    if (space[d] != 1) return is_reduced_axis(k, d);
  return true;
}

std::vector<int64_t> per_col_strides(const Kernel& k) {
  const Shape& space = k.space();
  Shape kept;
  for (size_t d = 0; d < space.size(); ++d)
    if (!is_reduced_axis(k, d)) kept.push_back(space[d]);
  std::vector<int64_t> kept_strides = contiguous_strides(kept), s;
  for (size_t d = 0, j = 0; d < space.size(); ++d) s.push_back(is_reduced_axis(k, d) ? 0 : kept_strides[j++]);
  return s;
}

std::vector<bool> col_uniform(const Kernel& k) {
  return uniform_values(k, [&](const std::vector<int64_t>& s) {
    for (int64_t d : k.reduced_axes)
      if (s.at(static_cast<size_t>(d)) != 0) return true;
    return false;
  });
}

CollapsedSpace collapse_col(const Kernel& k, const std::vector<std::vector<int64_t>>& in) {
  const Shape& space = k.space();
  CollapsedSpace sides[2];  // reduced, kept
  for (int kept = 0; kept < 2; ++kept) {
    Shape dims;
    std::vector<std::vector<int64_t>> part(in.size());
    for (size_t d = 0; d < space.size(); ++d) {
      if (is_reduced_axis(k, d) == (kept == 1)) continue;
      dims.push_back(space[d]);
      for (size_t a = 0; a < in.size(); ++a) part[a].push_back(in[a][d]);
    }
    sides[kept] = merge_dims(dims, part, k.args.size());
  }
  CollapsedSpace c = std::move(sides[0]);
  c.reduced_dims = static_cast<int>(c.dims.size());
  c.dims.insert(c.dims.end(), sides[1].dims.begin(), sides[1].dims.end());
  for (size_t a = 0; a < c.arg_strides.size(); ++a)
    c.arg_strides[a].insert(c.arg_strides[a].end(), sides[1].arg_strides[a].begin(), sides[1].arg_strides[a].end());
  for (size_t i = 0; i < c.index_coeffs.size(); ++i)
    c.index_coeffs[i].insert(c.index_coeffs[i].end(), sides[1].index_coeffs[i].begin(),
                             sides[1].index_coeffs[i].end());
  return c;
}

}  // namespace kiln::ir
