// simplify: constant folding, identities, cast and view chains; each rule only
// where the replacement has exactly the replaced value's type.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/interpreter.h"
#include "ir/printer.h"
#include "ir/tensor.h"
#include "passes/pass.h"

using namespace kiln;
using ir::OpKind;
using ir::Value;

namespace {

bool simplify(ir::Graph& g) {
  bool changed = passes::create_pass("simplify")->run(g);
  ir::verify(g);
  return changed;
}

ir::Attrs attrs(std::initializer_list<std::pair<std::string, ir::AttrValue>> items) {
  ir::Attrs a;
  for (const auto& [name, value] : items) a.set(name, value);
  return a;
}

std::vector<OpKind> ops_of(const ir::Graph& g) {
  std::vector<OpKind> ops;
  for (const ir::Node* n : g.nodes()) ops.push_back(n->op);
  return ops;
}

const TensorType f32_8{DType::f32, {8}};

// A graph with input %x of type `t`, built by `body`, whose result is the output %y.
template <class Body>
ir::Graph graph_of(TensorType t, Body body) {
  ir::Graph g("f");
  Value* x = g.add_input("x", std::move(t));
  Value* y = body(g, x);
  if (y->producer) y->name = "y";
  g.add_output(y);
  return g;
}

Value* cast(ir::Graph& g, Value* v, DType to) { return g.add(OpKind::Cast, {v}, {}, TensorType{to, v->type.shape}); }

}  // namespace

TEST(Simplify, FoldsScalarConstants) {
  ir::Graph g = graph_of(f32_8, [](ir::Graph& g, Value* x) {
    Value* five = g.add(OpKind::Add, {g.constant(2, DType::f32), g.constant(3, DType::f32)});
    return g.add(OpKind::Mul, {x, five});
  });
  EXPECT_TRUE(simplify(g));
  EXPECT_EQ(ops_of(g), (std::vector<OpKind>{OpKind::Const, OpKind::Mul}));
  EXPECT_EQ(g.nodes()[0]->attrs.get_float("value"), 5.0);
}

TEST(Simplify, FoldedConstantIsRoundedToItsDtype) {
  // f16: 0.1 -> 0.0999755859375, 0.2 -> 0.199951171875; the sum 0.2999267578125 lies
  // halfway between f16 neighbours 0.2998046875 and 0.30004882812 and rounds to even.
  ir::Graph g = graph_of(TensorType{DType::f16, {8}}, [](ir::Graph& g, Value* x) {
    return g.add(OpKind::Add, {x, g.add(OpKind::Add, {g.constant(0.1, DType::f16), g.constant(0.2, DType::f16)})});
  });
  simplify(g);
  ASSERT_EQ(g.nodes()[0]->op, OpKind::Const);
  EXPECT_EQ(g.nodes()[0]->attrs.get_float("value"), 0.2998046875);
}

TEST(Simplify, FoldsUnaryCastAndCompare) {
  ir::Graph g = graph_of(f32_8, [](ir::Graph& g, Value* x) {
    Value* one = g.add(OpKind::Exp, {g.constant(0, DType::f32)});                      // 1
    Value* three = cast(g, g.constant(3.75, DType::f32), DType::i32);                  // 3 (truncated)
    Value* is_less = g.add(OpKind::Lt, {three, g.constant(4, DType::i32)});           // true
    Value* pick = g.add(OpKind::Select, {is_less, one, g.constant(7, DType::f32)});  // 1
    return g.add(OpKind::Sub, {x, pick});
  });
  simplify(g);
  ASSERT_EQ(ops_of(g), (std::vector<OpKind>{OpKind::Const, OpKind::Sub}));
  EXPECT_EQ(g.nodes()[0]->attrs.get_float("value"), 1.0);
}

