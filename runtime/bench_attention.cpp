// The attention cases of `kiln bench`. See bench_attention.h.
#include "runtime/bench_attention.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <vector>

#include "ir/error.h"

namespace kiln::runtime {

bool is_attention_case(const BenchCase& c) { return c.form == SizeForm::Attention; }

std::optional<BenchSize> parse_attention_size(std::string_view item) {
  const size_t suffix = item.find_first_of("cg");
  const std::string_view dims_text = item.substr(0, suffix);
  std::string_view rest = suffix == std::string_view::npos ? std::string_view{} : item.substr(suffix);
  const std::optional<std::vector<int64_t>> d = parse_size_dims(dims_text);
  if (!d || d->size() < 4 || d->size() > 5) return std::nullopt;
  if (d->size() == 4 && rest.empty()) return std::nullopt;  // BxMxNxK: a batched GEMM
  const std::vector<int64_t>& v = *d;
  const bool four = v.size() == 4;
  BenchSize s = BenchSize::attention(v[0], v[1], v[1], v[2], four ? v[2] : v[3], four ? v[3] : v[4], false);
  while (!rest.empty()) {
    if (rest[0] == 'c') {
      s.causal = true;
      rest.remove_prefix(1);
      continue;
    }
    rest.remove_prefix(1);  // 'g'
    const size_t end = std::min(rest.find_first_of("cg"), rest.size());
    int64_t kv = 0;
    auto r = std::from_chars(rest.data(), rest.data() + end, kv);
    if (end == 0 || r.ec != std::errc() || r.ptr != rest.data() + end || kv < 1) return std::nullopt;
    s.kv_heads = kv;
    rest.remove_prefix(end);
  }
  return s;
}

std::string attention_size_str(const BenchSize& s) {
  std::string out = s.rows == s.kv_len ? fmt::format("{}x{}x{}x{}", s.batch, s.heads, s.rows, s.cols)
                                       : fmt::format("{}x{}x{}x{}x{}", s.batch, s.heads, s.rows, s.kv_len, s.cols);
  if (s.causal) out += "c";
  if (s.kv_heads != s.heads) out += fmt::format("g{}", s.kv_heads);
  return out;
}

void build_attention(kiln::Graph& g, DType dtype, const BenchSize& s) {
  if (s.heads % s.kv_heads != 0)
    throw Error(fmt::format("attention size {}: {} query heads do not group over {} K/V heads", attention_size_str(s),
                            s.heads, s.kv_heads));
  const int64_t group = s.heads / s.kv_heads;
  const bool grouped = group > 1;
  const Shape q_shape = grouped ? Shape{s.batch, s.kv_heads, group, s.rows, s.cols} : Shape{s.batch, s.heads, s.rows, s.cols};
  const Shape kv_shape = grouped ? Shape{s.batch, s.kv_heads, 1, s.kv_len, s.cols} : Shape{s.batch, s.heads, s.kv_len, s.cols};
  kiln::Tensor q = g.input("q", dtype, q_shape);
  kiln::Tensor k = g.input("k", dtype, kv_shape);
  kiln::Tensor v = g.input("v", dtype, kv_shape);
  g.output(kiln::attention(q, k, v, 1.0 / std::sqrt(static_cast<double>(s.cols)), s.causal));
}

int64_t attention_bench_bytes(DType dtype, const BenchSize& s) {
  return (2 * s.batch * s.heads * s.rows * s.cols + 2 * s.batch * s.kv_heads * s.kv_len * s.cols) * dtype_bytes(dtype);
}

int64_t attention_bench_flops(const BenchSize& s) {
  const int64_t flops = 4 * s.batch * s.heads * s.rows * s.kv_len * s.cols;
  return s.causal ? flops / 2 : flops;
}

}  // namespace kiln::runtime
