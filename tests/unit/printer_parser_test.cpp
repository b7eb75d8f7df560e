// The textual IR: printing graphs, parsing text back, print -> parse -> print
// identity, and the parser's error messages (file:line:col, source line, caret).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>

#include "ir/graph.h"
#include "ir/parser.h"
#include "ir/printer.h"

namespace kiln::ir {
namespace {

TensorType f32(Shape s) { return {DType::f32, std::move(s)}; }

Attrs attrs(std::initializer_list<std::pair<std::string, AttrValue>> items) {
  Attrs a;
  for (const auto& [k, v] : items) a.set(k, v);
  return a;
}

// print -> parse -> print must give the same text.
void expect_round_trip(const Graph& g) {
  std::string first = print(g);
  Graph parsed = parse(first, "printed.kiln");
  EXPECT_EQ(print(parsed), first);
}

// The full what() of the ParseError that parsing `text` throws.
std::string parse_error(std::string_view text) {
  try {
    parse(text, "t.kiln");
  } catch (const ParseError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no ParseError for:\n" << text;
  return "";
}

// A graph that uses every op of the op table once or more.
Graph every_op_graph() {
  Graph g("every_op");
  Value* x = g.add_input("x", f32({4, 8}));
  Value* y = g.add_input("y", f32({4, 8}));
  Value* w = g.add_input("w", f32({8}));
  Value* b = g.add_input("b", f32({8}));
  Value* q = g.add_input("q", f32({2, 4, 8}));
  std::vector<Value*> outs;
  for (OpKind k : {OpKind::Neg, OpKind::Abs, OpKind::Exp, OpKind::Exp2, OpKind::Log, OpKind::Sqrt, OpKind::Rsqrt,
                   OpKind::Tanh, OpKind::Sigmoid, OpKind::Relu, OpKind::Gelu, OpKind::Silu})
    outs.push_back(g.add(k, {x}));
  outs.push_back(g.add(OpKind::Gelu, {x}, attrs({{"approximate", std::string("tanh")}})));
  outs.push_back(g.add(OpKind::Cast, {x}, {}, TensorType{DType::f16, {4, 8}}));
  for (OpKind k : {OpKind::Add, OpKind::Sub, OpKind::Mul, OpKind::Div, OpKind::Max, OpKind::Min, OpKind::Pow})
    outs.push_back(g.add(k, {x, y}));
  Value* cond = nullptr;
  for (OpKind k : {OpKind::Lt, OpKind::Le, OpKind::Gt, OpKind::Ge, OpKind::Eq, OpKind::Ne})
    outs.push_back(cond = g.add(k, {x, w}));
  outs.push_back(g.add(OpKind::Select, {cond, x, y}));
  outs.push_back(g.constant(0.5, DType::f32));
  outs.push_back(g.add(OpKind::Iota, {}, attrs({{"axis", int64_t{1}}}), TensorType{DType::i32, {4, 8}}));
  for (OpKind k : {OpKind::ReduceSum, OpKind::ReduceMax, OpKind::ReduceMin, OpKind::ReduceMean,
                   OpKind::ReduceLogSumExp, OpKind::ReduceVar})
    outs.push_back(g.add(k, {x}, attrs({{"axis", std::vector<int64_t>{1}}, {"keepdim", true}})));
  outs.push_back(g.add(OpKind::Broadcast, {w}, {}, f32({4, 8})));
  outs.push_back(g.add(OpKind::Reshape, {x}, {}, f32({2, 16})));
  outs.push_back(g.add(OpKind::Transpose, {x}, attrs({{"perm", std::vector<int64_t>{1, 0}}})));
  outs.push_back(g.add(OpKind::Matmul, {x, y}, attrs({{"transpose_b", true}})));
  outs.push_back(g.add(OpKind::Softmax, {x}));
  outs.push_back(g.add(OpKind::LogSoftmax, {x}, attrs({{"axis", int64_t{0}}})));
  outs.push_back(g.add(OpKind::LayerNorm, {x, w, b}));
  outs.push_back(g.add(OpKind::RmsNorm, {x, w}, attrs({{"eps", 1e-5}})));
  outs.push_back(g.add(OpKind::Attention, {q, q, q}, attrs({{"scale", 0.125}, {"causal", true}})));
  Value* wq = g.add_input("wq", TensorType{DType::i4, {4, 8}});
  Value* sq = g.add_input("sq", TensorType{DType::f16, {4, 2}});
  outs.push_back(g.add(OpKind::Dequant, {wq, sq, sq}, attrs({{"group", int64_t{4}}})));
  g.set_outputs(outs);
  return g;
}

// ---- printing ----

TEST(Printer, PrintsTheDesignExampleExactly) {
  Graph g("add_rmsnorm");
  Value* x = g.add_input("x", {DType::f16, {8192, 4096}});
  Value* r = g.add_input("r", {DType::f16, {8192, 4096}});
  Value* w = g.add_input("w", {DType::f16, {4096}});
  Value* h = g.add(OpKind::Add, {x, r});
  h->name = "h";
  Value* y = g.add(OpKind::RmsNorm, {h, w});
  y->name = "y";
  g.set_outputs({y, h});
  EXPECT_EQ(print(g),
            "func @add_rmsnorm(%x: f16[8192,4096], %r: f16[8192,4096], %w: f16[4096]) -> (f16[8192,4096], "
            "f16[8192,4096]) {\n"
            "  %h = add %x, %r : f16[8192,4096]\n"
            "  %y = rms_norm %h, %w {axis = -1, eps = 1e-06} : f16[8192,4096]\n"
            "  return %y, %h\n"
            "}\n");
}

TEST(Printer, UnnamedValuesCountFromZeroSkippingTakenNames) {
  Graph g;
  Value* x = g.add_input("x", f32({4}));
  Value* a = g.add(OpKind::Neg, {x});
  Value* b = g.add(OpKind::Exp, {a});
  b->name = "1";
  Value* c = g.add(OpKind::Abs, {b});
  Value* d = g.add(OpKind::Relu, {c});
  g.set_outputs({d});
  auto names = value_names(g);
  EXPECT_EQ(names.at(x->id), "x");
  EXPECT_EQ(names.at(a->id), "0");
  EXPECT_EQ(names.at(b->id), "1");
  EXPECT_EQ(names.at(c->id), "2");
  EXPECT_EQ(names.at(d->id), "3");
}

TEST(Printer, ConstWritesItsValueBeforeTheType) {
  Graph g;
  Value* c = g.constant(0.5, DType::f16);
  c->name = "c";
  EXPECT_EQ(print_node(*c->producer, value_names(g)), "%c = const 0.5 : f16[]");
}

TEST(Printer, OpsWithoutAttributesPrintNoBraces) {
  Graph g;
  Value* x = g.add_input("x", f32({4}));
  Value* y = g.add(OpKind::Exp, {x});
  EXPECT_EQ(print_node(*y->producer, value_names(g)), "%0 = exp %x : f32[4]");
}

TEST(Printer, DefaultAttributesPrintInSchemaOrder) {
  Graph g;
  Value* a = g.add_input("a", f32({4, 8}));
  Value* b = g.add_input("b", f32({8, 4}));
  Value* m = g.add(OpKind::Matmul, {a, b});
  EXPECT_EQ(print_node(*m->producer, value_names(g)),
            "%0 = matmul %a, %b {transpose_a = false, transpose_b = false} : f32[4,4]");
}

TEST(Printer, KernelGroupsPrintAsIndentedBlocks) {
  Graph g("k");
  Value* x = g.add_input("x", f32({64, 64}));
  Value* s = g.add_input("s", f32({64, 64}));
  Value* m = g.add(OpKind::Mul, {x, s});
  Value* a = g.add(OpKind::Add, {m, x});
  Value* r = g.add(OpKind::Relu, {a});
  int k0 = g.add_group({"k0", "pointwise"});
  m->producer->group = k0;
  a->producer->group = k0;
  g.set_outputs({r});
  EXPECT_EQ(print(g),
            "func @k(%x: f32[64,64], %s: f32[64,64]) -> (f32[64,64]) {\n"
            "  kernel @k0 pointwise {\n"
            "    %0 = mul %x, %s : f32[64,64]\n"
            "    %1 = add %0, %x : f32[64,64]\n"
            "  }\n"
            "  %2 = relu %1 : f32[64,64]\n"
            "  return %2\n"
            "}\n");
}

// ---- round trips ----

TEST(RoundTrip, GraphWithEveryOp) {
  Graph g = every_op_graph();
  std::set<OpKind> used;
  for (const Node* n : g.nodes()) used.insert(n->op);
  ASSERT_EQ(used.size(), all_ops().size()) << "the test graph must use every op";
  expect_round_trip(g);
}

TEST(RoundTrip, ParsedGraphHasTheSameOpsTypesAndAttributes) {
  Graph g = every_op_graph();
  Graph parsed = parse(print(g));
  ASSERT_EQ(parsed.num_nodes(), g.num_nodes());
  for (size_t i = 0; i < g.num_nodes(); ++i) {
    const Node* a = g.nodes()[i];
    const Node* b = parsed.nodes()[i];
    EXPECT_EQ(a->op, b->op);
    EXPECT_EQ(a->result->type, b->result->type);
    EXPECT_EQ(a->attrs, b->attrs);
    ASSERT_EQ(a->operands.size(), b->operands.size());
  }
  ASSERT_EQ(parsed.outputs().size(), g.outputs().size());
}

TEST(RoundTrip, ScalarTypes) {
  Graph g("scalars");
  Value* x = g.add_input("x", f32({}));
  Value* c = g.constant(-2.5, DType::f32);
  g.set_outputs({g.add(OpKind::Mul, {x, c})});
  std::string text = print(g);
  EXPECT_NE(text.find("%x: f32[]"), std::string::npos);
  EXPECT_NE(text.find("const -2.5 : f32[]"), std::string::npos);
  expect_round_trip(g);
}

TEST(RoundTrip, SeveralOutputs) {
  Graph g = parse(R"(func @f(%x: f32[4]) -> (f32[4], f32[4], f32[]) {
  %a = neg %x : f32[4]
  %s = sum %a {axis = [0]} : f32[]
  return %a, %x, %s
})");
  ASSERT_EQ(g.outputs().size(), 3u);
  EXPECT_EQ(g.outputs()[1], g.inputs()[0]);
  EXPECT_EQ(g.outputs()[2]->type, f32({}));
  expect_round_trip(g);
}

TEST(RoundTrip, SpecialFloatConstants) {
  Graph g = parse(R"(func @f() -> (f32[], f32[], f32[], f32[], f32[]) {
  %a = const inf : f32[]
  %b = const -inf : f32[]
  %c = const nan : f32[]
  %d = const -3 : f32[]
  %e = const 1e-06 : f32[]
  return %a, %b, %c, %d, %e
})");
  auto value = [&](int i) { return g.outputs()[i]->producer->attrs.get_float("value"); };
  EXPECT_EQ(value(0), INFINITY);
  EXPECT_EQ(value(1), -INFINITY);
  EXPECT_TRUE(std::isnan(value(2)));
  EXPECT_EQ(value(3), -3.0);
  EXPECT_EQ(value(4), 1e-6);
  expect_round_trip(g);
  EXPECT_NE(print(g).find("%d = const -3.0 : f32[]"), std::string::npos);
}

TEST(RoundTrip, KernelBlocksRecreateGroups) {
  Graph g = parse(R"(func @f(%x: f32[64,64], %s: f32[64,64], %b: f32[64,64]) -> (f32[64], f32[64,64]) {
  kernel @k0 pointwise {
    %0 = mul %x, %s : f32[64,64]
    %1 = add %0, %b : f32[64,64]
  }
  %2 = exp %1 : f32[64,64]
  kernel @fused.1 row_reduce {
    %3 = sum %2 {axis = [1], keepdim = false} : f32[64]
  }
  return %3, %0
})");
  ASSERT_EQ(g.groups().size(), 2u);
  EXPECT_EQ(g.groups()[0].name, "k0");
  EXPECT_EQ(g.groups()[0].kind, "pointwise");
  EXPECT_EQ(g.groups()[1].name, "fused.1");
  EXPECT_EQ(g.groups()[1].kind, "row_reduce");
  std::vector<int> groups;
  for (const Node* n : g.nodes()) groups.push_back(n->group);
  EXPECT_EQ(groups, (std::vector<int>{0, 0, -1, 1}));
  expect_round_trip(g);
}

