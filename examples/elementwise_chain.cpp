// An element-wise chain, gelu(x * s + b) + r, with s and b broadcast along the rows.
// Builds the graph with Kiln's C++ DSL and prints its text form, the same text as
// examples/elementwise_chain.kiln (check with: kiln opt examples/elementwise_chain.kiln --pipeline=).
#include <iostream>

#include "frontend/kiln.h"

int main() {
  try {
    kiln::Graph g("elementwise_chain");
    auto x = g.input("x", kiln::f16, {8192, 8192});
    auto s = g.input("s", kiln::f16, {8192});
    auto b = g.input("b", kiln::f16, {8192});
    auto r = g.input("r", kiln::f16, {8192, 8192});
    auto y = kiln::gelu(x * s + b, "tanh") + r;
    g.output(y.name("y"));
    std::cout << g.str();
  } catch (const kiln::Error& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
  return 0;
}
