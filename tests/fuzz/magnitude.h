// The magnitude a computed element was made from, where its error follows that and not
// the element itself. A kernel computes in fp32 registers; where it adds values of
// opposite signs (add, sub, sum, mean, var, the x - max of log_softmax and logsumexp,
// layer_norm's x - mean and its bias, matmul, attention's mix of V), it loses digits in
// proportion to the values it consumed, so a result much smaller than them is known only
// to about one fp32 unit of their magnitude. GELU keeps |x| as its magnitude too: Kiln's
// kernels take erfc and x sigmoid(2u), which keep its tail, but the form 1 + erf(x) with
// erf(x) near -1 does not (gelu(-6) is -5.9e-9 exactly and -0 in fp32), and the judge
// accepts either. Other ops (exp, log, mul, ...) err relative to their result; they have
// no such magnitude. kiln-difftest's nudges move a value that small to zero or past it
// (nudge.h), and the judge checks an output element that small absolutely (judge.h).
#pragma once
#include <unordered_map>
#include <vector>

#include "ir/graph.h"
#include "ir/tensor.h"

namespace kiln::fuzz {

// One fp32 unit in the last place, the precision the kernels compute in.
inline constexpr double kFp32Unit = 1.0 / (1 << 23);
// The smallest normal fp32 value, 2^-126: below it a kernel's exp, reciprocal or
// product may flush to zero (either sign) where the reference keeps a subnormal.
inline constexpr double kFp32MinNormal = 1.1754943508222875e-38;
// One unit in the last place of a float dtype relative to 1 (2^-fraction bits; 1 for
// integers and booleans).
double dtype_unit(DType t);

// Every computed float value of g on `inputs` and, for the ops above, the magnitude
// each element was made from (f32, of the value's shape): |x| for gelu, max(|a|, |b|)
// for add and sub, the sum or mean of |x| for sum and mean, the mean of x^2 for var,
// the max of |x| over the axes for log_softmax and logsumexp, |a| @ |b| for matmul,
// max(max |x| over the axis x rsqrt(var + eps) x |w|, |b|) for layer_norm, and
// for attention the max of |v| over the keys, in units of its dtype (its probabilities
// multiply V rounded to it).
// For var, layer_norm and rms_norm, also where their fp32 squares overflow, and for
// attention where v holds an Inf or NaN (a masked key's 0 times it is NaN in a kernel,
// left out by the reference): out_of_range, i1, the elements a kernel cannot compute as
// the reference does.
struct Intermediates {
  std::unordered_map<const ir::Value*, HostTensor> values;
  std::unordered_map<const ir::Value*, HostTensor> magnitudes;    // only the ops above
  std::unordered_map<const ir::Value*, HostTensor> out_of_range;  // var, norms, attention
};
Intermediates evaluate_intermediates(const ir::Graph& g, const std::vector<HostTensor>& inputs);

// Whether an element of `value` (magnitude `m`, null for none) is within one fp32 unit of
// its magnitude of zero, or below fp32's normal range (zero itself, or a subnormal that a
// kernel may flush; `flush`, for an op that multiplies such a value by a larger one):
// its sign, and whether it is zero at all, depend on roundings.
bool near_zero(double value, const HostTensor* m, size_t e, double flush = kFp32MinNormal);

// Per output of g and element, the absolute error it may have: its bound (the rel-L2
// bound of the output, bounds[i]) counted in units of its dtype, applied as fp32 units
// of its magnitude (bound * m for f32; 0 where its op has no magnitude). An element that
// small next to what its op consumed can only be checked absolutely.
std::vector<std::vector<double>> absolute_floors(const ir::Graph& g, const Intermediates& at,
                                                 const std::vector<double>& bounds);

}  // namespace kiln::fuzz
