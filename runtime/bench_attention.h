// `kiln bench`'s attention cases (attention, attention_causal): softmax(q k^T / sqrt(D)) v
// over B batches of H query heads, grouped-query when K/V have fewer heads (KV), in the
// shapes bench/peers.py's attention case takes, so that the two reports merge row by row.
// A size is BxHxSqxSkvxD, or BxHxSxD with a suffix, followed by `c` (causal) and `gN` (N
// K/V heads): "8x32x1x8192x128" (decode), "4x16x4096x128c", "8x32x1x8192x128g8".
#pragma once
#include <optional>
#include <string>
#include <string_view>

#include "frontend/kiln.h"
#include "runtime/bench_cases.h"

namespace kiln::runtime {

bool is_attention_case(const BenchCase& c);

// The size of an attention token, nullopt when `item` is not of that form (a plain
// BxMxNxK token is a batched GEMM's size).
std::optional<BenchSize> parse_attention_size(std::string_view item);

// The token of an attention size (the inverse of parse_attention_size).
std::string attention_size_str(const BenchSize& s);

// q [B, KV, H / KV, Sq, D] against k, v [B, KV, 1, Skv, D]: each K/V head read once for
// its group (the plain [B, H, S, D] layout when KV = H).
void build_attention(kiln::Graph& g, DType dtype, const BenchSize& s);

// q and the output, k and v, once each; 4 B H Sq Skv D flops, half of them when causal.
int64_t attention_bench_bytes(DType dtype, const BenchSize& s);
int64_t attention_bench_flops(const BenchSize& s);

}  // namespace kiln::runtime