TEST(Simplify, FoldsToNaNSoThatACompareOfItKeepsItsMeaning) {
  // 0 / 0 != 0 / 0 is true; left to NVRTC, the compare was folded to false.
  ir::Graph g = graph_of(f32_8, [](ir::Graph& g, Value* x) {
    Value* nan = g.add(OpKind::Div, {g.constant(0, DType::f32), g.constant(0, DType::f32)});
    Value* is_nan = g.add(OpKind::Ne, {nan, nan});
    return g.add(OpKind::Add, {x, cast(g, is_nan, DType::f32)});
  });
  EXPECT_TRUE(simplify(g));
  ASSERT_EQ(ops_of(g), (std::vector<OpKind>{OpKind::Const, OpKind::Add}));
  EXPECT_EQ(g.nodes()[0]->attrs.get_float("value"), 1.0);
}

TEST(Simplify, FoldsASqrtOfANegativeConstantToNaN) {
  ir::Graph g = graph_of(f32_8, [](ir::Graph& g, Value* x) {
    return g.add(OpKind::Add, {x, g.add(OpKind::Sqrt, {g.constant(-1, DType::f32)})});
  });
  EXPECT_TRUE(simplify(g));
  ASSERT_EQ(ops_of(g), (std::vector<OpKind>{OpKind::Const, OpKind::Add}));
  EXPECT_TRUE(std::isnan(g.nodes()[0]->attrs.get_float("value")));
}

TEST(Simplify, FoldsConstantsOfAnyShapeAndViewsOfThem) {
  // A constant holds one value whatever its shape: exp(0) over [8] is a constant 1 of
  // shape [8], and a reshape of it another constant.
  ir::Graph g = graph_of(f32_8, [](ir::Graph& g, Value* x) {
    Value* ones = g.add(OpKind::Exp, {g.constant(0, DType::f32, {2, 4})});
    return g.add(OpKind::Mul, {x, g.add(OpKind::Reshape, {ones}, {}, TensorType{DType::f32, {8}})});
  });
  EXPECT_TRUE(simplify(g));
  EXPECT_EQ(ops_of(g), (std::vector<OpKind>{}));
}

TEST(Simplify, MultiplyByOneOnEitherSide) {
  ir::Graph g = graph_of(f32_8, [](ir::Graph& g, Value* x) {
    Value* a = g.add(OpKind::Mul, {g.add(OpKind::Exp, {x}), g.constant(1, DType::f32)});
    return g.add(OpKind::Mul, {g.constant(1, DType::f32), a});
  });
  EXPECT_TRUE(simplify(g));
  EXPECT_EQ(ir::print(g),
            "func @f(%x: f32[8]) -> (f32[8]) {\n"
            "  %y = exp %x : f32[8]\n"
            "  return %y\n"
            "}\n");
}

TEST(Simplify, AddZeroSubZeroDivOne) {
  ir::Graph g = graph_of(TensorType{DType::i32, {8}}, [](ir::Graph& g, Value* x) {
    Value* a = g.add(OpKind::Add, {g.constant(0, DType::i32), x});
    Value* b = g.add(OpKind::Add, {a, g.constant(0, DType::i32)});
    Value* c = g.add(OpKind::Sub, {b, g.constant(0, DType::i32)});
    return g.add(OpKind::Div, {c, g.constant(1, DType::i32)});
  });
  EXPECT_TRUE(simplify(g));
  EXPECT_TRUE(g.nodes().empty());
  EXPECT_EQ(g.outputs()[0], g.inputs()[0]);
}

TEST(Simplify, ZeroMinusXAndOneOverXStay) {
  ir::Graph g = graph_of(f32_8, [](ir::Graph& g, Value* x) {
    Value* a = g.add(OpKind::Sub, {g.constant(0, DType::f32), x});
    return g.add(OpKind::Div, {g.constant(1, DType::f32), a});
  });
  EXPECT_FALSE(simplify(g));
}

TEST(Simplify, TimesZeroStays) {
  ir::Graph g = graph_of(f32_8, [](ir::Graph& g, Value* x) {
    return g.add(OpKind::Mul, {x, g.constant(0, DType::f32)});
  });
  EXPECT_FALSE(simplify(g));
  EXPECT_EQ(ops_of(g), (std::vector<OpKind>{OpKind::Const, OpKind::Mul}));
}

