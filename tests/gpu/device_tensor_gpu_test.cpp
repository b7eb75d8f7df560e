// Programs run in place on device memory the caller owns (kiln::DeviceTensor), on
// the caller's stream: results against the reference, an output that returns an
// input, and the errors for memory that is not on the device.
#include <gtest/gtest.h>

#include "frontend/kiln.h"
#include "gpu_test_util.h"
#include "runtime/device.h"
#include "runtime/device_buffer.h"

namespace kiln {
namespace {

// A non-blocking stream of the caller's, destroyed with the object.
struct CallerStream {
  CUstream stream = nullptr;
  CallerStream() {
    runtime::Device::get();
    runtime::cu::check(runtime::driver().cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  }
  ~CallerStream() { runtime::driver().cuStreamDestroy(stream); }
};

DeviceTensor view_of(const runtime::DeviceBuffer& b, const TensorType& t) { return {b.ptr(), t.dtype, t.shape, {}}; }

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(DeviceTensorGpu, RunsInPlaceOnTheCallersStream) {
  KILN_REQUIRE_GPU();
  Graph g("in_place");
  auto x = g.input("x", f16, {513, 4096});
  auto w = g.input("w", f16, {4096});
  g.output(rms_norm(x, w, 1e-6).name("y"));
  g.output(x);  // an output that returns an input: copied on the same stream
  Program p = compile(g);
  auto inputs = ir::random_inputs(g.ir(), 11);
  runtime::DeviceBuffer xb = runtime::DeviceBuffer::from_host(inputs[0]);
  runtime::DeviceBuffer wb = runtime::DeviceBuffer::from_host(inputs[1]);
  const TensorType xt = g.ir().inputs()[0]->type, wt = g.ir().inputs()[1]->type;
  runtime::DeviceBuffer yb(static_cast<size_t>(xt.bytes())), copyb(static_cast<size_t>(xt.bytes()));
  yb.fill_bytes(0xFF);
  copyb.fill_bytes(0xFF);

  // The copies and fills above ran on the legacy stream, which a non-blocking stream does not wait for.
  runtime::Device::get().synchronize();
  CallerStream s;
  p.run({view_of(xb, xt), view_of(wb, wt)}, {view_of(yb, xt), view_of(copyb, xt)}, s.stream);
  runtime::cu::stream_synchronize(s.stream);

  auto want = ir::evaluate(g.ir(), inputs);
  Comparison c = compare(yb.to_host(xt), want[0]);
  EXPECT_TRUE(c.passed) << c.str();
  EXPECT_EQ(copyb.to_host(xt).values, inputs[0].values);
}

TEST(DeviceTensorGpu, StridedViewOfTheSameMemoryIsRejected) {
  KILN_REQUIRE_GPU();
  Graph g("strided");
  g.output(exp(g.input("x", f32, {64, 64})));
  Program p = compile(g);
  runtime::DeviceBuffer b(64 * 64 * 4), out(64 * 64 * 4);
  DeviceTensor transposed{b.ptr(), DType::f32, {64, 64}, {1, 64}};
  EXPECT_NE(error_of([&] { p.run({transposed}, {view_of(out, {DType::f32, {64, 64}})}); })
                .find("not row-major contiguous"),
            std::string::npos);
}

TEST(DeviceTensorGpu, HostMemoryIsNotADevicePointer) {
  KILN_REQUIRE_GPU();
  Graph g("host");
  g.output(exp(g.input("x", f32, {64})));
  Program p = compile(g);
  alignas(16) static float host[64];
  runtime::DeviceBuffer out(64 * 4);
  DeviceTensor h{reinterpret_cast<CUdeviceptr>(host), DType::f32, {64}, {}};
  std::string e = error_of([&] { p.run({h}, {view_of(out, {DType::f32, {64}})}); });
  EXPECT_NE(e.find("input 0 %x: 0x"), std::string::npos) << e;
  EXPECT_NE(e.find("is not CUDA device memory"), std::string::npos) << e;
}

}  // namespace
}  // namespace kiln
