// The C++ DSL's functions and operators: one function per op, named as in the text
// form (DESIGN.md "The graph IR"), plus + - * / and < <= > >= on tensor handles.
// A scalar operand becomes a `const` of the other operand's dtype (broadcasting does
// the rest). Every call records its call site, so an error reads
// "FILE:LINE: add(f16[4,8], f16[3]): shapes do not broadcast (...)".
#pragma once
#include <cstdint>
#include <optional>
#include <source_location>
#include <string>
#include <vector>

#include "frontend/graph.h"

namespace kiln {

using Loc = std::source_location;
using Axes = std::vector<int64_t>;

// One operand of a binary op: a tensor or a scalar (at least one side must be a tensor).
class Operand {
public:
  Operand(const Tensor& t) : tensor_(t) {}  // NOLINT: implicit on purpose
  Operand(double v) : scalar_(v) {}         // NOLINT: implicit on purpose
  const Tensor* tensor() const { return tensor_.valid() ? &tensor_ : nullptr; }
  double scalar() const { return scalar_; }

private:
  Tensor tensor_;
  double scalar_ = 0;
};

// ---- element-wise unary ----
Tensor neg(const Tensor& x, Loc loc = Loc::current());
Tensor abs(const Tensor& x, Loc loc = Loc::current());
Tensor exp(const Tensor& x, Loc loc = Loc::current());
Tensor exp2(const Tensor& x, Loc loc = Loc::current());
Tensor log(const Tensor& x, Loc loc = Loc::current());
Tensor sqrt(const Tensor& x, Loc loc = Loc::current());
Tensor rsqrt(const Tensor& x, Loc loc = Loc::current());
Tensor tanh(const Tensor& x, Loc loc = Loc::current());
Tensor sigmoid(const Tensor& x, Loc loc = Loc::current());
Tensor relu(const Tensor& x, Loc loc = Loc::current());
// approximate: "none" (erf) or "tanh".
Tensor gelu(const Tensor& x, const std::string& approximate = "none", Loc loc = Loc::current());
Tensor silu(const Tensor& x, Loc loc = Loc::current());
Tensor cast(const Tensor& x, DType to, Loc loc = Loc::current());

// ---- element-wise binary (numpy broadcasting) ----
Tensor add(const Operand& a, const Operand& b, Loc loc = Loc::current());
Tensor sub(const Operand& a, const Operand& b, Loc loc = Loc::current());
Tensor mul(const Operand& a, const Operand& b, Loc loc = Loc::current());
Tensor div(const Operand& a, const Operand& b, Loc loc = Loc::current());
Tensor maximum(const Operand& a, const Operand& b, Loc loc = Loc::current());
Tensor minimum(const Operand& a, const Operand& b, Loc loc = Loc::current());
Tensor pow(const Operand& a, const Operand& b, Loc loc = Loc::current());
// max(a, b) / min(a, b) of two tensors are maximum / minimum; with axes they reduce.
Tensor max(const Tensor& a, const Tensor& b, Loc loc = Loc::current());
Tensor min(const Tensor& a, const Tensor& b, Loc loc = Loc::current());

// ---- comparisons (result i1) and select ----
Tensor lt(const Operand& a, const Operand& b, Loc loc = Loc::current());
Tensor le(const Operand& a, const Operand& b, Loc loc = Loc::current());
Tensor gt(const Operand& a, const Operand& b, Loc loc = Loc::current());
Tensor ge(const Operand& a, const Operand& b, Loc loc = Loc::current());
Tensor eq(const Operand& a, const Operand& b, Loc loc = Loc::current());
Tensor ne(const Operand& a, const Operand& b, Loc loc = Loc::current());
// cond ? a : b, element-wise with broadcasting; cond is i1.
Tensor select(const Tensor& cond, const Operand& a, const Operand& b, Loc loc = Loc::current());

// ---- sources ----
// A constant of the given dtype and shape (a scalar by default).
Tensor constant(Graph& g, double value, DType dtype, Shape shape = {}, Loc loc = Loc::current());
// Each element is its index along `axis`.
Tensor iota(Graph& g, DType dtype, Shape shape, int64_t axis = 0, Loc loc = Loc::current());

// ---- reductions over the listed axes ----
Tensor sum(const Tensor& x, const Axes& axes, bool keepdim = false, Loc loc = Loc::current());
Tensor max(const Tensor& x, const Axes& axes, bool keepdim = false, Loc loc = Loc::current());
Tensor min(const Tensor& x, const Axes& axes, bool keepdim = false, Loc loc = Loc::current());
Tensor mean(const Tensor& x, const Axes& axes, bool keepdim = false, Loc loc = Loc::current());
// log(sum(exp(x))), computed stably (the largest element factored out); float dtypes.
Tensor logsumexp(const Tensor& x, const Axes& axes, bool keepdim = false, Loc loc = Loc::current());
// The population variance, mean((x - mean(x))^2), in one pass (Welford); float dtypes.
Tensor var(const Tensor& x, const Axes& axes, bool keepdim = false, Loc loc = Loc::current());

// ---- views ----
Tensor broadcast_to(const Tensor& x, Shape shape, Loc loc = Loc::current());
Tensor reshape(const Tensor& x, Shape shape, Loc loc = Loc::current());
Tensor transpose(const Tensor& x, const Axes& perm, Loc loc = Loc::current());

// ---- quantised weights ----
// (w - z) * s with one scale s (and zero point z) per `group` elements of w's last axis:
// w is i8 or i4, s (and z) have w's shape with the last axis divided by `group`.
Tensor dequant(const Tensor& w, const Tensor& scales, int64_t group, Loc loc = Loc::current());
Tensor dequant(const Tensor& w, const Tensor& scales, const Tensor& zeros, int64_t group, Loc loc = Loc::current());

// ---- matmul (batched over leading dimensions) ----
Tensor matmul(const Tensor& a, const Tensor& b, bool transpose_a = false, bool transpose_b = false,
              Loc loc = Loc::current());

// ---- composites ----
Tensor softmax(const Tensor& x, int64_t axis = -1, Loc loc = Loc::current());
Tensor log_softmax(const Tensor& x, int64_t axis = -1, Loc loc = Loc::current());
Tensor layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps = 1e-5, int64_t axis = -1,
                  Loc loc = Loc::current());
