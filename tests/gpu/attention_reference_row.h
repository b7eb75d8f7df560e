// The exact attention of one query row, for GPU checks of prompts too large for the
// whole reference: sampled rows are compared against it.
#pragma once
#include <algorithm>
#include <cmath>
#include <vector>

#include "../unit/attention_test_graphs.h"
#include "ir/tensor.h"

namespace kiln::gpu_test {

// softmax(scale q k^T) v for query row i of batch entry b, in double.
inline std::vector<double> reference_row(const std::vector<HostTensor>& in, const test::AttentionShape& s, int64_t b, int64_t i,
                                         bool causal) {
  const double scale = 1.0 / std::sqrt(static_cast<double>(s.d));
  const double* q = in[0].values.data() + (b * s.sq + i) * s.d;
  const double* k = in[1].values.data() + b * s.skv * s.d;
  const double* v = in[2].values.data() + b * s.skv * s.d;
  const int64_t seen = causal ? std::min(i + 1, s.skv) : s.skv;
  std::vector<double> p(static_cast<size_t>(seen)), out(static_cast<size_t>(s.d), 0.0);
  double mx = -INFINITY, sum = 0;
  for (int64_t j = 0; j < seen; ++j) {
    double dot = 0;
    for (int64_t c = 0; c < s.d; ++c) dot += q[c] * k[j * s.d + c];
    p[static_cast<size_t>(j)] = scale * dot;
    mx = std::max(mx, p[static_cast<size_t>(j)]);
  }
  for (int64_t j = 0; j < seen; ++j) sum += (p[static_cast<size_t>(j)] = std::exp(p[static_cast<size_t>(j)] - mx));
  for (int64_t j = 0; j < seen; ++j)
    for (int64_t c = 0; c < s.d; ++c) out[static_cast<size_t>(c)] += p[static_cast<size_t>(j)] / sum * v[j * s.d + c];
  return out;
}

}  // namespace kiln::gpu_test