TEST(RoundTrip, KeepsNamesAndFunctionName) {
  Graph g = parse(R"(func @my.graph_2(%in.0: f32[4]) -> (f32[4]) {
  %7 = neg %in.0 : f32[4]
  %out = abs %7 : f32[4]
  return %out
})");
  EXPECT_EQ(g.name(), "my.graph_2");
  EXPECT_EQ(g.inputs()[0]->name, "in.0");
  EXPECT_EQ(g.nodes()[0]->result->name, "7");
  expect_round_trip(g);
}

// ---- spellings the parser accepts ----

TEST(Parser, AttributeSpellingsAreCanonicalised) {
  Graph g = parse(R"(func @f(%x: f32[4,8], %w: f32[8]) -> (f32[4], f32[4,8], f32[4,8]) {
  %s = sum %x {axis = 1} : f32[4]
  %n = rms_norm %x, %w {eps = 1} : f32[4,8]
  %g = gelu %x {} : f32[4,8]
  return %s, %n, %g
})");
  std::string text = print(g);
  EXPECT_NE(text.find("%s = sum %x {axis = [1], keepdim = false} : f32[4]"), std::string::npos) << text;
  EXPECT_NE(text.find("%n = rms_norm %x, %w {axis = -1, eps = 1.0} : f32[4,8]"), std::string::npos) << text;
  EXPECT_NE(text.find("%g = gelu %x {approximate = \"none\"} : f32[4,8]"), std::string::npos) << text;
}

