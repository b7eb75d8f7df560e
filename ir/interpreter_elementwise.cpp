// Reference semantics of the element-wise ops: unary math, cast, binary arithmetic,
// comparisons and select, with numpy broadcasting. Math in double; each result is
// rounded to the result dtype once, as the GPU rounds when it stores it. Every element
// is computed on its own, so the work splits over threads by ranges of elements.
#include <fmt/format.h>

#include <cmath>
#include <numbers>

#include "ir/error.h"
#include "ir/interpreter_kernels.h"

namespace kiln::ir::interp {

namespace {

template <class F>
std::vector<double> map1(const HostTensor& x, F f) {
  std::vector<double> out(x.values.size());
  const double* in = x.values.data();
  double* o = out.data();
  parallel_for(static_cast<int64_t>(out.size()), 1, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) o[i] = f(in[i]);
  });
  return out;
}

template <class F>
std::vector<double> map2(const HostTensor& a, const HostTensor& b, const Shape& shape, F f) {
  std::vector<double> out(static_cast<size_t>(numel(shape)));
  double* out_data = out.data();
  const double *pa = a.values.data(), *pb = b.values.data();
  std::array<Shape, 2> strides{broadcast_strides(a.type.shape, shape), broadcast_strides(b.type.shape, shape)};
  parallel_for_each_row<2>(shape, strides, [&](const auto& base, int64_t len, const auto& step, int64_t first) {
    const double *x = pa + base[0], *y = pb + base[1];
    const int64_t sx = step[0], sy = step[1];
    double* o = out_data + first;
    for (int64_t j = 0; j < len; ++j) o[j] = f(x[j * sx], y[j * sy]);
  });
  return out;
}

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

// 0.5 x (1 + erf(x / sqrt 2)) as 0.5 x erfc(-x / sqrt 2): below about -8, 1 + erf cancels
// to 0 even in double, while the kernels keep the tiny result.
double gelu_erf(double x) { return 0.5 * x * std::erfc(-x * std::numbers::sqrt2 / 2); }

// 0.5 x (1 + tanh(u)) as x sigmoid(2 u), for the same reason: 1 + tanh(u) cancels from
// about x = -7.
double gelu_tanh(double x) {
  const double k = std::sqrt(2.0 / std::numbers::pi);
  return x * sigmoid(2 * k * (x + 0.044715 * x * x * x));
}

// NaN-propagating max / min (as torch.maximum), unlike std::fmax which drops a NaN.
double max_nan(double x, double y) { return std::isnan(x) || x > y ? x : y; }
double min_nan(double x, double y) { return std::isnan(x) || x < y ? x : y; }

std::vector<double> unary_values(const Node& n, const HostTensor& x) {
  switch (n.op) {
    case OpKind::Neg: return map1(x, [](double v) { return -v; });
    case OpKind::Abs: return map1(x, [](double v) { return std::fabs(v); });
    case OpKind::Exp: return map1(x, [](double v) { return std::exp(v); });
    case OpKind::Exp2: return map1(x, [](double v) { return std::exp2(v); });
    case OpKind::Log: return map1(x, [](double v) { return std::log(v); });
    case OpKind::Sqrt: return map1(x, [](double v) { return std::sqrt(v); });
    case OpKind::Rsqrt: return map1(x, [](double v) { return 1.0 / std::sqrt(v); });
    case OpKind::Tanh: return map1(x, [](double v) { return std::tanh(v); });
    case OpKind::Sigmoid: return map1(x, sigmoid);
    case OpKind::Relu: return map1(x, [](double v) { return v < 0 ? 0.0 : v; });  // keeps NaN
    case OpKind::Gelu:
      if (n.attrs.get_string("approximate") == "tanh") return map1(x, gelu_tanh);
      return map1(x, gelu_erf);
    case OpKind::Silu: return map1(x, [](double v) { return v * sigmoid(v); });
    // Rounding to the result dtype is the whole cast: float -> i32 truncates toward
    // zero and saturates, anything -> i1 is x != 0, i1 -> a number is 0 or 1.
    case OpKind::Cast: return x.values;
    default: break;
  }
  throw Error(fmt::format("evaluate: {} is not a unary op", op_name(n.op)));
}

}  // namespace

