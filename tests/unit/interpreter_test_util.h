// Helpers for the reference interpreter's tests: build a one-op graph with
// ir::Graph::add, evaluate it, and compare its values with hand-computed ones.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <initializer_list>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ir/graph.h"
#include "ir/interpreter.h"
#include "ir/tensor.h"

namespace kiln::testing {

inline const double kNaN = std::numeric_limits<double>::quiet_NaN();
inline const double kInf = std::numeric_limits<double>::infinity();

inline HostTensor tensor(DType dt, Shape shape, std::vector<double> values) {
  return HostTensor(TensorType{dt, std::move(shape)}, std::move(values));
}
inline HostTensor f32(Shape shape, std::vector<double> values) {
  return tensor(DType::f32, std::move(shape), std::move(values));
}

inline ir::Attrs attrs(std::initializer_list<std::pair<std::string, ir::AttrValue>> items) {
  ir::Attrs a;
  for (const auto& [name, value] : items) a.set(name, value);
  return a;
}

// The attributes of a reduction over `axes`.
inline ir::Attrs over(std::vector<int64_t> axes, bool keepdim = false) {
  return attrs({{"axis", std::move(axes)}, {"keepdim", keepdim}});
}

// Applies `op` to the given tensors (as graph inputs %x0, %x1, ...) and returns its result.
inline HostTensor run_op(ir::OpKind op, const std::vector<HostTensor>& inputs, const ir::Attrs& a = {},
                         std::optional<TensorType> annotated = std::nullopt) {
  ir::Graph g("single_op");
  std::vector<ir::Value*> operands;
  for (size_t i = 0; i < inputs.size(); ++i) operands.push_back(g.add_input("x" + std::to_string(i), inputs[i].type));
  g.add_output(g.add(op, operands, a, annotated));
  auto outs = ir::evaluate(g, inputs);
  EXPECT_EQ(outs.size(), 1u);
  return outs.at(0);
}

// Expects `t` to hold exactly `want` rounded to t's dtype (NaN matches NaN).
inline void expect_values(const HostTensor& t, const std::vector<double>& want) {
  ASSERT_EQ(t.values.size(), want.size()) << t.type.str();
  for (size_t i = 0; i < want.size(); ++i) {
    double w = round_to(t.type.dtype, want[i]);
    if (std::isnan(w)) EXPECT_TRUE(std::isnan(t.values[i])) << "element " << i << " is " << t.values[i];
    else EXPECT_EQ(t.values[i], w) << "element " << i << " of " << t.type.str() << ", wanted " << want[i];
  }
}

}  // namespace kiln::testing