TEST(Parser, NegativeIntegersInAttributeLists) {
  Graph g = parse(R"(func @f(%x: f32[2,3,4]) -> (f32[2]) {
  %s = sum %x {axis = [-1, -2]} : f32[2]
  return %s
})");
  EXPECT_EQ(g.nodes()[0]->attrs.get_ints("axis"), (std::vector<int64_t>{-1, -2}));
}

TEST(Parser, CommentsAndWhitespaceAreIgnored) {
  Graph g = parse("// leading comment\r\n"
                  "func @f(%x: f32[4]) -> (f32[4]) { // after the brace\r\n"
                  "\t%y = neg %x : f32[4]   // trailing\n"
                  "\n"
                  "  return   %y\n"
                  "}  // the end\n");
  EXPECT_EQ(print(g), "func @f(%x: f32[4]) -> (f32[4]) {\n  %y = neg %x : f32[4]\n  return %y\n}\n");
}

TEST(Parser, SingleResultTypeWithoutParentheses) {
  Graph g = parse("func @f(%x: f32[4]) -> f32[4] {\n  return %x\n}\n");
  EXPECT_EQ(print(g), "func @f(%x: f32[4]) -> (f32[4]) {\n  return %x\n}\n");
}

TEST(Parser, ValuesDefinedInAKernelAreVisibleAfterIt) {
  Graph g = parse(R"(func @f(%x: f32[4]) -> (f32[4]) {
  kernel @k0 pointwise {
    %a = neg %x : f32[4]
  }
  %b = abs %a : f32[4]
  return %b
})");
  EXPECT_EQ(g.nodes()[1]->operands[0], g.nodes()[0]->result);
  EXPECT_EQ(g.nodes()[1]->group, -1);
}

