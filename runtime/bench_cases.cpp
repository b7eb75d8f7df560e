// The benchmark cases, built with the C++ DSL. Sizes: 2^27 elements per case for the
// row-wise jobs (R = 2^27 / C), so that data is several times larger than the L2 cache.
// GEMM cases: the square products people quote, one whose sizes are no multiple of 8
// (every tile has a ragged edge and no row is 16-byte aligned), and M = 16 against an
// 8192 x 8192 weight (a decode step: memory-bound, under the bandwidth roof).
#include "runtime/bench_cases.h"

#include <fmt/format.h>

#include <charconv>
#include <optional>

#include "frontend/kiln.h"
#include "ir/error.h"
#include "runtime/bench_attention.h"

namespace kiln::runtime {

namespace {

constexpr int64_t kElements = int64_t{1} << 27;
constexpr int64_t kReduceBatch = kReduceBenchBatch;

std::vector<BenchSize> rows_of_2_27(std::initializer_list<int64_t> cols) {
  std::vector<BenchSize> sizes;
  for (int64_t c : cols) sizes.push_back({kElements / c, c});
  return sizes;
}

// A decoding step's row (one token of 4096 features, 8 KB in f16) ahead of the large sizes:
// a launch of a few microseconds, where launch overhead and the timing method show.
std::vector<BenchSize> with_decode_row(std::vector<BenchSize> sizes) {
  sizes.insert(sizes.begin(), BenchSize{1, 4096});
  return sizes;
}

}  // namespace

std::string BenchSize::str() const {
  return is_attention() ? attention_size_str(*this) : fmt::format("{}", fmt::join(dims(), "x"));
}

std::vector<int64_t> BenchSize::dims() const {
  if (is_attention()) return {batch, heads, kv_heads, rows, kv_len, cols};
  if (!is_gemm()) return {rows, cols};
  if (batch > 0) return {batch, rows, cols, depth};
  return {rows, cols, depth};
}

const std::vector<BenchCase>& bench_cases() {
  static const std::vector<BenchCase> cases = {
      {"gelu_chain", "y = gelu_tanh(x * s + b) + r; s, b of shape [C]", {DType::f16, DType::f32}, {{8192, 8192}}},
      // A SwiGLU gate (two inputs read for each output) and a multiply-add of three inputs.
      {"swiglu", "y = silu(g) * u", {DType::bf16, DType::f32}, {{16384, 8192}, {1, 4096}}},
      {"mul_add", "y = a * b + c", {DType::bf16}, {{16384, 8192}, {16, 4096}}},
      {"softmax", "y = softmax(x, axis -1)", {DType::f16},
       with_decode_row(rows_of_2_27({128, 512, 1024, 4096, 16384, 32768, 65536, 262144}))},
      {"add_rmsnorm", "h = x + r; y = h * rsqrt(mean(h^2) + 1e-6) * w; outputs y, h", {DType::f16},
       with_decode_row(rows_of_2_27({1024, 4096, 8192, 16384}))},
      {"layer_norm", "y = (x - mean) * rsqrt(var + 1e-5) * w + b", {DType::f16},
       with_decode_row(rows_of_2_27({1024, 4096, 8192, 16384}))},
      {"row_sum", "y[R] = sum of each row", {DType::f32}, {{16384, 16384}}},
      {"col_sum", "y[C] = sum over axis 0", {DType::f32}, {{16384, 16384}}},
      // Means over the rows of tall matrices (few columns, tens of thousands of rows) and a wide one.
      {"col_mean", "y[C] = mean over axis 0", {DType::f32}, {{65536, 256}, {50000, 1024}, {1024, 32768}}},
      // 2^25 elements (128 MB in f32): quick, and still four times the L2.
      {"middle_axis_sum", "y[8,C] = sum of x[8,R,C] over axis 1", {DType::f32}, {{4096, 1024}, {16384, 1024}}},
      {"multi_axis_sum", "y[R] = sum of x[8,R,C] over axes 0 and 2", {DType::f32}, {{4096, 1024}}},
      {"gemm", "C[M,N] = A[M,K] @ B[K,N], both row-major", {DType::f16, DType::bf16},
       {BenchSize::gemm(4096, 4096, 4096), BenchSize::gemm(8192, 8192, 8192), BenchSize::gemm(4093, 4099, 4097),
        BenchSize::gemm(16, 8192, 8192)},
       SizeForm::Gemm},
      {"gemm_batched", "C[B,M,N] = A[B,M,K] @ B[B,K,N]", {DType::f16},
       {BenchSize::batched_gemm(32, 1024, 1024, 1024)}, SizeForm::Gemm},
      // tanh-approximate GELU: the one cuBLASLt's GELU_BIAS epilogue computes.
      {"gemm_bias_gelu", "y = gelu_tanh(A @ B + bias[N])", {DType::f16}, {BenchSize::gemm(4096, 4096, 4096)},
       SizeForm::Gemm},
      // fp8 products with a scale per row of A and per column of B (torch._scaled_mm's row-wise
      // form): both operands K-contiguous, as fp8 Tensor Cores read them.
      {"gemm_fp8", "y = bf16(A @ B^T * sa[M,1] * sb[1,N]); A [M,K], B [N,K] in fp8", {DType::f8e4m3},
       {BenchSize::gemm(4096, 4096, 4096), BenchSize::gemm(8192, 8192, 8192)}, SizeForm::Gemm},
      // Decoding's weight-only quantised products: a few token rows against an [N, K] weight.
      {"quant_w4g128", "y = x @ dequant(w: i4[N,K], s[N,K/128], group 128)^T", {DType::bf16},
       {BenchSize::gemm(1, 8192, 8192), BenchSize::gemm(16, 8192, 8192), BenchSize::gemm(64, 8192, 8192)},
       SizeForm::Gemm},
      {"quant_w8", "y = x @ dequant(w: i8[N,K], s[N,1], group K)^T", {DType::bf16}, {BenchSize::gemm(1, 8192, 8192)},
       SizeForm::Gemm},
      // One flash kernel each: a decode step against an 8192-token cache, and a 4096-token prompt.
      {"attention", "o = softmax(q k^T / sqrt(D)) v; q [B,H,Sq,D], k and v [B,KV,Skv,D]", {DType::f16},
       {BenchSize::attention(8, 32, 32, 1, 8192, 128, false), BenchSize::attention(4, 16, 16, 4096, 4096, 128, false)},
       SizeForm::Attention},
      // Causal prompts: head dim 128, head dim 64, and grouped queries (4 query heads a K/V head).
      {"attention_causal", "attention with query i seeing keys j <= i", {DType::f16},
       {BenchSize::attention(4, 16, 16, 4096, 4096, 128, true), BenchSize::attention(4, 16, 16, 2048, 2048, 64, true),
        BenchSize::attention(4, 32, 8, 4096, 4096, 128, true)},
       SizeForm::Attention},
  };
  return cases;
}

const BenchCase& find_bench_case(std::string_view name) {
  std::vector<std::string> names;
  for (const BenchCase& c : bench_cases()) {
    if (c.name == name) return c;
    names.push_back(c.name);
  }
  throw Error(fmt::format("no benchmark case named '{}'; known: {}", name, fmt::join(names, ", ")));
}

bool BenchCase::takes(const BenchSize& s) const {
  if (s.is_attention() != (form == SizeForm::Attention)) return false;
  if (s.is_attention()) return s.causal == (name == "attention_causal");
  if (s.is_gemm() != (form == SizeForm::Gemm)) return false;
  if (is_fp8_case(*this)) return s.batch == 0;
  return !is_quant_case(*this) || (s.batch == 0 && s.depth % kQuantGroup == 0);
}

void check_size_form(const BenchCase& c, const BenchSize& s) {
  if (c.takes(s)) return;
  if (is_quant_case(c))
    throw Error(fmt::format("benchmark case {} takes sizes MxNxK with K a multiple of {}, not {}", c.name, kQuantGroup,
                            s.str()));
  if (is_fp8_case(c)) throw Error(fmt::format("benchmark case {} takes sizes MxNxK, not {}", c.name, s.str()));
  const char* form = c.form == SizeForm::Gemm        ? "MxNxK or BxMxNxK"
                     : c.form == SizeForm::Attention ? (c.name == "attention_causal" ? "BxHxSqxSkvxDc or BxHxSxDc (causal), with gN for N K/V heads"
                                                                                     : "BxHxSqxSkvxD (not causal), with gN for N K/V heads")
                                                     : "RxC";
  throw Error(fmt::format("benchmark case {} takes sizes {}, not {}", c.name, form, s.str()));
}

namespace {

// A [B.., M, K] @ B [B.., K, N] (+ bias [N], then tanh GELU), row-major as torch's `a @ b`.
void build_gemm(kiln::Graph& g, const BenchCase& c, DType dtype, const BenchSize& size) {
  Shape a_shape = {size.rows, size.depth}, b_shape = {size.depth, size.cols};
  if (size.batch > 0) {
    a_shape.insert(a_shape.begin(), size.batch);
    b_shape.insert(b_shape.begin(), size.batch);
  }
  auto a = g.input("a", dtype, a_shape);
  auto b = g.input("b", dtype, b_shape);
  if (c.name == "gemm_bias_gelu") {
    auto bias = g.input("bias", dtype, {size.cols});
    g.output(kiln::gelu(kiln::matmul(a, b) + bias, "tanh"));
  } else {
    g.output(kiln::matmul(a, b));
  }
}

// An fp8 A [M, K] times B [N, K]^T, widened to bf16 (exactly: fp8 values are bf16 values),
// then scaled per row of A and per column of B in f32, bf16 out.
void build_gemm_fp8(kiln::Graph& g, DType dtype, const BenchSize& size) {
  auto a = g.input("a", dtype, {size.rows, size.depth});
  auto b = g.input("b", dtype, {size.cols, size.depth});
  auto sa = g.input("sa", DType::f32, {size.rows, 1});
  auto sb = g.input("sb", DType::f32, {1, size.cols});
  auto product = kiln::matmul(kiln::cast(a, DType::bf16), kiln::cast(b, DType::bf16), false, true);
  g.output(kiln::cast(kiln::cast(product, DType::f32) * sa * sb, DType::bf16));
}

// x [M, K] @ dequant(w, s)^T with w [N, K] of i4 in groups of 128 or i8 with a scale a row.
void build_quant(kiln::Graph& g, const BenchCase& c, DType dtype, const BenchSize& size) {
  const bool w4 = c.name == "quant_w4g128";
  const int64_t group = w4 ? kQuantGroup : size.depth;
  if (size.batch > 0) throw Error(fmt::format("benchmark case {} takes MxNxK, not a batched size", c.name));
  if (size.depth % group != 0 || size.depth % 2 != 0)
    throw Error(fmt::format("benchmark case {}: K = {} must be a multiple of {}", c.name, size.depth, w4 ? group : 2));
  auto x = g.input("x", dtype, {size.rows, size.depth});
  auto w = g.input("w", w4 ? DType::i4 : DType::i8, {size.cols, size.depth});
  auto s = g.input("s", dtype, {size.cols, size.depth / group});
  g.output(kiln::matmul(x, kiln::dequant(w, s, group), false, true));
}

}  // namespace

bool is_quant_case(const BenchCase& c) { return c.name == "quant_w4g128" || c.name == "quant_w8"; }

bool is_fp8_case(const BenchCase& c) { return c.name == "gemm_fp8"; }

ir::Graph bench_graph(const BenchCase& c, DType dtype, const BenchSize& size) {
  if (is_fp8_case(c) ? !is_fp8(dtype) : !is_float(dtype))
    throw Error(fmt::format("benchmark case {} needs {} dtype, got {}", c.name, is_fp8_case(c) ? "an fp8" : "a float",
                            dtype_name(dtype)));
  for (int64_t d : size.dims())
    if (d < 1) throw Error(fmt::format("benchmark case {}: size {} must be positive", c.name, size.str()));
  check_size_form(c, size);
  const Shape matrix = {size.rows, size.cols}, row = {size.cols};
  kiln::Graph g(fmt::format("{}_{}_{}", c.name, dtype_name(dtype), size.str()));
  if (is_quant_case(c)) {
    build_quant(g, c, dtype, size);
  } else if (is_fp8_case(c)) {
    build_gemm_fp8(g, dtype, size);
  } else if (is_attention_case(c)) {
    build_attention(g, dtype, size);
  } else if (c.form == SizeForm::Gemm) {
    build_gemm(g, c, dtype, size);
  } else if (c.name == "gelu_chain") {
    auto x = g.input("x", dtype, matrix);
    auto r = g.input("r", dtype, matrix);
    auto s = g.input("s", dtype, row);
    auto b = g.input("b", dtype, row);
    g.output(kiln::gelu(x * s + b, "tanh") + r);
  } else if (c.name == "swiglu") {
    auto gate = g.input("g", dtype, matrix);
    auto up = g.input("u", dtype, matrix);
    g.output(kiln::silu(gate) * up);
  } else if (c.name == "mul_add") {
    auto a = g.input("a", dtype, matrix);
    auto b = g.input("b", dtype, matrix);
    auto c_in = g.input("c", dtype, matrix);
    g.output(a * b + c_in);
  } else if (c.name == "softmax") {
    g.output(kiln::softmax(g.input("x", dtype, matrix), -1));
  } else if (c.name == "add_rmsnorm") {
    auto x = g.input("x", dtype, matrix);
    auto r = g.input("r", dtype, matrix);
    auto w = g.input("w", dtype, row);
    auto h = x + r;
    g.output(kiln::rms_norm(h, w, 1e-6));
    g.output(h);
  } else if (c.name == "layer_norm") {
    auto x = g.input("x", dtype, matrix);
    auto w = g.input("w", dtype, row);
    auto b = g.input("b", dtype, row);
    g.output(kiln::layer_norm(x, w, b, 1e-5));
  } else if (c.name == "row_sum") {
    g.output(kiln::sum(g.input("x", dtype, matrix), {1}));
  } else if (c.name == "col_sum") {
    g.output(kiln::sum(g.input("x", dtype, matrix), {0}));
  } else if (c.name == "col_mean") {
    g.output(kiln::mean(g.input("x", dtype, matrix), {0}));
  } else if (c.name == "middle_axis_sum") {
    g.output(kiln::sum(g.input("x", dtype, {kReduceBatch, size.rows, size.cols}), {1}));
  } else if (c.name == "multi_axis_sum") {
    g.output(kiln::sum(g.input("x", dtype, {kReduceBatch, size.rows, size.cols}), {0, 2}));
  } else {
    throw Error(fmt::format("benchmark case {} has no graph", c.name));
  }
  return g.ir().clone();
}

int64_t bench_bytes(const BenchCase& c, DType dtype, const BenchSize& size) {
  check_size_form(c, size);
  if (is_attention_case(c)) return attention_bench_bytes(dtype, size);
  if (is_quant_case(c)) {  // the activations, the packed weights, their scales, the output
    const int64_t m = size.rows, n = size.cols, k = size.depth, es = dtype_bytes(dtype);
    const bool w4 = c.name == "quant_w4g128";
    const int64_t groups = w4 ? k / kQuantGroup : 1;
    return m * k * es + (w4 ? n * k / 2 : n * k) + n * groups * es + m * n * es;
  }
  if (is_fp8_case(c))  // the fp8 operands, the f32 scales, the bf16 output
    return (size.rows + size.cols) * size.depth + 4 * (size.rows + size.cols) + 2 * size.rows * size.cols;
  if (c.form == SizeForm::Gemm) {
    const int64_t b = size.batches(), m = size.rows, n = size.cols, k = size.depth;
    const int64_t bias = c.name == "gemm_bias_gelu" ? n : 0;
    return (b * (m * k + k * n + m * n) + bias) * dtype_bytes(dtype);
  }
  const int64_t es = dtype_bytes(dtype), rc = size.rows * size.cols, r = size.rows, cc = size.cols;
  if (c.name == "gelu_chain") return (3 * rc + 2 * cc) * es;
  if (c.name == "swiglu") return 3 * rc * es;
  if (c.name == "mul_add") return 4 * rc * es;
  if (c.name == "softmax") return 2 * rc * es;
  if (c.name == "add_rmsnorm") return (4 * rc + cc) * es;
  if (c.name == "layer_norm") return (2 * rc + 2 * cc) * es;
  if (c.name == "row_sum") return (rc + r) * es;
  if (c.name == "col_sum" || c.name == "col_mean") return (rc + cc) * es;
  if (c.name == "middle_axis_sum") return kReduceBatch * (rc + cc) * es;
  if (c.name == "multi_axis_sum") return (kReduceBatch * rc + r) * es;
  throw Error(fmt::format("benchmark case {} has no bytes formula", c.name));
}

std::optional<int64_t> bench_written_bytes(const BenchCase& c, DType dtype, const BenchSize& size) {
  check_size_form(c, size);
  if (c.form != SizeForm::Matrix || is_quant_case(c)) return std::nullopt;
  const ir::Graph g = bench_graph(c, dtype, size);
  int64_t written = 0;
  for (const ir::Value* v : g.outputs()) written += v->type.bytes();
  return written;
}

int64_t bench_flops(const BenchCase& c, DType, const BenchSize& size) {
  check_size_form(c, size);
  if (is_attention_case(c)) return attention_bench_flops(size);
  if (c.form != SizeForm::Gemm) return 0;
  return 2 * size.batches() * size.rows * size.cols * size.depth;
}

std::optional<std::vector<int64_t>> parse_size_dims(std::string_view item) {
  std::vector<int64_t> dims;
  size_t start = 0;
  while (true) {
    size_t x = item.find('x', start);
    if (x == std::string_view::npos) x = item.size();
    int64_t d = 0;
    const char *first = item.data() + start, *last = item.data() + x;
    auto r = std::from_chars(first, last, d);
    if (first == last || r.ec != std::errc() || r.ptr != last || d < 1) return std::nullopt;
    dims.push_back(d);
    if (x == item.size()) return dims;
    start = x + 1;
  }
}

std::vector<BenchSize> parse_bench_sizes(std::string_view text) {
  std::vector<BenchSize> sizes;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string_view::npos) comma = text.size();
    std::string_view item = text.substr(start, comma - start);
    if (std::optional<BenchSize> a = parse_attention_size(item)) {
      sizes.push_back(*a);
      start = comma + 1;
      continue;
    }
    const std::optional<std::vector<int64_t>> d = parse_size_dims(item);
    if (!d || d->size() < 2 || d->size() > 4)
      throw Error(fmt::format("bad size '{}' in '{}': expected RxC, MxNxK, BxMxNxK or an attention size "
                              "BxHxSqxSkvxD[c][gN] (BxHxSxD with c or gN) with positive integers",
                              item, text));
    const std::vector<int64_t>& v = *d;
    if (v.size() == 2) sizes.push_back({v[0], v[1]});
    else if (v.size() == 3) sizes.push_back(BenchSize::gemm(v[0], v[1], v[2]));
    else sizes.push_back(BenchSize::batched_gemm(v[0], v[1], v[2], v[3]));
    start = comma + 1;
  }
  return sizes;
}

}  // namespace kiln::runtime
