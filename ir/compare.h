// Comparing a computed tensor with the reference interpreter's: relative L2 error,
// largest absolute error, unexpected NaN/Inf, and a verdict against a bound that
// depends on the dtype (GPU.md: f32 1e-5, f16/bf16 1e-2; integers exact; i1 allows
// a few flips where the compared values were within rounding of each other), grown
// with the reduction length for f32 products (matmul_rel_l2_bound).
#pragma once
#include <cstdint>
#include <string>

#include "ir/graph.h"
#include "ir/tensor.h"

namespace kiln {

struct Comparison {
  double rel_l2 = 0;         // ||got - want|| / ||want|| over finite reference values
  double max_abs = 0;        // largest |got - want| where both are finite
  int64_t bad_nonfinite = 0; // NaN/Inf in `got` where the reference is finite (or differs)
  int64_t mismatches = 0;    // elements that differ at all (for floats, not a failure)
  double bound = 0;          // the rel_l2 bound (floats) or mismatch fraction (i1) used
  bool exact = false;        // integers, booleans, storage-only types: judged element by element
  bool passed = false;
  std::string str() const;   // "rel_l2 3.1e-04 (bound 1e-02), max_abs 2.0e-03, nan/inf 0: ok"
};

// The sums a comparison is made of, over a range of elements; ranges merge.
struct CompareSums {
  double diff2 = 0, ref2 = 0, max_abs = 0;
  int64_t bad_nonfinite = 0, mismatches = 0;
  void merge(const CompareSums& o);
};

double default_rel_l2_bound(DType t);

// The bound for an output computed from a product with reduction length `k`. fp16 and
// bf16 keep 1e-2: their output rounding (2^-11, 2^-8) dwarfs any fp32 accumulation
// error. f32 outputs: 1e-5 * max(1, sqrt(k / 4096)). An fp32 sum of k terms of random
// sign drifts from the exact sum by about sqrt(k) roundings, so a fixed 1e-5 that a
// good kernel meets at k = 4096 (GPU.md's f32 bound) must grow like sqrt(k) past it,
// or a correct kernel with a long K (split or not) fails for its length alone.
double matmul_rel_l2_bound(DType out, int64_t k);

// The bound for comparing a computed value `v` with the reference: the largest of its
// dtype's and, for every matmul `v` depends on, matmul_rel_l2_bound of the product's
// dtype and K (kTf32RelL2Bound for f32 products run in TF32, when `tf32_products`).
double rel_l2_bound_for(const ir::Value& v, bool tf32_products = false);
// TF32 keeps 10 of fp32's 23 mantissa bits: products made from it sit near 1e-3.
inline constexpr double kTf32RelL2Bound = 5e-3;

// Elements [begin, end) of `got`, a packed device buffer of want's type, against `want`.
CompareSums compare_range(const void* got, const HostTensor& want, size_t begin, size_t end);
Comparison finish_comparison(const CompareSums& sums, const HostTensor& want, double bound = -1);
// `bound` < 0 means the dtype's default.
Comparison compare(const HostTensor& got, const HostTensor& want, double bound = -1);

}  // namespace kiln
