// The column- and full-reduction graphs that the col-reduce tests share, as Kiln text:
// `x` of dtype `dt` and shape [k, n], reduced over axis 0 (one value per column) or
// over both axes (one value).
#pragma once
#include <string>

namespace kiln::col_reduce_test {

inline const char* const kOps[] = {"sum", "max", "min", "mean", "logsumexp", "var"};

inline std::string column_graph(const std::string& op, const std::string& dt, long k, long n) {
  const std::string full = dt + "[" + std::to_string(k) + "," + std::to_string(n) + "]";
  const std::string col = dt + "[" + std::to_string(n) + "]";
  return "func @col_" + op + "(%x: " + full + ") -> (" + col + ") {\n  %s = " + op + " %x {axis = [0]} : " + col +
         "\n  return %s\n}\n";
}

inline std::string full_graph(const std::string& op, const std::string& dt, long k, long n) {
  const std::string full = dt + "[" + std::to_string(k) + "," + std::to_string(n) + "]";
  return "func @full_" + op + "(%x: " + full + ") -> (" + dt + "[]) {\n  %s = " + op + " %x {axis = [0, 1]} : " + dt +
         "[]\n  return %s\n}\n";
}

}  // namespace kiln::col_reduce_test
