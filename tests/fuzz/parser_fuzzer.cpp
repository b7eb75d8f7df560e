// libFuzzer target for the textual IR parser. Any input may be rejected with a
// kiln::Error, but nothing may crash, hang or leak; and whatever parses must
// print, parse again and print to the same text (print -> parse -> print).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "ir/parser.h"
#include "ir/printer.h"

namespace {

[[noreturn]] void report(const char* what, const std::string& detail, const std::string& printed) {
  std::fprintf(stderr, "parser fuzzer: %s\n%s\n--- printed text ---\n%s\n", what, detail.c_str(), printed.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  std::string printed;
  try {
    kiln::ir::Graph g = kiln::ir::parse(text, "fuzz.kiln");
    printed = kiln::ir::print(g);
  } catch (const kiln::ir::ParseError& e) {
    // A parse error must point into the input.
    if (e.line < 1 || e.col < 1 || e.file != "fuzz.kiln") report("parse error outside the input", e.what(), "");
    return 0;
  } catch (const kiln::Error&) {
    return 0;
  }
  try {
    kiln::ir::Graph again = kiln::ir::parse(printed, "printed.kiln");
    std::string reprinted = kiln::ir::print(again);
    if (reprinted != printed) report("print -> parse -> print differs", reprinted, printed);
  } catch (const kiln::Error& e) {
    report("printed text does not parse", e.what(), printed);
  }
  return 0;
}
