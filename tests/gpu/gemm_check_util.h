// Helpers for the GPU tests of GEMMs Kiln does not generate (cuBLAS, cuBLASLt, the
// bench vendor rows): KILN_REQUIRE_CUBLAS() skips without a GPU or without cuBLAS;
// product_graph builds the graph a call must match; run_and_compare runs a call on the
// graph's random inputs and compares its output with the reference interpreter's.
#pragma once
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "frontend/kiln.h"
#include "gpu_test_util.h"
#include "ir/compare.h"
#include "ir/interpreter.h"
#include "runtime/cublas.h"
#include "runtime/cublaslt.h"
#include "runtime/device.h"
#include "runtime/device_buffer.h"

namespace kiln::gpu_test {

// y = epilogue(a @ b [+ bias]), batched over a leading dim when batch > 1.
inline ir::Graph product_graph(DType t, int64_t batch, int64_t m, int64_t n, int64_t k, runtime::LtEpilogue e) {
  kiln::Graph g("vendor_check");
  Shape as = {m, k}, bs = {k, n};
  if (batch > 1) {
    as.insert(as.begin(), batch);
    bs.insert(bs.begin(), batch);
  }
  // One statement each: the graph's inputs must come in this order, and the operands
  // of one call are evaluated in no fixed order.
  auto a = g.input("a", t, as);
  auto b = g.input("b", t, bs);
  auto c = kiln::matmul(a, b);
  if (e == runtime::LtEpilogue::None) {
    g.output(c);
  } else {
    auto biased = c + g.input("bias", t, {n});
    g.output(e == runtime::LtEpilogue::GeluBias ? kiln::gelu(biased, "tanh") : biased);
  }
  return g.ir().clone();
}

// `run(inputs on the device, a poisoned output buffer)` against the interpreter, with
// the bound the benchmark uses for the graph's output.
inline Comparison run_and_compare(
    const ir::Graph& g,
    const std::function<void(const std::vector<runtime::DeviceBuffer>&, runtime::DeviceBuffer&)>& run) {
  std::vector<HostTensor> in = ir::random_inputs(g, 5);
  HostTensor want = ir::evaluate(g, in)[0];
  std::vector<runtime::DeviceBuffer> bufs;
  for (const HostTensor& t : in) bufs.push_back(runtime::DeviceBuffer::from_host(t));
  runtime::DeviceBuffer out(static_cast<size_t>(want.type.bytes()));
  out.fill_bytes(0xFF);
  run(bufs, out);
  runtime::Device::get().synchronize();
  return compare(out.to_host(want.type), want, rel_l2_bound_for(*g.outputs()[0]));
}

}  // namespace kiln::gpu_test

#define KILN_REQUIRE_CUBLAS()                                                                \
  do {                                                                                       \
    KILN_REQUIRE_GPU();                                                                      \
    std::string kiln_why_no_cublas;                                                          \
    if (!::kiln::runtime::Cublas::available(&kiln_why_no_cublas) ||                          \
        !::kiln::runtime::LtMatmul::available(&kiln_why_no_cublas))                          \
      GTEST_SKIP() << "no cuBLAS: " << kiln_why_no_cublas;                                   \
  } while (0)
