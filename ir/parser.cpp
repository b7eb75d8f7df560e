// The parser of Kiln's textual IR: one `func` with typed inputs, op lines, optional
// `kernel @name kind { ... }` blocks and a `return`. It builds the graph through
// Graph::add, so every op is checked by the op table as it is read.
#include "ir/parser.h"
#include "ir/tile_config.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <optional>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "ir/lexer.h"

namespace kiln::ir {

namespace {

constexpr int64_t kMaxDim = int64_t{1} << 40;
constexpr int64_t kMaxElements = int64_t{1} << 48;
constexpr std::array<std::string_view, 5> kKernelKinds = {"pointwise", "row_reduce", "col_reduce", "gemm",
                                                          "attention"};

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

// The op name closest to `name` when it is a likely typo, else empty.
std::string_view closest_op_name(std::string_view name) {
  if (name.size() > 32) return {};
  std::string_view best;
  size_t best_distance = name.size() >= 6 ? 3 : 2;  // allow 2 edits in long names, 1 in short ones
  for (OpKind k : all_ops()) {
    size_t d = edit_distance(name, op_name(k));
    if (d < best_distance) {
      best = op_name(k);
      best_distance = d;
    }
  }
  return best;
}

struct Definition {
  Value* value;
  int line, col;
};

class Parser {
public:
  Parser(std::string_view text, std::string filename) : src_(text, std::move(filename)), lex_(src_) {}

  Graph parse_func();

private:
  [[noreturn]] void fail(const Token& at, const std::string& message) { src_.fail(at.line, at.col, message); }
  Token expect(TokenKind kind, std::string_view what);
  bool accept(TokenKind kind);
  bool at_word(std::string_view word) { return lex_.peek().kind == TokenKind::Word && lex_.peek().text == word; }

  TensorType parse_type();
  std::vector<TensorType> parse_result_types();
  void parse_inputs();
  void parse_op_line();
  Attrs parse_attrs(std::string_view op);
  AttrValue parse_attr_value();
  void parse_kernel_open();
  void parse_return(const Token& keyword);
  Value* lookup(const Token& name);
  void define(const Token& name, Value* v);

