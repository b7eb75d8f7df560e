// The same softmax as softmax.cpp, written by hand from max, sub, exp, sum and div.
// Builds the graph with Kiln's C++ DSL and prints its text form, the same text as
// examples/softmax_by_hand.kiln (check with: kiln opt examples/softmax_by_hand.kiln --pipeline=).
#include <iostream>

#include "frontend/kiln.h"

int main() {
  try {
    kiln::Graph g("softmax_by_hand");
    auto x = g.input("x", kiln::f16, {4096, 4096});
    auto m = kiln::max(x, {1}, /*keepdim=*/true).name("m");
    auto d = (x - m).name("d");
    auto e = kiln::exp(d).name("e");
    auto s = kiln::sum(e, {1}, /*keepdim=*/true).name("s");
    g.output((e / s).name("y"));
    std::cout << g.str();
  } catch (const kiln::Error& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
  return 0;
}
