// Residual add + RMSNorm: both the normalised rows and the sum are outputs.
// Builds the graph with Kiln's C++ DSL and prints its text form, the same text as
// examples/add_rmsnorm.kiln (check with: kiln opt examples/add_rmsnorm.kiln --pipeline=).
#include <iostream>

#include "frontend/kiln.h"

int main() {
  try {
    kiln::Graph g("add_rmsnorm");
    auto x = g.input("x", kiln::f16, {8192, 4096});
    auto r = g.input("r", kiln::f16, {8192, 4096});
    auto w = g.input("w", kiln::f16, {4096});
    auto h = (x + r).name("h");
    g.output(kiln::rms_norm(h, w, 1e-6).name("y"));
    g.output(h);
    std::cout << g.str();
  } catch (const kiln::Error& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
  return 0;
}
