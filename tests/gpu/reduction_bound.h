// The error bound of a row reduction's output, for the GPU tests that compare one with
// the reference interpreter.
#pragma once
#include <algorithm>
#include <cmath>
#include <string>

#include "ir/compare.h"
#include "ir/tensor.h"

namespace kiln::gpu_test {

// A sum whose terms cancel is ill-conditioned: fp32 accumulation is exact to a few
// ulps of the sum of |x|, not of the (small) result. The bound for sums and means grows
// with the condition number ||sum |x| per row|| / ||sum x per row||; other reductions
// keep the dtype's bound.
inline double reduction_bound(const std::string& which, const HostTensor& x, long rows, long n) {
  const double bound = default_rel_l2_bound(x.type.dtype);
  if (which != "sum" && which != "mean") return bound;
  double abs2 = 0, sum2 = 0;
  for (long r = 0; r < rows; ++r) {
    double abs_sum = 0, sum = 0;
    for (long j = 0; j < n; ++j) {
      abs_sum += std::fabs(x.values[r * n + j]);
      sum += x.values[r * n + j];
    }
    abs2 += abs_sum * abs_sum;
    sum2 += sum * sum;
  }
  return sum2 > 0 ? bound * std::max(1.0, std::sqrt(abs2 / sum2)) : bound;
}

}  // namespace kiln::gpu_test