TEST(Parser, RecordsWhereEachOpWasWritten) {
  Graph g = parse("func @f(%x: f32[4]) -> (f32[4]) {\n  %y = neg %x : f32[4]\n  return %y\n}\n", "a.kiln");
  EXPECT_EQ(g.nodes()[0]->loc, "a.kiln:2:8");
}

TEST(Parser, ParseFileReadsAFile) {
  auto path = std::filesystem::temp_directory_path() / "kiln_printer_parser_test.kiln";
  {
    std::ofstream out(path);
    out << "func @from_file(%x: f32[4]) -> (f32[4]) {\n  return %x\n}\n";
  }
  Graph g = parse_file(path.string());
  std::filesystem::remove(path);
  EXPECT_EQ(g.name(), "from_file");
}

TEST(Parser, ParseFileDashReadsStandardInput) {
  std::istringstream in("func @from_stdin(%x: f32[4]) -> (f32[4]) {\n  return %x\n}\n");
  std::streambuf* old = std::cin.rdbuf(in.rdbuf());
  Graph g = parse_file("-");
  std::cin.rdbuf(old);
  EXPECT_EQ(g.name(), "from_stdin");
}

// ---- errors ----

TEST(ParseErrors, MissingFileIsAClearError) {
  try {
    parse_file("/nonexistent/dir/graph.kiln");
    FAIL() << "no error";
  } catch (const ParseError&) {
    FAIL() << "a missing file is not a parse error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot open '/nonexistent/dir/graph.kiln'"), std::string::npos) << e.what();
  }
}

