// Attention graphs shared by the attention tests (unit and GPU): the composite, and the
// same computation written by hand from primitives with each mask form.
#pragma once
#include <cmath>
#include <limits>
#include <string>
#include <utility>

#include "frontend/kiln.h"

namespace kiln::test {

// How the hand-written graph masks its scores.
enum class Mask {
  None,
  Causal,  // select(iota(j) > iota(i), -inf, s): the composite's causal mask
  Band,    // keys more than `band` behind the query, or after it, are masked
  Bias,    // an additive bias input "bias" of shape [Sq, Skv], broadcast over the batch
  Empty,   // causal shifted by one: query 0 sees no key (a fully masked row)
};

struct AttentionShape {
  AttentionShape(Shape b, int64_t q_len, int64_t kv_len, int64_t head_dim, Shape kv = {})
      : batch(std::move(b)), sq(q_len), skv(kv_len), d(head_dim), kv_batch(std::move(kv)) {}
  Shape batch;  // q's batch dims
  int64_t sq = 0, skv = 0, d = 64;
  Shape kv_batch;  // k's and v's batch dims; empty: the same as q's
};

inline Shape with(Shape batch, int64_t rows, int64_t cols) {
  batch.push_back(rows);
  batch.push_back(cols);
  return batch;
}

// attention(q, k, v) through the composite.
inline kiln::Graph composite_attention(DType dt, const AttentionShape& s, bool causal) {
  kiln::Graph g("attention");
  const Shape kv = s.kv_batch.empty() ? s.batch : s.kv_batch;
  auto q = g.input("q", dt, with(s.batch, s.sq, s.d));
  auto k = g.input("k", dt, with(kv, s.skv, s.d));
  auto v = g.input("v", dt, with(kv, s.skv, s.d));
  g.output(kiln::attention(q, k, v, 1.0 / std::sqrt(static_cast<double>(s.d)), causal).name("y"));
  return g;
}

// The same written from primitives: matmul, scale, the mask, max / exp / sum / div, matmul.
inline kiln::Graph hand_written_attention(DType dt, const AttentionShape& s, Mask mask, int64_t band = 16) {
  kiln::Graph g("attention_by_hand");
  auto q = g.input("q", dt, with(s.batch, s.sq, s.d));
  auto k = g.input("k", dt, with(s.batch, s.skv, s.d));
  auto v = g.input("v", dt, with(s.batch, s.skv, s.d));
  kiln::Tensor scores = kiln::matmul(q, k, false, true) * (1.0 / std::sqrt(static_cast<double>(s.d)));
  const Shape grid{s.sq, s.skv};
  auto query = kiln::iota(g, DType::i32, grid, 0), key = kiln::iota(g, DType::i32, grid, 1);
  const double minus_inf = -std::numeric_limits<double>::infinity();
  switch (mask) {
    case Mask::None: break;
    case Mask::Causal: scores = kiln::select(kiln::gt(key, query), minus_inf, scores); break;
    case Mask::Band:
      scores = kiln::select(kiln::gt(query - key, static_cast<double>(band)), minus_inf, scores);
      scores = kiln::select(kiln::gt(key, query), minus_inf, scores);
      break;
    case Mask::Bias: scores = scores + g.input("bias", dt, grid); break;
    case Mask::Empty: scores = kiln::select(kiln::ge(key, query), minus_inf, scores); break;
  }
  auto e = kiln::exp(scores - kiln::max(scores, {-1}, true));
  g.output(kiln::matmul(e / kiln::sum(e, {-1}, true), v).name("y"));
  return g;
}

}  // namespace kiln::test
