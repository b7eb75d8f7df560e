// Row sums and column sums of one matrix: two outputs, two kinds of reduction.
// Builds the graph with Kiln's C++ DSL and prints its text form, the same text as
// examples/row_col_sum.kiln (check with: kiln opt examples/row_col_sum.kiln --pipeline=).
#include <iostream>

#include "frontend/kiln.h"

int main() {
  try {
    kiln::Graph g("row_col_sum");
    auto x = g.input("x", kiln::f32, {16384, 16384});
    g.output(kiln::sum(x, {1}).name("rows"));
    g.output(kiln::sum(x, {0}).name("cols"));
    std::cout << g.str();
  } catch (const kiln::Error& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
  return 0;
}