Tensor rms_norm(const Tensor& x, const Tensor& weight, double eps = 1e-6, int64_t axis = -1,
                Loc loc = Loc::current());
// q: [..., Sq, D], k: [..., Sk, D], v: [..., Sk, Dv]; scale defaults to 1/sqrt(D).
Tensor attention(const Tensor& q, const Tensor& k, const Tensor& v, std::optional<double> scale = std::nullopt,
                 bool causal = false, Loc loc = Loc::current());

// ---- operators ----
// C++ gives operators no default arguments, so the call site travels with an
// operand: these wrappers capture it when the operand converts at the call.
namespace detail {
struct TensorAt {
  TensorAt(const Tensor& t, Loc l = Loc::current()) : tensor(t), loc(l) {}  // NOLINT
  const Tensor& tensor;
  Loc loc;
};
struct OperandAt {
  OperandAt(const Tensor& t, Loc l = Loc::current()) : operand(t), loc(l) {}  // NOLINT
  OperandAt(double v, Loc l = Loc::current()) : operand(v), loc(l) {}         // NOLINT
  Operand operand;
  Loc loc;
};
}  // namespace detail

Tensor operator-(const detail::TensorAt& x);
Tensor operator+(const Tensor& a, const detail::OperandAt& b);
Tensor operator-(const Tensor& a, const detail::OperandAt& b);
Tensor operator*(const Tensor& a, const detail::OperandAt& b);
Tensor operator/(const Tensor& a, const detail::OperandAt& b);
Tensor operator+(double a, const detail::TensorAt& b);
Tensor operator-(double a, const detail::TensorAt& b);
Tensor operator*(double a, const detail::TensorAt& b);
Tensor operator/(double a, const detail::TensorAt& b);
Tensor operator<(const Tensor& a, const detail::OperandAt& b);
Tensor operator<=(const Tensor& a, const detail::OperandAt& b);
Tensor operator>(const Tensor& a, const detail::OperandAt& b);
Tensor operator>=(const Tensor& a, const detail::OperandAt& b);
Tensor operator<(double a, const detail::TensorAt& b);
Tensor operator<=(double a, const detail::TensorAt& b);
Tensor operator>(double a, const detail::TensorAt& b);
Tensor operator>=(double a, const detail::TensorAt& b);

}  // namespace kiln
