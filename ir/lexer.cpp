// The lexer of Kiln's textual IR: names, words, numbers, strings, punctuation and
// `//` comments, with 1-based line and column for every token.
#include "ir/lexer.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <limits>

#include "ir/parser.h"

namespace kiln::ir {

namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_word_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_word_char(char c) { return is_word_start(c) || is_digit(c); }
bool is_name_char(char c) { return is_word_char(c) || c == '.'; }  // after % and @

std::string show_char(char c) {
  auto u = static_cast<unsigned char>(c);
  if (u >= 0x20 && u < 0x7f) return fmt::format("character '{}'", c);
  return fmt::format("byte 0x{:02x}", u);
}

}  // namespace

void SourceBuffer::fail(int line, int col, const std::string& message) const {
  std::string_view src_line = line_text(line);
  // The caret line copies tabs so that the caret lines up under a tab-indented token.
  std::string caret;
  for (size_t i = 0; i + 1 < static_cast<size_t>(col); ++i)
    caret += i < src_line.size() && src_line[i] == '\t' ? '\t' : ' ';
  caret += '^';
  std::string full = fmt::format("{}:{}:{}: error: {}\n{}\n{}", filename_, line, col, message, src_line, caret);
  throw ParseError(full, filename_, line, col);
}

std::string_view SourceBuffer::line_text(int line) const {
  size_t begin = 0;
  for (int l = 1; l < line; ++l) {
    size_t nl = text_.find('\n', begin);
    if (nl == std::string_view::npos) return {};
    begin = nl + 1;
  }
  size_t end = text_.find('\n', begin);
  std::string_view s = text_.substr(begin, end == std::string_view::npos ? std::string_view::npos : end - begin);
  if (!s.empty() && s.back() == '\r') s.remove_suffix(1);
  return s;
}

std::string describe(const Token& t) {
  switch (t.kind) {
    case TokenKind::End: return "end of input";
    case TokenKind::ValueName: return fmt::format("%{}", t.text);
    case TokenKind::SymbolName: return fmt::format("@{}", t.text);
    case TokenKind::String: return fmt::format("\"{}\"", t.text);
    default: return fmt::format("'{}'", t.text);
  }
}

const Token& Lexer::peek() {
  if (!has_peeked_) {
    peeked_ = lex();
    has_peeked_ = true;
  }
  return peeked_;
}

Token Lexer::take() {
  peek();
  has_peeked_ = false;
  return peeked_;
}

void Lexer::advance(size_t n) {
  for (size_t i = 0; i < n && pos_ < src_.text().size(); ++i, ++pos_) {
    if (src_.text()[pos_] == '\n') {
      ++line_;
      col_ = 1;
    } else {
      ++col_;
    }
  }
}

void Lexer::skip_space_and_comments() {
  while (pos_ < src_.text().size()) {
    char c = at(pos_);
    if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
      advance(1);
    } else if (c == '/' && at(pos_ + 1) == '/') {
      while (pos_ < src_.text().size() && at(pos_) != '\n') advance(1);
    } else {
      return;
    }
  }
}

Token Lexer::make(TokenKind kind, size_t begin, size_t end, int line, int col) {
  Token t;
  t.kind = kind;
  t.text = src_.text().substr(begin, end - begin);
  t.line = line;
  t.col = col;
  advance(pos_ < end ? end - pos_ : 0);
  end_line_ = line_;
  end_col_ = col_;
  return t;
}

Token Lexer::lex() {
  skip_space_and_comments();
  if (pos_ >= src_.text().size()) {
    Token t;
    t.line = end_line_;
    t.col = end_col_;
    return t;
  }
  int line = line_, col = col_;
  char c = at(pos_);
  switch (c) {
    case '(': return make(TokenKind::LParen, pos_, pos_ + 1, line, col);
    case ')': return make(TokenKind::RParen, pos_, pos_ + 1, line, col);
    case '{': return make(TokenKind::LBrace, pos_, pos_ + 1, line, col);
    case '}': return make(TokenKind::RBrace, pos_, pos_ + 1, line, col);
    case '[': return make(TokenKind::LBracket, pos_, pos_ + 1, line, col);
    case ']': return make(TokenKind::RBracket, pos_, pos_ + 1, line, col);
    case ',': return make(TokenKind::Comma, pos_, pos_ + 1, line, col);
    case ':': return make(TokenKind::Colon, pos_, pos_ + 1, line, col);
    case '=': return make(TokenKind::Equal, pos_, pos_ + 1, line, col);
    case '%': return lex_name(TokenKind::ValueName, c);
    case '@': return lex_name(TokenKind::SymbolName, c);
    case '"': return lex_string();
    default: break;
  }
  if (c == '-' && at(pos_ + 1) == '>') return make(TokenKind::Arrow, pos_, pos_ + 2, line, col);
  if (is_digit(c) || c == '-') return lex_number();
  if (is_word_start(c)) {
    size_t end = pos_;
    while (is_word_char(at(end))) ++end;
    std::string_view word = src_.text().substr(pos_, end - pos_);
    if (word == "inf" || word == "nan") return lex_number();
    return make(TokenKind::Word, pos_, end, line, col);
  }
  src_.fail(line, col, "unexpected " + show_char(c));
}

