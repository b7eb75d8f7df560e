// Programs end to end on the GPU: the DSL's kiln::compile, device-buffer runs,
// intermediates between kernels, outputs that repeat a value or return an input.
#include <gtest/gtest.h>

#include "frontend/kiln.h"
#include "gpu_test_util.h"
#include "ir/compare.h"
#include "ir/interpreter.h"

namespace kiln {
namespace {

void expect_all_pass(const std::vector<HostTensor>& got, const std::vector<HostTensor>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    Comparison c = compare(got[i], want[i]);
    EXPECT_TRUE(c.passed) << "output " << i << ": " << c.str();
  }
}

TEST(ProgramGpu, DslCompileAndRunOnHostTensors) {
  KILN_REQUIRE_GPU();
  Graph g("chain");
  auto x = g.input("x", bf16, {77, 1031});
  auto s = g.input("s", bf16, {1031});
  g.output(silu(x * s) - 0.5f);
  Program p = compile(g);
  auto inputs = ir::random_inputs(g.ir(), 3);
  expect_all_pass(p.run(inputs), ir::evaluate(g.ir(), inputs));
}

TEST(ProgramGpu, RunsOnCallerDeviceBuffers) {
  KILN_REQUIRE_GPU();
  Graph g("device");
  auto a = g.input("a", f32, {1000003});
  auto b = g.input("b", f32, {1000003});
  g.output(tanh(a) * b);
  Program p = compile(g);
  auto inputs = ir::random_inputs(g.ir(), 5);
  std::vector<runtime::DeviceBuffer> in_bufs;
  for (const HostTensor& t : inputs) in_bufs.push_back(runtime::DeviceBuffer::from_host(t));
  runtime::DeviceBuffer out(1000003 * 4);
  out.fill_bytes(0xFF);
  p.executable().run({&in_bufs[0], &in_bufs[1]}, {&out});
  HostTensor got = out.to_host({DType::f32, {1000003}});
  expect_all_pass({got}, ir::evaluate(g.ir(), inputs));
}

TEST(ProgramGpu, TooSmallBufferIsAClearError) {
  KILN_REQUIRE_GPU();
  Graph g("small");
  auto a = g.input("a", f32, {1024});
  g.output(exp(a));
  Program p = compile(g);
  runtime::DeviceBuffer in(1024 * 4), out(16);
  try {
    p.executable().run({&in}, {&out});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("needs 4096 bytes"), std::string::npos) << e.what();
  }
}

TEST(ProgramGpu, IntermediateBetweenTwoKernels) {
  KILN_REQUIRE_GPU();
  // A reshape of a transposed value cannot be index arithmetic: the transposed sum
  // is written to memory by one kernel and read by the next.
  Graph g("two_kernels");
  auto x = g.input("x", f16, {37, 64});
  auto y = g.input("y", f16, {64, 37});
  auto t = transpose(x, {1, 0}) + y;  // [64,37]
  g.output(exp(reshape(t, {37, 64})));
  Program p = compile(g);
  EXPECT_GE(p.kernels().size(), 2u);
  auto inputs = ir::random_inputs(g.ir(), 11);
  expect_all_pass(p.run(inputs), ir::evaluate(g.ir(), inputs));
}

TEST(ProgramGpu, RepeatedOutputsAndAReturnedInput) {
  KILN_REQUIRE_GPU();
  Graph g("repeat");
  auto a = g.input("a", f32, {513});
  auto e = exp(a);
  g.output(e);
  g.output(e);
  g.output(a);
  Program p = compile(g);
  auto inputs = ir::random_inputs(g.ir(), 13);
  expect_all_pass(p.run(inputs), ir::evaluate(g.ir(), inputs));
}

}  // namespace
}  // namespace kiln
