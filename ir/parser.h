// Parser for the textual form printed by printer.h.
// Errors read "FILE:LINE:COL: error: MESSAGE", then the source line and a caret.
#pragma once
#include <string>
#include <string_view>

#include "ir/error.h"
#include "ir/graph.h"

namespace kiln::ir {

class ParseError : public Error {
public:
  ParseError(const std::string& full_message, std::string file, int line, int col)
      : Error(full_message), file(std::move(file)), line(line), col(col) {}
  std::string file;
  int line, col;
};

// Parses one `func` and verifies it. Throws ParseError on any error, including
// the op table's type errors (located at the offending op).
Graph parse(std::string_view text, const std::string& filename = "<input>");
Graph parse_file(const std::string& path);  // "-" reads standard input

}  // namespace kiln::ir
