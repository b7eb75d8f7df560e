#include "ir/compare.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <vector>

#include "ir/error.h"

namespace kiln {

double default_rel_l2_bound(DType t) {
  switch (t) {
    case DType::f32: return 1e-5;
    case DType::f16: case DType::bf16: return 1e-2;
    case DType::i32: case DType::i8: case DType::i4: return 0;
    // One step of the mantissa: a value computed in fp32 on the way may round to the
    // neighbour of the reference's.
    case DType::f8e4m3: return 6.25e-2;
    case DType::f8e5m2: return 1.25e-1;
    case DType::i1: return 1e-4;  // fraction of flipped booleans
  }
  return 0;
}

double matmul_rel_l2_bound(DType out, int64_t k) {
  const double base = default_rel_l2_bound(out);
  if (out != DType::f32) return base;
  return base * std::max(1.0, std::sqrt(static_cast<double>(k) / 4096.0));
}

double rel_l2_bound_for(const ir::Value& v, bool tf32_products) {
  // A value computed in f16 or bf16 on the way to `v` may round to the neighbour of the
  // reference's value there (the GPU's exp or sum in fp32 differs from the reference's
  // in double in the last bits): what follows inherits that dtype's bound (an f32 value
  // computed from f16 intermediates is as exact as f16). A matmul sums in fp32 where
  // the reference sums in double: its bound grows with K for f32 products, and is
  // TF32's when f32 products run in TF32. Inputs and exact casts of them add nothing.
  double bound = default_rel_l2_bound(v.type.dtype);
  const bool float_result = is_float(v.type.dtype);  // an i1's bound counts flips: it stays
  std::vector<const ir::Value*> todo = {&v};
  std::set<const ir::Value*> seen;
  while (!todo.empty()) {
    const ir::Value* at = todo.back();
    todo.pop_back();
    if (!at->producer || !seen.insert(at).second) continue;
    const ir::Node& n = *at->producer;
    const DType computed = at->type.dtype;
    // A cast of an input to f32, or of a boolean, is exact (the random i32 inputs are small).
    const bool exact_cast = n.op == ir::OpKind::Cast && !n.operands[0]->producer &&
                            (computed == DType::f32 || n.operands[0]->type.dtype == DType::i1);
    if (float_result && is_float(computed) && !exact_cast) bound = std::max(bound, default_rel_l2_bound(computed));
    if (n.op == ir::OpKind::Matmul) {
      const TensorType& a = n.operands[0]->type;
      const int64_t k = a.shape[a.rank() - (n.attrs.get_bool("transpose_a") ? 2 : 1)];
      const DType dt = n.result->type.dtype;
      bound = std::max(bound, dt == DType::f32 && tf32_products ? kTf32RelL2Bound : matmul_rel_l2_bound(dt, k));
    }
    for (const ir::Value* operand : n.operands) todo.push_back(operand);
  }
  return bound;
}

void CompareSums::merge(const CompareSums& o) {
  diff2 += o.diff2;
  ref2 += o.ref2;
  max_abs = std::max(max_abs, o.max_abs);
  bad_nonfinite += o.bad_nonfinite;
  mismatches += o.mismatches;
}

namespace {

template <class Got>
CompareSums accumulate(const Got& got_at, const HostTensor& want, size_t begin, size_t end) {
  CompareSums c;
  for (size_t i = begin; i < end; ++i) {
    double g = got_at(i), w = want.values[i];
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
    c.diff2 += (g - w) * (g - w);
    c.ref2 += w * w;
    c.max_abs = std::max(c.max_abs, std::fabs(g - w));
  }
  return c;
}

}  // namespace

CompareSums compare_range(const void* got, const HostTensor& want, size_t begin, size_t end) {
  const DType t = want.type.dtype;
  return accumulate([&](size_t i) { return decode_element(t, got, i); }, want, begin, end);
}

Comparison finish_comparison(const CompareSums& s, const HostTensor& want, double bound) {
  Comparison c;
  c.bound = bound >= 0 ? bound : default_rel_l2_bound(want.type.dtype);
  c.max_abs = s.max_abs;
  c.bad_nonfinite = s.bad_nonfinite;
  c.mismatches = s.mismatches;
  c.rel_l2 = s.ref2 > 0 ? std::sqrt(s.diff2 / s.ref2) : std::sqrt(s.diff2);
  DType t = want.type.dtype;
  c.exact = t == DType::i32 || t == DType::i1 || is_storage_only(t);
  if (t == DType::i32 || is_storage_only(t)) c.passed = c.mismatches == 0;
  else if (t == DType::i1) c.passed = static_cast<double>(c.mismatches) <= c.bound * static_cast<double>(want.values.size());
  else c.passed = c.rel_l2 <= c.bound;
  c.passed = c.passed && c.bad_nonfinite == 0;
  return c;
}

Comparison compare(const HostTensor& got, const HostTensor& want, double bound) {
  if (got.type != want.type)
    throw Error(fmt::format("compare: types differ ({} vs {})", got.type.str(), want.type.str()));
  CompareSums s = accumulate([&](size_t i) { return got.values[i]; }, want, 0, want.values.size());
  return finish_comparison(s, want, bound);
}

std::string Comparison::str() const {
  // A float output is judged by rel_l2: its count of differing elements is "not bit-equal",
  // so that a passing product of millions of rounded sums does not read as mismatched.
  return fmt::format("rel_l2 {:.2e} (bound {:.0e}), max_abs {:.2e}, {} {}, bad nan/inf {}: {}", rel_l2, bound,
                     max_abs, exact ? "mismatched" : "not bit-equal", mismatches, bad_nonfinite,
                     passed ? "ok" : "FAILED");
}

}  // namespace kiln