TEST(ParseErrors, CarriesFileLineAndColumn) {
  try {
    parse("func @f(%x: f32[4]) -> (f32[4]) {\n  %y = neg %q : f32[4]\n  return %y\n}\n", "dir/g.kiln");
    FAIL() << "no error";
  } catch (const ParseError& e) {
    EXPECT_EQ(e.file, "dir/g.kiln");
    EXPECT_EQ(e.line, 2);
    EXPECT_EQ(e.col, 12);
  }
}

TEST(ParseErrors, UnknownOpSuggestsTheClosestName) {
  EXPECT_EQ(parse_error("func @f(%x: f32[4]) -> (f32[4]) {\n  %y = sofmax %x : f32[4]\n  return %y\n}\n"),
            "t.kiln:2:8: error: unknown op 'sofmax'; did you mean 'softmax'?\n"
            "  %y = sofmax %x : f32[4]\n"
            "       ^");
}

TEST(ParseErrors, UnknownOpWithoutACloseName) {
  EXPECT_EQ(parse_error("func @f(%x: f32[4]) -> (f32[4]) {\n  %y = foo %x : f32[4]\n  return %y\n}\n"),
            "t.kiln:2:8: error: unknown op 'foo'\n"
            "  %y = foo %x : f32[4]\n"
            "       ^");
}

TEST(ParseErrors, UndefinedValue) {
  EXPECT_EQ(parse_error("func @f(%x: f32[4]) -> (f32[4]) {\n  %y = add %x, %z : f32[4]\n  return %y\n}\n"),
            "t.kiln:2:16: error: undefined value %z\n"
            "  %y = add %x, %z : f32[4]\n"
            "               ^");
}

TEST(ParseErrors, ValueDefinedTwice) {
  EXPECT_EQ(parse_error("func @f(%x: f32[4]) -> (f32[4]) {\n  %y = neg %x : f32[4]\n  %y = abs %x : f32[4]\n"
                        "  return %y\n}\n"),
            "t.kiln:3:3: error: %y is defined twice (first at line 2, column 3)\n"
            "  %y = abs %x : f32[4]\n"
            "  ^");
}

