// The benchmark cases of `kiln bench`: each builds its graph with the C++ DSL for a
// size and a dtype, and says how many bytes the job must move at least (each tensor
// read or written once) and how many flops it does. A memory-bound case takes a size
// [rows, cols]; a GEMM case a product M x N x K, optionally batched. bench/peers.py
// defines the same cases for the peer frameworks; the two lists must stay in step.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/dtype.h"
#include "ir/graph.h"

namespace kiln::runtime {

// The batch B of the cases that reduce x of shape [B, R, C] over a middle axis or over
// several axes (middle_axis_sum, multi_axis_sum); their hand-written baselines share it.
inline constexpr int64_t kReduceBenchBatch = 8;
// The group of quant_w4g128's int4 weights: one scale per 128 elements of K.
inline constexpr int64_t kQuantGroup = 128;

// A size in one of four forms: RxC (rows, cols), MxNxK (rows = M, cols = N,
// depth = K), BxMxNxK (with batch = B) and an attention size (runtime/bench_attention.h:
// batch = B, heads = H, kv_heads = KV, rows = Sq, kv_len = Skv, cols = D). depth, batch
// and the attention fields are 0 where the form has none.
struct BenchSize {
  int64_t rows = 1, cols = 1;
  int64_t depth = 0;  // K of a GEMM size
  int64_t batch = 0;  // B of a batched GEMM or an attention size
  int64_t heads = 0, kv_heads = 0, kv_len = 0;  // an attention size's
  bool causal = false;
  static BenchSize gemm(int64_t m, int64_t n, int64_t k) { return {m, n, k, 0}; }
  static BenchSize batched_gemm(int64_t b, int64_t m, int64_t n, int64_t k) { return {m, n, k, b}; }
  static BenchSize attention(int64_t b, int64_t h, int64_t kv, int64_t sq, int64_t skv, int64_t d, bool causal) {
    return {sq, d, 0, b, h, kv, skv, causal};
  }
  bool is_gemm() const { return depth > 0; }
  bool is_attention() const { return heads > 0; }
  // The batch count of a GEMM size: 1 when the form has none.
  int64_t batches() const { return batch > 0 ? batch : 1; }
  std::string str() const;  // "8192x8192", "4096x4096x4096", "32x1024x1024x1024", "4x16x4096x128c"
  // The dims of a bench report row: as str() prints them; [B, H, KV, Sq, Skv, D] for
  // attention, as bench/peers.py's attention rows.
  std::vector<int64_t> dims() const;
  bool operator==(const BenchSize&) const = default;
};

// Which sizes a case takes.
enum class SizeForm { Matrix, Gemm, Attention };  // RxC; MxNxK or BxMxNxK; BxHxSqxSkvxD[c][gN]

struct BenchCase {
  std::string name;           // "softmax"
  std::string description;    // "y = softmax(x, axis -1)"
  std::vector<DType> dtypes;  // the dtypes it runs in by default
  std::vector<BenchSize> sizes;
  SizeForm form = SizeForm::Matrix;
  // Whether a size is of the case's form (the quantised products: MxNxK with K in whole
  // groups of 128; fp8 products: MxNxK, unbatched).
  bool takes(const BenchSize& s) const;
};

// Whether a case is a weight-only quantised product (quant_w4g128, quant_w8): inputs x, w, s.
bool is_quant_case(const BenchCase& c);
// Whether a case multiplies fp8 operands (gemm_fp8): its dtype is theirs, its output bf16.
bool is_fp8_case(const BenchCase& c);

// Every case, in the order `kiln bench` runs them.
const std::vector<BenchCase>& bench_cases();
// Throws kiln::Error naming the known cases.
const BenchCase& find_bench_case(std::string_view name);

// The case's graph for one size and dtype. Its inputs and outputs are in the order the
// hand-written baselines take them (baselines/baseline.h). Throws kiln::Error for a
// dtype or size the case cannot have.
ir::Graph bench_graph(const BenchCase& c, DType dtype, const BenchSize& size);

// The minimum bytes moved (each tensor read or written once) and the flops: 2 B M N K
// for a GEMM case (its epilogue counts as none), 0 for the memory-bound cases.
int64_t bench_bytes(const BenchCase& c, DType dtype, const BenchSize& size);
int64_t bench_flops(const BenchCase& c, DType dtype, const BenchSize& size);
// The part of bench_bytes written (the graph's outputs), for the memory-bound cases (RxC
// sizes), whose place under the roofline depends on their mix of reads and writes;
// nullopt for the others.
std::optional<int64_t> bench_written_bytes(const BenchCase& c, DType dtype, const BenchSize& size);

// "4096x512x8" -> {4096, 512, 8}; nullopt unless every part is a positive integer.
std::optional<std::vector<int64_t>> parse_size_dims(std::string_view item);

// "RxC,MxNxK,BxMxNxK,BxHxSqxSkvxD,BxHxSxDc,..." -> sizes; throws kiln::Error on a malformed or non-positive
// entry. Which case takes which form is BenchCase::takes.
std::vector<BenchSize> parse_bench_sizes(std::string_view text);

// Throws kiln::Error when `c` does not take sizes of the form of `s`, naming both.
void check_size_form(const BenchCase& c, const BenchSize& s);

}  // namespace kiln::runtime
