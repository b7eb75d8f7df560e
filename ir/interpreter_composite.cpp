// Reference semantics of the composite ops: softmax and log_softmax (max-subtracted),
// layer_norm (biased variance), rms_norm and attention. Each is one op: everything is
// computed in double and only its final result is rounded to the dtype. Rows (and
// blocks of positions along an inner axis) are independent and split over threads.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
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

// Runs body(o, i_begin, i_end) over every outer index and every block of inner
// positions, split over threads. The positions are independent of each other (each
// has its own accumulators), so any split gives the same values.
// A block holds at most kInnerBlock positions, so its accumulators fit in arrays on the stack.
constexpr int64_t kInnerBlock = 256;
using BlockAccumulators = std::array<double, kInnerBlock>;

void for_each_axis_block(const AxisView& av, const std::function<void(int64_t, int64_t, int64_t)>& body) {
  const int64_t blocks = (av.inner + kInnerBlock - 1) / kInnerBlock;
  const int64_t block = (av.inner + blocks - 1) / blocks;
  parallel_for(av.outer * blocks, av.len * block, [&](int64_t begin, int64_t end) {
    for (int64_t item = begin; item < end; ++item) {
      const int64_t i0 = (item % blocks) * block;
      body(item / blocks, i0, std::min(i0 + block, av.inner));
    }
  });
}

std::vector<double> softmax_values(const HostTensor& x, int axis, bool log) {
  const AxisView av = view_around(x.type.shape, axis);
  std::vector<double> out(x.values.size());
  for_each_axis_block(av, [&](int64_t o, int64_t i0, int64_t i1) {
    const double* in = x.values.data() + o * av.len * av.inner;
    double* dst = out.data() + o * av.len * av.inner;
    BlockAccumulators mx, sum;  // indexed by i - i0
    std::fill(mx.begin(), mx.end(), -kInf);
    std::fill(sum.begin(), sum.end(), 0.0);
    for (int64_t l = 0; l < av.len; ++l)
      for (int64_t i = i0; i < i1; ++i) mx[i - i0] = max_nan(mx[i - i0], in[l * av.inner + i]);
    for (int64_t l = 0; l < av.len; ++l)
      for (int64_t i = i0; i < i1; ++i) {
        const double e = std::exp(in[l * av.inner + i] - mx[i - i0]);
        dst[l * av.inner + i] = e;
        sum[i - i0] += e;
      }
    for (int64_t l = 0; l < av.len; ++l)
      for (int64_t i = i0; i < i1; ++i) {
        const int64_t at = l * av.inner + i;
        // log_softmax is x - logsumexp(x) and softmax exp(x - logsumexp(x)), as compiled
        // (passes/online_softmax.cpp); an infinite max is logsumexp's answer itself (an
        // all -inf row, or a +inf beside finite values, which come out -inf and 0).
        const double shifted = in[at] - mx[i - i0];
        if (std::isinf(mx[i - i0])) dst[at] = log ? shifted : std::exp(shifted);
        else dst[at] = log ? shifted - std::log(sum[i - i0]) : dst[at] / sum[i - i0];
      }
  });
  return out;
}

// layer_norm when `bias` is given, rms_norm otherwise; w and b apply along the axis.
std::vector<double> norm_values(const HostTensor& x, int axis, double eps, const HostTensor& weight,
                                const HostTensor* bias) {
  const AxisView av = view_around(x.type.shape, axis);
  const double n = static_cast<double>(av.len);
  std::vector<double> out(x.values.size());
  for_each_axis_block(av, [&](int64_t o, int64_t i0, int64_t i1) {
    const double* in = x.values.data() + o * av.len * av.inner;
    double* dst = out.data() + o * av.len * av.inner;
    BlockAccumulators mean, scale;  // indexed by i - i0
    std::fill(mean.begin(), mean.end(), 0.0);
    std::fill(scale.begin(), scale.end(), 0.0);
    if (bias) {  // mean, then the biased variance around it (two passes)
      for (int64_t l = 0; l < av.len; ++l)
        for (int64_t i = i0; i < i1; ++i) mean[i - i0] += in[l * av.inner + i];
      for (int64_t i = i0; i < i1; ++i) mean[i - i0] /= n;
      for (int64_t l = 0; l < av.len; ++l)
        for (int64_t i = i0; i < i1; ++i) {
          const double d = in[l * av.inner + i] - mean[i - i0];
          scale[i - i0] += d * d;
        }
    } else {  // mean of squares; nothing is subtracted
      for (int64_t l = 0; l < av.len; ++l)
        for (int64_t i = i0; i < i1; ++i) scale[i - i0] += in[l * av.inner + i] * in[l * av.inner + i];
    }
    for (int64_t i = i0; i < i1; ++i) scale[i - i0] = 1.0 / std::sqrt(scale[i - i0] / n + eps);
    for (int64_t l = 0; l < av.len; ++l) {
      const double w = weight.values[static_cast<size_t>(l)];
      const double b = bias ? bias->values[static_cast<size_t>(l)] : 0.0;
      for (int64_t i = i0; i < i1; ++i) {
        const int64_t at = l * av.inner + i;
        dst[at] = (in[at] - mean[i - i0]) * scale[i - i0] * w + b;
      }
    }
  });
  return out;
}

// softmax(scale * q k^T) v per batch entry (q, k and v broadcast over the batch dims); with `causal`, query i sees keys j <= i
// (top-left aligned, as PyTorch's is_causal). A row that sees no key gives zeros.
// The first element of the matrix that output batch entry `bi` reads from a [batch..., rows,
// cols] operand whose batch dims broadcast (numpy's rule) to `out_batch`.
int64_t broadcast_matrix_offset(const Shape& operand, const Shape& out_batch, int64_t bi) {
  const int r = static_cast<int>(operand.size());
  const int64_t matrix = operand[r - 2] * operand[r - 1];
  int64_t offset = 0, stride = matrix;
  for (int d = static_cast<int>(out_batch.size()) - 1, od = r - 3; d >= 0; --d, --od) {
    const int64_t index = bi % out_batch[d];
    bi /= out_batch[d];
    if (od < 0) continue;
    if (operand[od] != 1) offset += index * stride;
    stride *= operand[od];
  }
  return offset;
}

std::vector<double> attention_values(const HostTensor& q, const HostTensor& k, const HostTensor& v, double scale,
                                     bool causal, const Shape& out_shape) {
  const int r = q.type.rank();
  const int64_t sq = q.type.shape[r - 2], d = q.type.shape[r - 1];
  const int64_t sk = k.type.shape[r - 2], dv = v.type.shape[r - 1];
  const Shape out_batch(out_shape.begin(), out_shape.end() - 2);
  const int64_t batch = numel(out_batch);
  std::vector<double> out(static_cast<size_t>(numel(out_shape)), 0.0);
  // One query row per piece of work: rows are independent, each with its own scores.
  parallel_for(batch * sq, sk * (d + dv), [&](int64_t begin, int64_t end) {
    std::vector<double> p(static_cast<size_t>(sk));
    for (int64_t query = begin; query < end; ++query) {
      const int64_t bi = query / sq, i = query % sq;
      const double* qb = q.values.data() + broadcast_matrix_offset(q.type.shape, out_batch, bi);
      const double* kb = k.values.data() + broadcast_matrix_offset(k.type.shape, out_batch, bi);
      const double* vb = v.values.data() + broadcast_matrix_offset(v.type.shape, out_batch, bi);
      const int64_t seen = causal ? std::min(i + 1, sk) : sk;
      double* row = out.data() + query * dv;
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
  });
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
