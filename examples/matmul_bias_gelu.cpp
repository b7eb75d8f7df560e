// A GEMM with a bias and a GELU, both of which can run in the GEMM's epilogue.
// Builds the graph with Kiln's C++ DSL and prints its text form, the same text as
// examples/matmul_bias_gelu.kiln (check with: kiln opt examples/matmul_bias_gelu.kiln --pipeline=).
#include <iostream>

#include "frontend/kiln.h"

int main() {
  try {
    kiln::Graph g("matmul_bias_gelu");
    auto a = g.input("a", kiln::f16, {4096, 4096});
    auto b = g.input("b", kiln::f16, {4096, 4096});
    auto bias = g.input("bias", kiln::f16, {4096});
    g.output(kiln::gelu(kiln::matmul(a, b) + bias).name("y"));
    std::cout << g.str();
  } catch (const kiln::Error& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
  return 0;
}
