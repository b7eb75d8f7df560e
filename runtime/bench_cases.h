// The benchmark cases of `kiln bench`: each builds its graph with the C++ DSL for a
// size [rows, cols] and a dtype, and says how many bytes the job must move at least
// (each tensor read or written once). bench/peers.py defines the same cases for the
// peer frameworks; the two lists must stay in step.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ir/dtype.h"
#include "ir/graph.h"

namespace kiln::runtime {

struct BenchSize {
  int64_t rows = 1, cols = 1;
  std::string str() const;  // "8192x8192"
  bool operator==(const BenchSize&) const = default;
};

struct BenchCase {
  std::string name;           // "softmax"
  std::string description;    // "y = softmax(x, axis -1)"
  std::vector<DType> dtypes;  // the dtypes it runs in by default
  std::vector<BenchSize> sizes;
};

// Every case, in the order `kiln bench` runs them.
const std::vector<BenchCase>& bench_cases();
// Throws kiln::Error naming the known cases.
const BenchCase& find_bench_case(std::string_view name);

// The case's graph for one size and dtype. Its inputs and outputs are in the order the
// hand-written baselines take them (baselines/baseline.h). Throws kiln::Error for a
// dtype or size the case cannot have.
ir::Graph bench_graph(const BenchCase& c, DType dtype, const BenchSize& size);

// The minimum bytes moved (each tensor read or written once) and the flops (0 for
// these memory-bound cases).
int64_t bench_bytes(const BenchCase& c, DType dtype, const BenchSize& size);
int64_t bench_flops(const BenchCase& c, DType dtype, const BenchSize& size);

// "RxC,RxC,..." -> sizes; throws kiln::Error on a malformed or non-positive entry.
std::vector<BenchSize> parse_bench_sizes(std::string_view text);

}  // namespace kiln::runtime