Shape broadcast_strides(const Shape& from, const Shape& to) {
  Shape own = row_major_strides(from);
  Shape out(to.size(), 0);
  const size_t lead = to.size() - from.size();
  for (size_t d = 0; d < from.size(); ++d) out[lead + d] = from[d] == 1 ? 0 : own[d];
  return out;
}

HostTensor eval_unary(const Node& n, const HostTensor& x) {
  return HostTensor(n.result->type, unary_values(n, x));
}

HostTensor eval_binary(const Node& n, const HostTensor& a, const HostTensor& b) {
  const Shape& s = n.result->type.shape;
  const bool integer = a.type.dtype == DType::i32;
  std::vector<double> v;
  switch (n.op) {
    case OpKind::Add: v = map2(a, b, s, [](double x, double y) { return x + y; }); break;
    case OpKind::Sub: v = map2(a, b, s, [](double x, double y) { return x - y; }); break;
    case OpKind::Mul: v = map2(a, b, s, [](double x, double y) { return x * y; }); break;
    case OpKind::Div:
      // i32 division truncates toward zero (the rounding to i32 does it). An i32
      // divided by zero gives 0: C++ and CUDA leave it undefined, Kiln defines it so
      // that the reference never traps, and generated kernels must match.
      if (integer) v = map2(a, b, s, [](double x, double y) { return y == 0 ? 0.0 : x / y; });
      else v = map2(a, b, s, [](double x, double y) { return x / y; });
      break;
    case OpKind::Max: v = map2(a, b, s, max_nan); break;
    case OpKind::Min: v = map2(a, b, s, min_nan); break;
    case OpKind::Pow: v = map2(a, b, s, [](double x, double y) { return std::pow(x, y); }); break;
    case OpKind::Lt: v = map2(a, b, s, [](double x, double y) { return x < y ? 1.0 : 0.0; }); break;
    case OpKind::Le: v = map2(a, b, s, [](double x, double y) { return x <= y ? 1.0 : 0.0; }); break;
    case OpKind::Gt: v = map2(a, b, s, [](double x, double y) { return x > y ? 1.0 : 0.0; }); break;
    case OpKind::Ge: v = map2(a, b, s, [](double x, double y) { return x >= y ? 1.0 : 0.0; }); break;
    case OpKind::Eq: v = map2(a, b, s, [](double x, double y) { return x == y ? 1.0 : 0.0; }); break;
    case OpKind::Ne: v = map2(a, b, s, [](double x, double y) { return x != y ? 1.0 : 0.0; }); break;
    default: throw Error(fmt::format("evaluate: {} is not a binary op", op_name(n.op)));
  }
  return HostTensor(n.result->type, std::move(v));
}

HostTensor eval_select(const Node& n, const HostTensor& cond, const HostTensor& a, const HostTensor& b) {
  const Shape& shape = n.result->type.shape;
  std::vector<double> out(static_cast<size_t>(numel(shape)));
  double* out_data = out.data();
  const double *pc = cond.values.data(), *pa = a.values.data(), *pb = b.values.data();
  std::array<Shape, 3> strides{broadcast_strides(cond.type.shape, shape), broadcast_strides(a.type.shape, shape),
                               broadcast_strides(b.type.shape, shape)};
  parallel_for_each_row<3>(shape, strides, [&](const auto& base, int64_t len, const auto& step, int64_t first) {
    double* o = out_data + first;
    for (int64_t j = 0; j < len; ++j)
      o[j] = pc[base[0] + j * step[0]] != 0 ? pa[base[1] + j * step[1]] : pb[base[2] + j * step[2]];
  });
  return exact_tensor(n.result->type, std::move(out));  // picks values already in the dtype
}

}  // namespace kiln::ir::interp
