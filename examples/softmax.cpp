// Softmax over each row of a 4096 x 4096 matrix, written with the composite op.
// Builds the graph with Kiln's C++ DSL and prints its text form, the same text as
// examples/softmax.kiln (check with: kiln opt examples/softmax.kiln --pipeline=).
#include <iostream>

#include "frontend/kiln.h"

int main() {
  try {
    kiln::Graph g("softmax");
    auto x = g.input("x", kiln::f16, {4096, 4096});
    g.output(kiln::softmax(x).name("y"));
    std::cout << g.str();
  } catch (const kiln::Error& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
  return 0;
}
