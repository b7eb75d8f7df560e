// LayerNorm over the last axis, with a weight and a bias.
// Builds the graph with Kiln's C++ DSL and prints its text form, the same text as
// examples/layer_norm.kiln (check with: kiln opt examples/layer_norm.kiln --pipeline=).
#include <iostream>

#include "frontend/kiln.h"

int main() {
  try {
    kiln::Graph g("layer_norm");
    auto x = g.input("x", kiln::f16, {8192, 4096});
    auto w = g.input("w", kiln::f16, {4096});
    auto b = g.input("b", kiln::f16, {4096});
    g.output(kiln::layer_norm(x, w, b, 1e-5).name("y"));
    std::cout << g.str();
  } catch (const kiln::Error& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
  return 0;
}
