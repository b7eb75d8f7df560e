// The row-reduction graphs that the row-reduce tests share, as Kiln text: each case
// takes `x` (and, for the norms, `r`, `w`, `b`) of dtype `dt` with rows of length n.
#pragma once
#include <algorithm>
#include <string>
#include <vector>

namespace kiln::row_reduce_test {

inline const std::vector<std::string> kCases = {"softmax", "log_softmax", "layer_norm", "rms_norm",
                                                "add_rms_norm", "sum", "max", "min", "mean"};

// `rows` is the leading shape, e.g. "4" or "2,3"; n the row length.
inline std::string graph_text(const std::string& which, const std::string& dt, const std::string& rows, long n) {
  const std::string full = dt + "[" + rows + "," + std::to_string(n) + "]";
  const std::string row = dt + "[" + std::to_string(n) + "]";
  const std::string per_row = dt + "[" + rows + "]";
  if (which == "softmax" || which == "log_softmax")
    return "func @" + which + "(%x: " + full + ") -> (" + full + ") {\n  %y = " + which + " %x : " + full +
           "\n  return %y\n}\n";
  if (which == "layer_norm")
    return "func @layer_norm(%x: " + full + ", %w: " + row + ", %b: " + row + ") -> (" + full +
           ") {\n  %y = layer_norm %x, %w, %b : " + full + "\n  return %y\n}\n";
  if (which == "rms_norm")
    return "func @rms_norm(%x: " + full + ", %w: " + row + ") -> (" + full + ") {\n  %y = rms_norm %x, %w : " + full +
           "\n  return %y\n}\n";
  if (which == "add_rms_norm")
    return "func @add_rms_norm(%x: " + full + ", %r: " + full + ", %w: " + row + ") -> (" + full + ", " + full +
           ") {\n  %h = add %x, %r : " + full + "\n  %y = rms_norm %h, %w : " + full + "\n  return %y, %h\n}\n";
  const int axis = static_cast<int>(std::count(rows.begin(), rows.end(), ',')) + 1;
  return "func @" + which + "(%x: " + full + ") -> (" + per_row + ") {\n  %s = " + which + " %x {axis = [" +
         std::to_string(axis) + "]} : " + per_row + "\n  return %s\n}\n";
}

}  // namespace kiln::row_reduce_test