TEST(Simplify, IdentityThatWouldChangeTheShapeDoesNotFire) {
  ir::Graph g = graph_of(f32_8, [](ir::Graph& g, Value* x) {
    return g.add(OpKind::Add, {x, g.constant(0, DType::f32, {8, 8})});
  });
  EXPECT_FALSE(simplify(g));
  EXPECT_EQ(g.outputs()[0]->type, (TensorType{DType::f32, {8, 8}}));
}

TEST(Simplify, NegNegIsX) {
  ir::Graph g = graph_of(f32_8, [](ir::Graph& g, Value* x) {
    return g.add(OpKind::Neg, {g.add(OpKind::Neg, {g.add(OpKind::Neg, {g.add(OpKind::Neg, {x})})})});
  });
  EXPECT_TRUE(simplify(g));
  EXPECT_TRUE(g.nodes().empty());
}

TEST(Simplify, CastToTheSameTypeIsX) {
  ir::Graph g = graph_of(f32_8, [](ir::Graph& g, Value* x) { return g.add(OpKind::Exp, {cast(g, x, DType::f32)}); });
  EXPECT_TRUE(simplify(g));
  EXPECT_EQ(ops_of(g), (std::vector<OpKind>{OpKind::Exp}));
}

TEST(Simplify, CastAfterAWideningCastIsOneCast) {
  ir::Graph g = graph_of(TensorType{DType::f16, {8}}, [](ir::Graph& g, Value* x) {
    return cast(g, cast(g, x, DType::f32), DType::i32);
  });
  EXPECT_TRUE(simplify(g));
  EXPECT_EQ(ir::print(g),
            "func @f(%x: f16[8]) -> (i32[8]) {\n"
            "  %y = cast %x : i32[8]\n"
            "  return %y\n"
            "}\n");
}

TEST(Simplify, WideningRoundTripIsX) {
  ir::Graph g = graph_of(TensorType{DType::i1, {8}}, [](ir::Graph& g, Value* x) {
    return cast(g, cast(g, x, DType::bf16), DType::i1);
  });
  EXPECT_TRUE(simplify(g));
  EXPECT_TRUE(g.nodes().empty());
}

TEST(Simplify, CastAfterANarrowingCastStays) {
  ir::Graph g = graph_of(f32_8, [](ir::Graph& g, Value* x) { return cast(g, cast(g, x, DType::f16), DType::f32); });
  EXPECT_FALSE(simplify(g));
  EXPECT_EQ(ops_of(g), (std::vector<OpKind>{OpKind::Cast, OpKind::Cast}));
}

TEST(Simplify, ReshapeChainsAndNoOpViews) {
  ir::Graph g = graph_of(TensorType{DType::f32, {4, 6}}, [](ir::Graph& g, Value* x) {
    Value* a = g.add(OpKind::Reshape, {x}, {}, TensorType{DType::f32, {24}});
    Value* b = g.add(OpKind::Reshape, {a}, {}, TensorType{DType::f32, {2, 12}});
    Value* c = g.add(OpKind::Reshape, {b}, {}, TensorType{DType::f32, {2, 12}});
    return g.add(OpKind::Broadcast, {c}, {}, TensorType{DType::f32, {2, 12}});
  });
  EXPECT_TRUE(simplify(g));
  EXPECT_EQ(ir::print(g),
            "func @f(%x: f32[4,6]) -> (f32[2,12]) {\n"
            "  %y = reshape %x : f32[2,12]\n"
            "  return %y\n"
            "}\n");
}

TEST(Simplify, ReshapeBackToTheInputShapeIsX) {
  ir::Graph g = graph_of(TensorType{DType::f32, {4, 6}}, [](ir::Graph& g, Value* x) {
    Value* a = g.add(OpKind::Reshape, {x}, {}, TensorType{DType::f32, {24}});
    return g.add(OpKind::Reshape, {a}, {}, TensorType{DType::f32, {4, 6}});
  });
  EXPECT_TRUE(simplify(g));
  EXPECT_TRUE(g.nodes().empty());
}

