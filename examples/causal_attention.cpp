// Causal self-attention: batch 4, 16 heads, 2048 tokens, head dimension 64.
// Builds the graph with Kiln's C++ DSL and prints its text form, the same text as
// examples/causal_attention.kiln (check with: kiln opt examples/causal_attention.kiln --pipeline=).
#include <iostream>

#include "frontend/kiln.h"

int main() {
  try {
    kiln::Graph g("causal_attention");
    auto q = g.input("q", kiln::f16, {4, 16, 2048, 64});
    auto k = g.input("k", kiln::f16, {4, 16, 2048, 64});
    auto v = g.input("v", kiln::f16, {4, 16, 2048, 64});
    // The scale defaults to 1/sqrt(64) = 0.125.
    g.output(kiln::attention(q, k, v, std::nullopt, /*causal=*/true).name("y"));
    std::cout << g.str();
  } catch (const kiln::Error& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
  return 0;
}
