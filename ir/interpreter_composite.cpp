// Reference semantics of the composite ops: softmax and log_softmax (max-subtracted),
// layer_norm (biased variance), rms_norm and attention. Each is one op: everything is
// computed in double and only its final result is rounded to the dtype.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "ir/error.h"
#include "ir/interpreter_kernels.h"

namespace kiln::ir::interp {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

double max_nan(double a, double v) { return v > a || std::isnan(v) ? v : a; }

// A tensor seen around one axis as [outer, len, inner]: element (o, l, i) sits at
// (o * len + l) * inner + i. Walking l in the middle keeps the reads contiguous for
// every axis, with one accumulator per inner position.
struct AxisView {
  int64_t outer = 1, len = 1, inner = 1;
};

AxisView view_around(const Shape& shape, int axis) {
  AxisView v;
  for (int d = 0; d < axis; ++d) v.outer *= shape[d];
  v.len = shape[axis];
  for (size_t d = static_cast<size_t>(axis) + 1; d < shape.size(); ++d) v.inner *= shape[d];
  return v;
}

std::vector<double> softmax_values(const HostTensor& x, int axis, bool log) {
  const AxisView av = view_around(x.type.shape, axis);
  std::vector<double> out(x.values.size());
  std::vector<double> mx(av.inner), sum(av.inner);
  for (int64_t o = 0; o < av.outer; ++o) {
    const double* in = x.values.data() + o * av.len * av.inner;
    double* dst = out.data() + o * av.len * av.inner;
    std::fill(mx.begin(), mx.end(), -kInf);
    std::fill(sum.begin(), sum.end(), 0.0);
    for (int64_t l = 0; l < av.len; ++l)
      for (int64_t i = 0; i < av.inner; ++i) mx[i] = max_nan(mx[i], in[l * av.inner + i]);
    for (int64_t l = 0; l < av.len; ++l)
      for (int64_t i = 0; i < av.inner; ++i) {
        const double e = std::exp(in[l * av.inner + i] - mx[i]);
        dst[l * av.inner + i] = e;
        sum[i] += e;
      }
    for (int64_t l = 0; l < av.len; ++l)
      for (int64_t i = 0; i < av.inner; ++i) {
        const int64_t at = l * av.inner + i;
        dst[at] = log ? in[at] - mx[i] - std::log(sum[i]) : dst[at] / sum[i];
      }
  }
  return out;
}

// layer_norm when `bias` is given, rms_norm otherwise; w and b apply along the axis.
std::vector<double> norm_values(const HostTensor& x, int axis, double eps, const HostTensor& weight,
                                const HostTensor* bias) {
  const AxisView av = view_around(x.type.shape, axis);
  const double n = static_cast<double>(av.len);
  std::vector<double> out(x.values.size());
  std::vector<double> mean(av.inner), scale(av.inner);
  for (int64_t o = 0; o < av.outer; ++o) {
    const double* in = x.values.data() + o * av.len * av.inner;
    double* dst = out.data() + o * av.len * av.inner;
    std::fill(mean.begin(), mean.end(), 0.0);
    std::fill(scale.begin(), scale.end(), 0.0);
    if (bias) {  // mean, then the biased variance around it (two passes)
      for (int64_t l = 0; l < av.len; ++l)
        for (int64_t i = 0; i < av.inner; ++i) mean[i] += in[l * av.inner + i];
      for (double& m : mean) m /= n;
      for (int64_t l = 0; l < av.len; ++l)
        for (int64_t i = 0; i < av.inner; ++i) {
          const double d = in[l * av.inner + i] - mean[i];
          scale[i] += d * d;
        }
    } else {  // mean of squares; nothing is subtracted
      for (int64_t l = 0; l < av.len; ++l)
        for (int64_t i = 0; i < av.inner; ++i) scale[i] += in[l * av.inner + i] * in[l * av.inner + i];
    }
    for (double& s : scale) s = 1.0 / std::sqrt(s / n + eps);
    for (int64_t l = 0; l < av.len; ++l) {
      const double w = weight.values[static_cast<size_t>(l)];
      const double b = bias ? bias->values[static_cast<size_t>(l)] : 0.0;
      for (int64_t i = 0; i < av.inner; ++i) {
        const int64_t at = l * av.inner + i;
        dst[at] = (in[at] - mean[i]) * scale[i] * w + b;
      }
    }
  }
  return out;
}

// softmax(scale * q k^T) v per batch entry; with `causal`, query i sees keys j <= i
// (top-left aligned, as PyTorch's is_causal). A row that sees no key gives zeros.
std::vector<double> attention_values(const HostTensor& q, const HostTensor& k, const HostTensor& v, double scale,
                                     bool causal, const Shape& out_shape) {
  const int r = q.type.rank();
  const int64_t sq = q.type.shape[r - 2], d = q.type.shape[r - 1];
  const int64_t sk = k.type.shape[r - 2], dv = v.type.shape[r - 1];
  const int64_t batch = q.type.numel() / (sq * d);
  std::vector<double> out(static_cast<size_t>(numel(out_shape)), 0.0);
  std::vector<double> p(static_cast<size_t>(sk));
  for (int64_t bi = 0; bi < batch; ++bi) {
    const double* qb = q.values.data() + bi * sq * d;
    const double* kb = k.values.data() + bi * sk * d;
    const double* vb = v.values.data() + bi * sk * dv;
    for (int64_t i = 0; i < sq; ++i) {
      const int64_t seen = causal ? std::min(i + 1, sk) : sk;
      double* row = out.data() + (bi * sq + i) * dv;
      if (seen == 0) continue;  // fully masked: zeros
      double mx = -kInf;
      for (int64_t j = 0; j < seen; ++j) {
        double dot = 0;
        for (int64_t c = 0; c < d; ++c) dot += qb[i * d + c] * kb[j * d + c];
        p[j] = scale * dot;
        mx = max_nan(mx, p[j]);
      }
      double sum = 0;
      for (int64_t j = 0; j < seen; ++j) {
        p[j] = std::exp(p[j] - mx);
        sum += p[j];
      }
      for (int64_t j = 0; j < seen; ++j) {
        const double w = p[j] / sum;
        for (int64_t c = 0; c < dv; ++c) row[c] += w * vb[j * dv + c];
      }
    }
  }
  return out;
}

}  // namespace

HostTensor eval_composite(const Node& n, const Args& args) {
  const TensorType& type = n.result->type;
  const HostTensor& x = *args[0];
  switch (n.op) {
    case OpKind::Softmax:
    case OpKind::LogSoftmax:
      return HostTensor(type, softmax_values(x, single_axis(n.attrs, x.type.rank()), n.op == OpKind::LogSoftmax));
    case OpKind::LayerNorm:
      return HostTensor(type, norm_values(x, single_axis(n.attrs, x.type.rank()), n.attrs.get_float("eps"), *args[1],
                                          args[2]));
    case OpKind::RmsNorm:
      return HostTensor(type, norm_values(x, single_axis(n.attrs, x.type.rank()), n.attrs.get_float("eps"), *args[1],
                                          nullptr));
    case OpKind::Attention:
      return HostTensor(type, attention_values(x, *args[1], *args[2], n.attrs.get_float("scale"),
                                               n.attrs.get_bool("causal"), type.shape));
    default: break;
  }
  throw Error(fmt::format("evaluate: {} is not a composite op", op_name(n.op)));
}

}  // namespace kiln::ir::interp