TEST(ParseErrors, DuplicateInputNames) {
  EXPECT_EQ(parse_error("func @f(%x: f32[4], %x: f32[4]) -> (f32[4]) {\n  return %x\n}\n"),
            "t.kiln:1:21: error: input %x is defined twice (first at line 1)\n"
            "func @f(%x: f32[4], %x: f32[4]) -> (f32[4]) {\n"
            "                    ^");
}

TEST(ParseErrors, ReturnTypeDiffersFromSignature) {
  EXPECT_EQ(parse_error("func @f(%x: f32[4]) -> (f16[4]) {\n  return %x\n}\n"),
            "t.kiln:2:10: error: return value 0 (%x) has type f32[4], but the signature declares f16[4]\n"
            "  return %x\n"
            "         ^");
}

TEST(ParseErrors, ReturnCountDiffersFromSignature) {
  EXPECT_EQ(parse_error("func @f(%x: f32[4]) -> (f32[4], f32[4]) {\n  return %x\n}\n"),
            "t.kiln:2:3: error: return gives 1 value, but the signature declares 2\n"
            "  return %x\n"
            "  ^");
}

TEST(ParseErrors, MissingReturn) {
  EXPECT_EQ(parse_error("func @f(%x: f32[4]) -> (f32[4]) {\n  %y = neg %x : f32[4]\n}\n"),
            "t.kiln:3:1: error: missing return before the end of the function\n"
            "}\n"
            "^");
}

TEST(ParseErrors, TrailingGarbage) {
  EXPECT_EQ(parse_error("func @f(%x: f32[4]) -> (f32[4]) {\n  return %x\n} extra\n"),
            "t.kiln:3:3: error: unexpected 'extra' after the end of the function\n"
            "} extra\n"
            "  ^");
}

TEST(ParseErrors, UnterminatedString) {
  EXPECT_EQ(parse_error("func @f(%x: f32[4]) -> (f32[4]) {\n  %y = gelu %x {approximate = \"tanh} : f32[4]\n"
                        "  return %y\n}\n"),
            "t.kiln:2:31: error: unterminated string\n"
            "  %y = gelu %x {approximate = \"tanh} : f32[4]\n"
            "                              ^");
}

TEST(ParseErrors, BadNumber) {
  EXPECT_EQ(parse_error("func @f() -> (f32[]) {\n  %c = const 1.5.2 : f32[]\n  return %c\n}\n"),
            "t.kiln:2:14: error: bad number '1.5.2'\n"
            "  %c = const 1.5.2 : f32[]\n"
            "             ^");
}

TEST(ParseErrors, IntegerLiteralOverflow) {
  EXPECT_EQ(parse_error("func @f(%x: f32[99999999999999999999]) -> (f32[4]) {\n  return %x\n}\n"),
            "t.kiln:1:17: error: integer 99999999999999999999 is too large (64-bit limit)\n"
            "func @f(%x: f32[99999999999999999999]) -> (f32[4]) {\n"
            "                ^");
}

TEST(ParseErrors, DimensionAboveTwoToTheForty) {
  // 2^40 + 1
  EXPECT_EQ(parse_error("func @f(%x: f32[1099511627777]) -> (f32[4]) {\n  return %x\n}\n"),
            "t.kiln:1:17: error: dimension 1099511627777 is larger than the limit 2^40\n"
            "func @f(%x: f32[1099511627777]) -> (f32[4]) {\n"
            "                ^");
}

TEST(ParseErrors, DimensionOfExactlyTwoToTheFortyIsAccepted) {
  Graph g = parse("func @f(%x: f32[1099511627776]) -> (f32[1099511627776]) {\n  return %x\n}\n");
  EXPECT_EQ(g.inputs()[0]->type.shape[0], int64_t{1} << 40);
}

TEST(ParseErrors, ElementCountAboveTwoToTheFortyEight) {
  // 2^40 * 2^8 is the limit; one more factor of 2 goes over it at the third dimension.
  EXPECT_EQ(parse_error("func @f(%x: f32[1099511627776,256,2]) -> (f32[4]) {\n  return %x\n}\n"),
            "t.kiln:1:35: error: the tensor has more than 2^48 elements, the limit\n"
            "func @f(%x: f32[1099511627776,256,2]) -> (f32[4]) {\n"
            "                                  ^");
}

