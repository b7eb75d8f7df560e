// Tokens of Kiln's textual IR and the lexer that produces them one at a time.
// Also the source buffer that formats "FILE:LINE:COL: error: ..." with a caret.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace kiln::ir {

// The text being parsed, its file name, and the one way to report an error in it.
class SourceBuffer {
public:
  SourceBuffer(std::string_view text, std::string filename) : text_(text), filename_(std::move(filename)) {}
  std::string_view text() const { return text_; }
  const std::string& filename() const { return filename_; }
  // Throws ParseError: "FILE:LINE:COL: error: MESSAGE", the source line, a caret under COL.
  [[noreturn]] void fail(int line, int col, const std::string& message) const;

private:
  std::string_view line_text(int line) const;

  std::string_view text_;
  std::string filename_;
};

enum class TokenKind {
  End,
  ValueName,   // %x     (text holds "x")
  SymbolName,  // @main  (text holds "main")
  Word,        // func, add, f16, true, ...
  Integer,     // 42, -1
  Float,       // 0.5, 1e-06, inf, -nan
  String,      // "tanh"  (text holds tanh)
  LParen, RParen, LBrace, RBrace, LBracket, RBracket,
  Comma, Colon, Equal, Arrow,
};

struct Token {
  TokenKind kind = TokenKind::End;
  std::string_view text;  // as written (without the sigil or quotes)
  int line = 1, col = 1;  // 1-based, col counts bytes
  int64_t int_value = 0;  // Integer
  double float_value = 0;  // Float
};

// A short description for "expected X, got Y" messages: "'}'", "%x", "end of input".
std::string describe(const Token& t);

class Lexer {
public:
  explicit Lexer(const SourceBuffer& src) : src_(src) {}
  const Token& peek();
  Token take();

private:
  Token lex();
  void skip_space_and_comments();
  Token make(TokenKind kind, size_t begin, size_t end, int line, int col);
  Token lex_name(TokenKind kind, char sigil);
  Token lex_number();
  Token lex_string();
  char at(size_t i) const { return i < src_.text().size() ? src_.text()[i] : '\0'; }
  void advance(size_t n);

  const SourceBuffer& src_;
  size_t pos_ = 0;
  int line_ = 1, col_ = 1;
  int end_line_ = 1, end_col_ = 1;  // just after the last token, where "end of input" points
  Token peeked_;
  bool has_peeked_ = false;
};

}  // namespace kiln::ir
