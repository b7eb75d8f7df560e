#include "ir/compare.h"

#include <fmt/format.h>

#include <cmath>

#include "ir/error.h"

namespace kiln {

double default_rel_l2_bound(DType t) {
  switch (t) {
    case DType::f32: return 1e-5;
    case DType::f16: case DType::bf16: return 1e-2;
    case DType::i32: return 0;
    case DType::i1: return 1e-4;  // fraction of flipped booleans
  }
  return 0;
}

Comparison compare(const HostTensor& got, const HostTensor& want, double bound) {
  if (got.type != want.type)
    throw Error(fmt::format("compare: types differ ({} vs {})", got.type.str(), want.type.str()));
  Comparison c;
  c.bound = bound >= 0 ? bound : default_rel_l2_bound(want.type.dtype);
  double diff2 = 0, ref2 = 0;
  for (size_t i = 0; i < want.values.size(); ++i) {
    double g = got.values[i], w = want.values[i];
    if (!std::isfinite(w)) {
      // The reference itself is NaN or Inf (e.g. log of a negative): the same class passes.
      bool same = (std::isnan(w) && std::isnan(g)) || g == w;
      if (!same) ++c.bad_nonfinite;
      continue;
    }
    if (!std::isfinite(g)) {
      ++c.bad_nonfinite;
      continue;
    }
    if (g != w) ++c.mismatches;
    diff2 += (g - w) * (g - w);
    ref2 += w * w;
    c.max_abs = std::max(c.max_abs, std::fabs(g - w));
  }
  c.rel_l2 = ref2 > 0 ? std::sqrt(diff2 / ref2) : std::sqrt(diff2);
  DType t = want.type.dtype;
  if (t == DType::i32) c.passed = c.mismatches == 0;
  else if (t == DType::i1) c.passed = static_cast<double>(c.mismatches) <= c.bound * static_cast<double>(want.values.size());
  else c.passed = c.rel_l2 <= c.bound;
  c.passed = c.passed && c.bad_nonfinite == 0;
  return c;
}

std::string Comparison::str() const {
  return fmt::format("rel_l2 {:.2e} (bound {:.0e}), max_abs {:.2e}, mismatched {}, bad nan/inf {}: {}", rel_l2,
                     bound, max_abs, mismatches, bad_nonfinite, passed ? "ok" : "FAILED");
}

}  // namespace kiln