TEST(ParseErrors, ZeroDimension) {
  EXPECT_EQ(parse_error("func @f(%x: f32[4,0]) -> (f32[4]) {\n  return %x\n}\n"),
            "t.kiln:1:19: error: dimensions must be positive, got 0\n"
            "func @f(%x: f32[4,0]) -> (f32[4]) {\n"
            "                  ^");
}

TEST(ParseErrors, NegativeDimension) {
  EXPECT_EQ(parse_error("func @f(%x: f32[-3]) -> (f32[4]) {\n  return %x\n}\n"),
            "t.kiln:1:17: error: dimensions must be positive, got -3\n"
            "func @f(%x: f32[-3]) -> (f32[4]) {\n"
            "                ^");
}

TEST(ParseErrors, UnknownType) {
  EXPECT_EQ(parse_error("func @f(%x: f64[4]) -> (f32[4]) {\n  return %x\n}\n"),
            "t.kiln:1:13: error: unknown type 'f64' (types: f32, f16, bf16, i32, i1)\n"
            "func @f(%x: f64[4]) -> (f32[4]) {\n"
            "            ^");
}

TEST(ParseErrors, TypeRuleErrorPointsAtTheOpWithTheOpTableText) {
  EXPECT_EQ(parse_error("func @f(%x: f32[4], %y: f32[5]) -> (f32[4]) {\n  %z = add %x, %y : f32[4]\n  return %z\n}\n"),
            "t.kiln:2:8: error: add(f32[4], f32[5]): shapes do not broadcast (numpy rule: trailing dimensions must "
            "be equal or 1)\n"
            "  %z = add %x, %y : f32[4]\n"
            "       ^");
}

TEST(ParseErrors, WrongOperandCountIsReportedByTheTypeRule) {
  EXPECT_EQ(parse_error("func @f(%x: f32[4]) -> (f32[4]) {\n  %y = add %x : f32[4]\n  return %y\n}\n"),
            "t.kiln:2:8: error: add(f32[4]): expects 2 operands, got 1\n"
            "  %y = add %x : f32[4]\n"
            "       ^");
}

TEST(ParseErrors, AnnotatedTypeDiffersFromInferredType) {
  EXPECT_EQ(parse_error("func @f(%x: f32[4]) -> (f32[4]) {\n  %y = neg %x : f16[4]\n  return %y\n}\n"),
            "t.kiln:2:8: error: neg: the result type is f32[4], but f16[4] was written\n"
            "  %y = neg %x : f16[4]\n"
            "       ^");
}

TEST(ParseErrors, ConstValueAsAnAttribute) {
  EXPECT_EQ(parse_error("func @f() -> (f32[]) {\n  %c = const {value = 1.0} : f32[]\n  return %c\n}\n"),
            "t.kiln:2:14: error: const needs its value before the type (const 0.5 : f32[]), got '{'\n"
            "  %c = const {value = 1.0} : f32[]\n"
            "             ^");
}

TEST(ParseErrors, NestedAttributeList) {
  EXPECT_EQ(parse_error("func @f(%x: f32[4]) -> (f32[]) {\n  %s = sum %x {axis = [[0]]} : f32[]\n  return %s\n}\n"),
            "t.kiln:2:24: error: attribute lists hold integers, got '['\n"
            "  %s = sum %x {axis = [[0]]} : f32[]\n"
            "                       ^");
}

TEST(ParseErrors, AttributeGivenTwice) {
  EXPECT_EQ(parse_error("func @f(%x: f32[4]) -> (f32[4]) {\n  %s = softmax %x {axis = 0, axis = 0} : f32[4]\n"
                        "  return %s\n}\n"),
            "t.kiln:2:30: error: attribute 'axis' is given twice\n"
            "  %s = softmax %x {axis = 0, axis = 0} : f32[4]\n"
            "                             ^");
}