Token Lexer::lex_name(TokenKind kind, char sigil) {
  int line = line_, col = col_;
  size_t begin = pos_ + 1, end = begin;
  while (is_name_char(at(end))) ++end;
  if (end == begin)
    src_.fail(line, col, fmt::format("expected a name after '{}' (letters, digits, '_' and '.')", sigil));
  Token t = make(kind, begin, end, line, col);
  return t;
}

Token Lexer::lex_string() {
  int line = line_, col = col_;
  size_t begin = pos_ + 1, end = begin;
  for (;; ++end) {
    if (end >= src_.text().size() || at(end) == '\n') src_.fail(line, col, "unterminated string");
    char ch = at(end);
    if (ch == '"') break;
    if (ch == '\\' || static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f)
      src_.fail(line, col + static_cast<int>(end - pos_), "strings cannot hold escapes or control characters");
  }
  Token t = make(TokenKind::String, begin, end, line, col);
  advance(1);  // the closing quote
  end_line_ = line_;
  end_col_ = col_;
  return t;
}

// -?digits(.digits)?([eE][+-]?digits)?, or -?inf, -?nan.
Token Lexer::lex_number() {
  int line = line_, col = col_;
  size_t begin = pos_, end = pos_;
  bool negative = at(end) == '-';
  if (negative) ++end;
  auto bad = [&](size_t stop) {
    while (is_name_char(at(stop)) || ((at(stop) == '+' || at(stop) == '-') && (at(stop - 1) | 0x20) == 'e')) ++stop;
    src_.fail(line, col, fmt::format("bad number '{}'", src_.text().substr(begin, stop - begin)));
  };
  if (is_word_start(at(end))) {  // inf or nan, possibly negative
    size_t stop = end;
    while (is_word_char(at(stop))) ++stop;
    std::string_view word = src_.text().substr(end, stop - end);
    if (word != "inf" && word != "nan") bad(stop);
    if (at(stop) == '.') bad(stop);
    Token t = make(TokenKind::Float, begin, stop, line, col);
    double v = word == "inf" ? std::numeric_limits<double>::infinity() : std::numeric_limits<double>::quiet_NaN();
    t.float_value = negative ? -v : v;
    return t;
  }
  if (!is_digit(at(end))) src_.fail(line, col, "unexpected character '-'");
  bool is_float = false;
  while (is_digit(at(end))) ++end;
  if (at(end) == '.') {
    is_float = true;
    ++end;
    if (!is_digit(at(end))) bad(end);
    while (is_digit(at(end))) ++end;
  }
  if (at(end) == 'e' || at(end) == 'E') {
    is_float = true;
    ++end;
    if (at(end) == '+' || at(end) == '-') ++end;
    if (!is_digit(at(end))) bad(end);
    while (is_digit(at(end))) ++end;
  }
  if (is_name_char(at(end))) bad(end);
  const char* first = src_.text().data() + begin;
  const char* last = src_.text().data() + end;
  std::string_view written = src_.text().substr(begin, end - begin);
  Token t;
  if (is_float) {
    auto [ptr, ec] = std::from_chars(first, last, t.float_value);
    if (ec != std::errc() || ptr != last)
      src_.fail(line, col, fmt::format("number {} is out of the range of a double", written));
  } else {
    auto [ptr, ec] = std::from_chars(first, last, t.int_value);
    if (ec != std::errc() || ptr != last)
      src_.fail(line, col, fmt::format("integer {} is too large (64-bit limit)", written));
  }
  Token made = make(is_float ? TokenKind::Float : TokenKind::Integer, begin, end, line, col);
  made.int_value = t.int_value;
  made.float_value = t.float_value;
  return made;
}

}  // namespace kiln::ir
