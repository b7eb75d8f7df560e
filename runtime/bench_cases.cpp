// The benchmark cases, built with the C++ DSL. Sizes: 2^27 elements per case for the
// row-wise jobs (R = 2^27 / C), so that data is several times larger than the L2 cache.
#include "runtime/bench_cases.h"

#include <fmt/format.h>

#include <charconv>

#include "frontend/kiln.h"
#include "ir/error.h"

namespace kiln::runtime {

namespace {

constexpr int64_t kElements = int64_t{1} << 27;

std::vector<BenchSize> rows_of_2_27(std::initializer_list<int64_t> cols) {
  std::vector<BenchSize> sizes;
  for (int64_t c : cols) sizes.push_back({kElements / c, c});
  return sizes;
}

}  // namespace

std::string BenchSize::str() const { return fmt::format("{}x{}", rows, cols); }

const std::vector<BenchCase>& bench_cases() {
  static const std::vector<BenchCase> cases = {
      {"gelu_chain", "y = gelu_tanh(x * s + b) + r; s, b of shape [C]", {DType::f16, DType::f32}, {{8192, 8192}}},
      {"softmax", "y = softmax(x, axis -1)", {DType::f16},
       rows_of_2_27({128, 512, 1024, 4096, 16384, 32768, 65536, 262144})},
      {"add_rmsnorm", "h = x + r; y = h * rsqrt(mean(h^2) + 1e-6) * w; outputs y, h", {DType::f16},
       rows_of_2_27({1024, 4096, 8192, 16384})},
      {"layer_norm", "y = (x - mean) * rsqrt(var + 1e-5) * w + b", {DType::f16},
       rows_of_2_27({1024, 4096, 8192, 16384})},
      {"row_sum", "y[R] = sum of each row", {DType::f32}, {{16384, 16384}}},
      {"col_sum", "y[C] = sum over axis 0", {DType::f32}, {{16384, 16384}}},
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

ir::Graph bench_graph(const BenchCase& c, DType dtype, const BenchSize& size) {
  if (!is_float(dtype))
    throw Error(fmt::format("benchmark case {} needs a float dtype, got {}", c.name, dtype_name(dtype)));
  if (size.rows < 1 || size.cols < 1)
    throw Error(fmt::format("benchmark case {}: size {} must be positive", c.name, size.str()));
  const Shape matrix = {size.rows, size.cols}, row = {size.cols};
  kiln::Graph g(fmt::format("{}_{}_{}x{}", c.name, dtype_name(dtype), size.rows, size.cols));
  if (c.name == "gelu_chain") {
    auto x = g.input("x", dtype, matrix);
    auto r = g.input("r", dtype, matrix);
    auto s = g.input("s", dtype, row);
    auto b = g.input("b", dtype, row);
    g.output(kiln::gelu(x * s + b, "tanh") + r);
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
  } else {
    throw Error(fmt::format("benchmark case {} has no graph", c.name));
  }
  return g.ir().clone();
}

int64_t bench_bytes(const BenchCase& c, DType dtype, const BenchSize& size) {
  const int64_t es = dtype_bytes(dtype), rc = size.rows * size.cols, r = size.rows, cc = size.cols;
  if (c.name == "gelu_chain") return (3 * rc + 2 * cc) * es;
  if (c.name == "softmax") return 2 * rc * es;
  if (c.name == "add_rmsnorm") return (4 * rc + cc) * es;
  if (c.name == "layer_norm") return (2 * rc + 2 * cc) * es;
  if (c.name == "row_sum") return (rc + r) * es;
  if (c.name == "col_sum") return (rc + cc) * es;
  throw Error(fmt::format("benchmark case {} has no bytes formula", c.name));
}

int64_t bench_flops(const BenchCase&, DType, const BenchSize&) { return 0; }

std::vector<BenchSize> parse_bench_sizes(std::string_view text) {
  std::vector<BenchSize> sizes;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string_view::npos) comma = text.size();
    std::string_view item = text.substr(start, comma - start);
    size_t x = item.find('x');
    BenchSize s{0, 0};
    bool ok = x != std::string_view::npos;
    if (ok) {
      auto r1 = std::from_chars(item.data(), item.data() + x, s.rows);
      auto r2 = std::from_chars(item.data() + x + 1, item.data() + item.size(), s.cols);
      ok = r1.ec == std::errc() && r1.ptr == item.data() + x && r2.ec == std::errc() &&
           r2.ptr == item.data() + item.size() && s.rows > 0 && s.cols > 0;
    }
    if (!ok) throw Error(fmt::format("bad size '{}' in '{}': expected ROWSxCOLS with positive integers", item, text));
    sizes.push_back(s);
    start = comma + 1;
  }
  return sizes;
}

}  // namespace kiln::runtime