  SourceBuffer src_;
  Lexer lex_;
  Graph graph_;
  std::unordered_map<std::string, Definition> values_;
  std::unordered_set<std::string> kernel_names_;
  std::vector<TensorType> result_types_;
  int current_group_ = -1;
  Token current_group_token_;
  bool group_has_ops_ = false;
};

Token Parser::expect(TokenKind kind, std::string_view what) {
  if (lex_.peek().kind != kind) fail(lex_.peek(), fmt::format("expected {}, got {}", what, describe(lex_.peek())));
  return lex_.take();
}

bool Parser::accept(TokenKind kind) {
  if (lex_.peek().kind != kind) return false;
  lex_.take();
  return true;
}

// dtype[d0,d1,...]: every dimension positive, at most 2^40, at most 2^48 elements.
TensorType Parser::parse_type() {
  Token name = lex_.peek();
  if (name.kind != TokenKind::Word) fail(name, fmt::format("expected a type such as f32[4,8], got {}", describe(name)));
  lex_.take();
  auto dtype = parse_dtype(name.text);
  if (!dtype) fail(name, fmt::format("unknown type '{}' (types: f32, f16, bf16, i32, i1)", name.text));
  TensorType type{*dtype, {}};
  expect(TokenKind::LBracket, "'[' after the element type (f32[] is a scalar)");
  if (accept(TokenKind::RBracket)) return type;
  int64_t elements = 1;
  for (;;) {
    Token dim = lex_.peek();
    if (dim.kind != TokenKind::Integer) fail(dim, fmt::format("expected a dimension size, got {}", describe(dim)));
    lex_.take();
    if (dim.int_value <= 0) fail(dim, fmt::format("dimensions must be positive, got {}", dim.int_value));
    if (dim.int_value > kMaxDim) fail(dim, fmt::format("dimension {} is larger than the limit 2^40", dim.int_value));
    if (elements > kMaxElements / dim.int_value)
      fail(dim, "the tensor has more than 2^48 elements, the limit");
    elements *= dim.int_value;
    type.shape.push_back(dim.int_value);
    if (accept(TokenKind::RBracket)) return type;
    expect(TokenKind::Comma, "',' or ']' in the shape");
  }
}

// "(T, T)" or a single "T".
std::vector<TensorType> Parser::parse_result_types() {
  std::vector<TensorType> types;
  if (!accept(TokenKind::LParen)) {
    types.push_back(parse_type());
    return types;
  }
  if (accept(TokenKind::RParen)) return types;
  for (;;) {
    types.push_back(parse_type());
    if (accept(TokenKind::RParen)) return types;
    expect(TokenKind::Comma, "',' or ')' in the result types");
  }
}

void Parser::parse_inputs() {
  expect(TokenKind::LParen, "'(' before the inputs");
  if (accept(TokenKind::RParen)) return;
  for (;;) {
    Token name = expect(TokenKind::ValueName, "an input name such as %x");
    expect(TokenKind::Colon, "':' after the input name");
    TensorType type = parse_type();
    auto it = values_.find(std::string(name.text));
    if (it != values_.end())
      fail(name, fmt::format("input %{} is defined twice (first at line {})", name.text, it->second.line));
    define(name, graph_.add_input(std::string(name.text), type));
    if (accept(TokenKind::RParen)) return;
    expect(TokenKind::Comma, "',' or ')' after an input");
  }
}

Value* Parser::lookup(const Token& name) {
  auto it = values_.find(std::string(name.text));
  if (it == values_.end()) fail(name, fmt::format("undefined value %{}", name.text));
  return it->second.value;
}

void Parser::define(const Token& name, Value* v) {
  values_.emplace(std::string(name.text), Definition{v, name.line, name.col});
}

AttrValue Parser::parse_attr_value() {
  Token t = lex_.take();
  switch (t.kind) {
    case TokenKind::Integer: return t.int_value;
    case TokenKind::Float: return t.float_value;
    case TokenKind::String: return std::string(t.text);
    case TokenKind::Word:
      if (t.text == "true") return true;
      if (t.text == "false") return false;
      break;
    case TokenKind::LBracket: {
      // Lists hold integers only: no nesting, so no recursion.
      std::vector<int64_t> xs;
      if (accept(TokenKind::RBracket)) return xs;
      for (;;) {
        Token x = lex_.take();
        if (x.kind != TokenKind::Integer) fail(x, fmt::format("attribute lists hold integers, got {}", describe(x)));
        xs.push_back(x.int_value);
        if (accept(TokenKind::RBracket)) return xs;
        expect(TokenKind::Comma, "',' or ']' in the list");
      }
    }
    default: break;
  }
  fail(t, fmt::format("expected an attribute value (true, false, a number, a \"string\" or [integers]), got {}",
                      describe(t)));
}

// {name = value, ...}
Attrs Parser::parse_attrs(std::string_view op) {
  Attrs attrs;
  expect(TokenKind::LBrace, "'{'");
  if (accept(TokenKind::RBrace)) return attrs;
  for (;;) {
    Token name = expect(TokenKind::Word, "an attribute name");
    if (attrs.has(std::string(name.text))) fail(name, fmt::format("attribute '{}' is given twice", name.text));
    if (op == "const" && name.text == "value")
      fail(name, "the value of const is written before the type (const 0.5 : f32[]), not as an attribute");
    expect(TokenKind::Equal, "'=' after the attribute name");
    attrs.set(std::string(name.text), parse_attr_value());
    if (accept(TokenKind::RBrace)) return attrs;
    expect(TokenKind::Comma, "',' or '}' after an attribute");
  }
}

// %name = op [value] [%a, %b, ...] [{attrs}] : type
void Parser::parse_op_line() {
  Token name = lex_.take();
  auto it = values_.find(std::string(name.text));
  if (it != values_.end())
    fail(name, fmt::format("%{} is defined twice (first at line {}, column {})", name.text, it->second.line,
                           it->second.col));
  expect(TokenKind::Equal, "'=' after the value name");
  Token op = lex_.peek();
  if (op.kind != TokenKind::Word) fail(op, fmt::format("expected an op name, got {}", describe(op)));
  lex_.take();

  Attrs attrs;
  if (op.text == "const") {
    Token v = lex_.peek();
    if (v.kind != TokenKind::Integer && v.kind != TokenKind::Float)
      fail(v, fmt::format("const needs its value before the type (const 0.5 : f32[]), got {}", describe(v)));
    lex_.take();
    attrs.set("value", v.kind == TokenKind::Integer ? static_cast<double>(v.int_value) : v.float_value);
  }
  std::vector<Value*> operands;
  if (lex_.peek().kind == TokenKind::ValueName) {
    for (;;) {
      operands.push_back(lookup(lex_.take()));
      if (!accept(TokenKind::Comma)) break;
      if (lex_.peek().kind != TokenKind::ValueName)
        fail(lex_.peek(), fmt::format("expected an operand after ',', got {}", describe(lex_.peek())));
    }
  }
  if (lex_.peek().kind == TokenKind::LBrace) {
    Attrs written = parse_attrs(op.text);
    for (const auto& [key, value] : written.items()) attrs.set(key, value);
  }
  expect(TokenKind::Colon, "':' and the result type");
  TensorType type = parse_type();

  auto kind = find_op(op.text, static_cast<int>(operands.size()));
  if (!kind) {
    std::string_view guess = closest_op_name(op.text);
    fail(op, guess.empty() ? fmt::format("unknown op '{}'", op.text)
                           : fmt::format("unknown op '{}'; did you mean '{}'?", op.text, guess));
  }
  Value* v = nullptr;
  try {
    v = graph_.add(*kind, std::move(operands), attrs, type);
  } catch (const Error& e) {
    fail(op, e.what());
  }
  v->name = std::string(name.text);
  v->producer->loc = fmt::format("{}:{}:{}", src_.filename(), op.line, op.col);
  v->producer->group = current_group_;
  group_has_ops_ = true;
  define(name, v);
}

// kernel @name kind {
void Parser::parse_kernel_open() {
  Token keyword = lex_.take();
  if (current_group_ >= 0) fail(keyword, "kernel blocks cannot be nested");
  Token name = expect(TokenKind::SymbolName, "the kernel's name such as @k0");
  if (!kernel_names_.insert(std::string(name.text)).second)
    fail(name, fmt::format("kernel @{} is defined twice", name.text));
  Token kind = expect(TokenKind::Word, "the kernel's kind (pointwise, row_reduce, col_reduce, gemm, attention)");
  if (std::find(kKernelKinds.begin(), kKernelKinds.end(), kind.text) == kKernelKinds.end())
    fail(kind, fmt::format("unknown kernel kind '{}' (kinds: pointwise, row_reduce, col_reduce, gemm, attention)",
                           kind.text));
  Attrs tile;
  if (at_word("tile")) {  // kernel @k0 pointwise tile {threads = 256, ...} {
    Token word = lex_.take();
    tile = parse_attrs("tile");
    try {
      TileConfig::from_attrs(tile);
    } catch (const Error& e) {
      fail(word, e.what());
    }
  }
  expect(TokenKind::LBrace, "'{' to open the kernel block");
  current_group_ = graph_.add_group(Group{std::string(name.text), std::string(kind.text), tile});
  current_group_token_ = keyword;
  group_has_ops_ = false;
}

// return %a, %b  (types and count must match the signature)
void Parser::parse_return(const Token& keyword) {
  if (current_group_ >= 0) fail(keyword, "return must come after the kernel block is closed");
  std::vector<Token> names;
  do {
    names.push_back(expect(TokenKind::ValueName, "a value to return such as %y"));
  } while (accept(TokenKind::Comma));
  if (names.size() != result_types_.size())
    fail(keyword, fmt::format("return gives {} value{}, but the signature declares {}", names.size(),
                              names.size() == 1 ? "" : "s", result_types_.size()));
  for (size_t i = 0; i < names.size(); ++i) {
    Value* v = lookup(names[i]);
    if (v->type != result_types_[i])
      fail(names[i], fmt::format("return value {} (%{}) has type {}, but the signature declares {}", i, names[i].text,
                                 v->type.str(), result_types_[i].str()));
    graph_.add_output(v);
  }
}

Graph Parser::parse_func() {
  Token func = lex_.peek();
  if (!at_word("func")) fail(func, fmt::format("expected 'func', got {}", describe(func)));
  lex_.take();
  Token name = expect(TokenKind::SymbolName, "the function's name such as @main");
  graph_.set_name(std::string(name.text));
  parse_inputs();
  expect(TokenKind::Arrow, "'->' and the result types");
  result_types_ = parse_result_types();
  expect(TokenKind::LBrace, "'{' to open the function body");

  for (;;) {
    const Token& t = lex_.peek();
    if (t.kind == TokenKind::ValueName) {
      parse_op_line();
    } else if (at_word("kernel")) {
      parse_kernel_open();
    } else if (at_word("return")) {
      parse_return(lex_.take());
      expect(TokenKind::RBrace, "'}' after return (return ends the function)");
      break;
    } else if (t.kind == TokenKind::RBrace && current_group_ >= 0) {
      if (!group_has_ops_)
        fail(current_group_token_, fmt::format("kernel @{} has no ops", graph_.groups().back().name));
      lex_.take();
      current_group_ = -1;
    } else if (t.kind == TokenKind::RBrace) {
      fail(t, "missing return before the end of the function");
    } else if (t.kind == TokenKind::End) {
      fail(t, "unexpected end of input: the function is not closed with '}'");
    } else {
      fail(t, fmt::format("expected an op line (%name = op ...), 'kernel', 'return' or '}}', got {}", describe(t)));
    }
  }
  if (lex_.peek().kind != TokenKind::End)
    fail(lex_.peek(), fmt::format("unexpected {} after the end of the function", describe(lex_.peek())));
  try {
    verify(graph_);
  } catch (const Error& e) {
    fail(func, e.what());
  }
  return std::move(graph_);
}

}  // namespace

Graph parse(std::string_view text, const std::string& filename) {
  Parser parser(text, filename);
  return parser.parse_func();
}

Graph parse_file(const std::string& path) {
  if (path == "-") {
    std::string text((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
    return parse(text, "<stdin>");
  }
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw Error(fmt::format("cannot read '{}': it is a directory", path));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(fmt::format("cannot open '{}': no such file or it is not readable", path));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw Error(fmt::format("cannot read '{}'", path));
  return parse(text.str(), path);
}

}  // namespace kiln::ir
