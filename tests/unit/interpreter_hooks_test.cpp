// ir::evaluate with EvalHooks: a supplied result replaces the node's own, nodes
// downstream read it, a hook that supplies nothing changes nothing, and a result of
// the wrong type is refused.
#include <gtest/gtest.h>

#include "frontend/kiln.h"
#include "ir/error.h"
#include "ir/interpreter.h"

namespace kiln {
namespace {

// y = relu(a @ b + bias) with a [2, 3], b [3, 2], bias [2].
ir::Graph matmul_bias_relu() {
  kiln::Graph g("matmul_bias_relu");
  auto a = g.input("a", DType::f32, {2, 3});
  auto b = g.input("b", DType::f32, {3, 2});
  auto bias = g.input("bias", DType::f32, {2});
  g.output(kiln::relu(kiln::matmul(a, b) + bias));
  return g.ir().clone();
}

std::vector<HostTensor> inputs_of(const ir::Graph& g) {
  return {HostTensor(g.inputs()[0]->type, {1, 2, 3, 4, 5, 6}), HostTensor(g.inputs()[1]->type, {1, 0, 0, 1, 1, 1}),
          HostTensor(g.inputs()[2]->type, {-5, 0.5})};
}

TEST(InterpreterHooks, ASuppliedResultIsWhatDownstreamNodesRead) {
  ir::Graph g = matmul_bias_relu();
  int asked = 0;
  ir::EvalHooks hooks;
  hooks.supply = [&](const ir::Node& n, const std::vector<const HostTensor*>& operands) -> std::optional<HostTensor> {
    ++asked;
    if (n.op != ir::OpKind::Matmul) return std::nullopt;
    EXPECT_EQ(operands.size(), 2u);
    EXPECT_EQ(operands[0]->values[5], 6);  // the hook sees the operands' values
    return HostTensor(n.result->type, {10, 20, 30, 40});
  };
  std::vector<HostTensor> out = ir::evaluate(g, inputs_of(g), hooks);
  ASSERT_EQ(out.size(), 1u);
  // relu([10, 20, 30, 40] + [-5, 0.5]): the supplied product, not a @ b = [4, 5, 10, 11].
  EXPECT_EQ(out[0].values, (std::vector<double>{5, 20.5, 25, 40.5}));
  EXPECT_EQ(asked, 3);  // matmul, add, relu
}

TEST(InterpreterHooks, SupplyingNothingGivesTheInterpretersResult) {
  ir::Graph g = matmul_bias_relu();
  ir::EvalHooks hooks;
  hooks.supply = [](const ir::Node&, const std::vector<const HostTensor*>&) { return std::optional<HostTensor>(); };
  std::vector<HostTensor> with = ir::evaluate(g, inputs_of(g), hooks);
  std::vector<HostTensor> without = ir::evaluate(g, inputs_of(g));
  EXPECT_EQ(with[0].values, without[0].values);
  EXPECT_EQ(without[0].values, (std::vector<double>{0, 5.5, 5, 11.5}));  // relu([4, 5, 10, 11] + [-5, 0.5])
  EXPECT_EQ(ir::evaluate(g, inputs_of(g), ir::EvalHooks{})[0].values, without[0].values);  // no hook at all
}

TEST(InterpreterHooks, ASuppliedResultOfTheWrongTypeIsRefused) {
  ir::Graph g = matmul_bias_relu();
  ir::EvalHooks hooks;
  hooks.supply = [](const ir::Node& n, const std::vector<const HostTensor*>&) -> std::optional<HostTensor> {
    if (n.op != ir::OpKind::Matmul) return std::nullopt;
    return HostTensor(TensorType{DType::f16, {2, 2}}, {1, 2, 3, 4});
  };
  try {
    ir::evaluate(g, inputs_of(g), hooks);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("the result supplied for matmul (node 0) is f16[2,2]"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("the node gives f32[2,2]"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace kiln
