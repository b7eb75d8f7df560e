// The textual form of a graph (MLIR-like), see DESIGN.md "The graph IR":
//   func @name(%x: f16[8,4096], ...) -> (f16[8,4096]) {
//     %h = add %x, %r : f16[8,4096]
//     return %h
//   }
// Every op line ends with its result type; attributes print in schema order.
// Unnamed values print as numbers, skipping names already taken, so that
// print -> parse -> print is identical.
#pragma once
#include <string>
#include <unordered_map>

#include "ir/graph.h"

namespace kiln::ir {

// The names a graph's values print with ("x", "h", "0", "1", ...), by Value::id.
std::unordered_map<int, std::string> value_names(const Graph& g);
std::string print(const Graph& g);
// One node's line without indentation, e.g. "%h = add %x, %r : f16[8,4096]".
std::string print_node(const Node& n, const std::unordered_map<int, std::string>& names);

}  // namespace kiln::ir