TEST(Simplify, TransposeOfTransposeComposesThePermutations) {
  auto build = [](ir::Graph& g, Value* x) {
    Value* a = g.add(OpKind::Transpose, {x}, attrs({{"perm", std::vector<int64_t>{1, 2, 0}}}));  // [3,4,2]
    return g.add(OpKind::Transpose, {a}, attrs({{"perm", std::vector<int64_t>{1, 0, 2}}}));      // [4,3,2]
  };
  TensorType t{DType::f32, {2, 3, 4}};
  ir::Graph g = graph_of(t, build), original = graph_of(t, build);
  EXPECT_TRUE(simplify(g));
  ASSERT_EQ(ops_of(g), (std::vector<OpKind>{OpKind::Transpose}));
  EXPECT_EQ(g.nodes()[0]->attrs.get_ints("perm"), (std::vector<int64_t>{2, 1, 0}));
  HostTensor in = random_tensor(t, 3);
  EXPECT_EQ(ir::evaluate(g, {in})[0].values, ir::evaluate(original, {in})[0].values);
}

TEST(Simplify, TransposeThenItsInverseIsX) {
  ir::Graph g = graph_of(TensorType{DType::f32, {2, 3, 4}}, [](ir::Graph& g, Value* x) {
    Value* a = g.add(OpKind::Transpose, {x}, attrs({{"perm", std::vector<int64_t>{1, 2, 0}}}));
    return g.add(OpKind::Transpose, {a}, attrs({{"perm", std::vector<int64_t>{2, 0, 1}}}));
  });
  EXPECT_TRUE(simplify(g));
  EXPECT_TRUE(g.nodes().empty());
}

TEST(Simplify, SquareTransposeIsNotMistakenForTheIdentity) {
  ir::Graph g = graph_of(TensorType{DType::f32, {4, 4}}, [](ir::Graph& g, Value* x) {
    return g.add(OpKind::Transpose, {x}, attrs({{"perm", std::vector<int64_t>{1, 0}}}));
  });
  EXPECT_FALSE(simplify(g));
}

TEST(Simplify, FoldingFeedsTheIdentities) {
  ir::Graph g = graph_of(f32_8, [](ir::Graph& g, Value* x) {
    Value* one = g.add(OpKind::Add, {g.constant(0.5, DType::f32), g.constant(0.5, DType::f32)});
    return g.add(OpKind::Mul, {g.add(OpKind::Exp, {x}), one});
  });
  EXPECT_TRUE(simplify(g));
  EXPECT_EQ(ops_of(g), (std::vector<OpKind>{OpKind::Exp}));
  EXPECT_EQ(g.outputs()[0]->name, "y");  // the surviving value took the user's name
}

TEST(Simplify, NeverRenamesAnInput) {
  ir::Graph g = graph_of(f32_8, [](ir::Graph& g, Value* x) {
    return g.add(OpKind::Mul, {x, g.constant(1, DType::f32)});
  });
  simplify(g);
  EXPECT_EQ(g.inputs()[0]->name, "x");
}

TEST(Simplify, NothingToDoReportsNoChange) {
  ir::Graph g = graph_of(f32_8, [](ir::Graph& g, Value* x) { return g.add(OpKind::Mul, {x, x}); });
  std::string before = ir::print(g);
  EXPECT_FALSE(simplify(g));
  EXPECT_EQ(ir::print(g), before);
}

TEST(Simplify, KeepsTheValuesOfAMixedGraph) {
  auto build = [](ir::Graph& g, Value* x) {
    Value* h = cast(g, cast(g, x, DType::f32), DType::f16);
    Value* two = g.add(OpKind::Add, {g.constant(1.5, DType::f16), g.constant(0.5, DType::f16)});
    Value* a = g.add(OpKind::Mul, {g.add(OpKind::Neg, {g.add(OpKind::Neg, {h})}), two});
    return g.add(OpKind::Sub, {g.add(OpKind::Div, {a, g.constant(1, DType::f16)}), g.constant(0, DType::f16)});
  };
  TensorType t{DType::f16, {3, 5}};
  ir::Graph g = graph_of(t, build), original = graph_of(t, build);
  EXPECT_TRUE(simplify(g));
  EXPECT_EQ(ops_of(g), (std::vector<OpKind>{OpKind::Const, OpKind::Mul}));
  HostTensor in = random_tensor(t, 5);
  EXPECT_EQ(ir::evaluate(g, {in})[0].values, ir::evaluate(original, {in})[0].values);
}