TEST(ParseErrors, UnexpectedCharacter) {
  EXPECT_EQ(parse_error("func @f(%x: f32[4]) -> (f32[4]) {\n  %y = neg %x ; f32[4]\n  return %y\n}\n"),
            "t.kiln:2:15: error: unexpected character ';'\n"
            "  %y = neg %x ; f32[4]\n"
            "              ^");
}

TEST(ParseErrors, UnexpectedEndOfInputPointsAfterTheLastToken) {
  EXPECT_EQ(parse_error("func @f(%x: f32[4]) -> (f32[4]) {\n  %y = neg %x : f32[4]\n\n"),
            "t.kiln:2:23: error: unexpected end of input: the function is not closed with '}'\n"
            "  %y = neg %x : f32[4]\n"
            "                      ^");
}

TEST(ParseErrors, CaretFollowsTabs) {
  EXPECT_EQ(parse_error("func @f(%x: f32[4]) -> (f32[4]) {\n\t%y = neg %q : f32[4]\n  return %y\n}\n"),
            "t.kiln:2:11: error: undefined value %q\n"
            "\t%y = neg %q : f32[4]\n"
            "\t         ^");
}

TEST(ParseErrors, KernelBlocksCannotNest) {
  EXPECT_EQ(parse_error("func @f(%x: f32[4]) -> (f32[4]) {\n  kernel @k0 pointwise {\n    kernel @k1 pointwise {\n"),
            "t.kiln:3:5: error: kernel blocks cannot be nested\n"
            "    kernel @k1 pointwise {\n"
            "    ^");
}

TEST(ParseErrors, EmptyKernelBlock) {
  EXPECT_EQ(parse_error("func @f(%x: f32[4]) -> (f32[4]) {\n  kernel @k0 pointwise {\n  }\n  return %x\n}\n"),
            "t.kiln:2:3: error: kernel @k0 has no ops\n"
            "  kernel @k0 pointwise {\n"
            "  ^");
}

TEST(ParseErrors, UnknownKernelKind) {
  EXPECT_EQ(parse_error("func @f(%x: f32[4]) -> (f32[4]) {\n  kernel @k0 fancy {\n"),
            "t.kiln:2:14: error: unknown kernel kind 'fancy' (kinds: pointwise, row_reduce, col_reduce, gemm, "
            "attention)\n"
            "  kernel @k0 fancy {\n"
            "             ^");
}

TEST(ParseErrors, KernelNameUsedTwice) {
  EXPECT_EQ(parse_error("func @f(%x: f32[4]) -> (f32[4]) {\n  kernel @k0 pointwise {\n    %a = neg %x : f32[4]\n"
                        "  }\n  kernel @k0 pointwise {\n"),
            "t.kiln:5:10: error: kernel @k0 is defined twice\n"
            "  kernel @k0 pointwise {\n"
            "         ^");
}

TEST(ParseErrors, ReturnInsideAKernelBlock) {
  EXPECT_EQ(parse_error("func @f(%x: f32[4]) -> (f32[4]) {\n  kernel @k0 pointwise {\n    return %x\n"),
            "t.kiln:3:5: error: return must come after the kernel block is closed\n"
            "    return %x\n"
            "    ^");
}

TEST(ParseErrors, EmptyInput) {
  EXPECT_EQ(parse_error(""), "t.kiln:1:1: error: expected 'func', got end of input\n\n^");
}

TEST(ParseErrors, DeeplyNestedBracketsDoNotOverflowTheStack) {
  std::string text = "func @f(%x: f32[4]) -> (f32[4]) {\n  %s = sum %x {axis = " + std::string(200000, '[');
  EXPECT_NE(parse_error(text).find("attribute lists hold integers"), std::string::npos);
}

}  // namespace
}  // namespace kiln::ir
