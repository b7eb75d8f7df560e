// Kiln has no zero-size tensors: every entry that makes a shape (the parser, graph
// inputs, the DSL's inputs, constants, iota, broadcasts and reshapes, the op table's
// checks on operands) rejects a dimension of size 0 with an error naming the op and
// the shape.
#include <gtest/gtest.h>

#include <string>

#include "frontend/kiln.h"
#include "ir/graph.h"
#include "ir/parser.h"

namespace {

template <class F>
std::string error_of(F&& build) {
  try {
    build();
  } catch (const kiln::Error& e) {
    return e.what();
  }
  return "";
}

::testing::AssertionResult Contains(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "\"" << text << "\"\ndoes not contain\n\"" << part << "\"";
}

TEST(ZeroSize, ParserRejectsAZeroDimInAnyType) {
  EXPECT_TRUE(Contains(error_of([] { kiln::ir::parse("func @f(%x: f32[4,0]) -> (f32[4,0]) {\n  return %x\n}\n"); }),
                       "dimensions must be positive, got 0"));
  EXPECT_TRUE(Contains(error_of([] {
                         kiln::ir::parse("func @f(%x: f32[4]) -> (f32[0,4]) {\n"
                                         "  %y = broadcast %x : f32[0,4]\n  return %y\n}\n");
                       }),
                       "dimensions must be positive, got 0"));
}

TEST(ZeroSize, GraphInputsRejectAZeroDim) {
  kiln::ir::Graph g;
  EXPECT_TRUE(Contains(error_of([&] { g.add_input("x", {kiln::DType::f32, {0}}); }),
                       "input 'x': dimensions must be positive, got f32[0]"));
}

TEST(ZeroSize, DslOpsRejectAZeroDimResult) {
  kiln::Graph g("zero");
  auto x = g.input("x", kiln::f32, {1, 4});
  EXPECT_TRUE(Contains(error_of([&] { kiln::broadcast_to(x, {0, 4}); }),
                       "broadcast(f32[1,4]): result shape [0,4] has a dimension of size 0"));
  EXPECT_TRUE(Contains(error_of([&] { kiln::constant(g, 1.0, kiln::f32, {3, 0}); }),
                       "const: result shape [3,0] has a dimension of size 0"));
  EXPECT_TRUE(Contains(error_of([&] { kiln::iota(g, kiln::i32, {0}); }),
                       "iota: result shape [0] has a dimension of size 0"));
  EXPECT_TRUE(Contains(error_of([&] { kiln::reshape(x, {4, 0}); }),
                       "reshape(f32[1,4]): result shape [4,0] has a dimension of size 0"));
  EXPECT_TRUE(Contains(error_of([&] { kiln::broadcast_to(x, {0, 4}); }), "Kiln has no zero-size tensors"));
}

TEST(ZeroSize, OpTableRejectsAZeroDimOperand) {
  // Operands cannot have one once results cannot, but the op table checks them too.
  kiln::TensorType empty{kiln::DType::f32, {2, 0}};
  EXPECT_TRUE(Contains(error_of([&] { kiln::ir::infer_type(kiln::ir::OpKind::Exp, {empty}, {}, std::nullopt); }),
                       "exp(f32[2,0]): dimensions must be positive (Kiln has no zero-size tensors)"));
}

}  // namespace
