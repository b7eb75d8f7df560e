// The vendor rows of `kiln bench`. See bench_vendor.h.
#include "runtime/bench_vendor.h"

#include <fmt/format.h>

#include <memory>

#include "frontend/kiln.h"
#include "ir/error.h"
#include "runtime/cublas.h"
#include "runtime/cublaslt.h"
#include "runtime/cuda_driver.h"
#include "runtime/executable.h"
#include "runtime/program.h"

namespace kiln::runtime {

namespace {

GemmProblem problem_of(DType dtype, const BenchSize& size) {
  return GemmProblem{dtype, dtype, size.batches(), size.rows, size.cols, size.depth};
}

// cuBLAS's GEMM into a buffer of its own, then Kiln's epilogue kernel reading it.
struct GemmThenEpilogue {
  std::unique_ptr<Program> epilogue;
  DeviceBuffer product;
};

VendorRun cublas_then_epilogue(DType dtype, const BenchSize& size, const std::vector<DeviceBuffer>& inputs,
                               std::vector<DeviceBuffer>& outputs, const std::string& arch) {
  const Cublas& cublas = Cublas::get();
  const GemmProblem p = problem_of(dtype, size);
  auto state = std::make_shared<GemmThenEpilogue>();
  ProgramOptions options;
  options.arch = arch;
  const ir::Graph graph = vendor_epilogue_graph(dtype, size);
  state->epilogue = std::make_unique<Program>(Program::compile(graph, options));
  state->product = DeviceBuffer(static_cast<size_t>(graph.inputs()[0]->type.bytes()));
  Executable& exe = state->epilogue->executable();
  exe.bind({&state->product, &inputs.at(2)}, {&outputs.at(0)});
  std::vector<std::string> kernels;
  for (const CompiledKernel& k : state->epilogue->kernels())
    kernels.push_back(fmt::format("{} {}", k.kernel.name, k.kernel.config.str()));
  const CUdeviceptr a = inputs.at(0).ptr(), b = inputs.at(1).ptr();
  return VendorRun{fmt::format("cuBLAS GEMM, then Kiln's epilogue {}", fmt::join(kernels, "; ")),
                   [state, &cublas, p, a, b] {
                     cublas.gemm(p, a, b, state->product.ptr());
                     state->epilogue->executable().launch();
                   }};
}

// cuBLAS on the quantised case's weight dequantised to the activations' dtype once,
// beforehand (untimed) by Kiln's own kernels: the dense product decoding would run
// without quantisation, reading 16-bit weights [N, K].
struct DenseWeight {
  DeviceBuffer weight;
};

VendorRun cublas_on_dequantised(const BenchCase& c, DType dtype, const BenchSize& size,
                                const std::vector<DeviceBuffer>& inputs, std::vector<DeviceBuffer>& outputs,
                                const std::string& arch) {
  const Cublas& cublas = Cublas::get();
  const ir::Graph full = bench_graph(c, dtype, size);
  kiln::Graph g("dequantise_weights");
  const ir::Node& dq = *full.outputs()[0]->producer->operands[1]->producer;
  auto w = g.input("w", dq.operands[0]->type.dtype, dq.operands[0]->type.shape);
  auto s = g.input("s", dq.operands[1]->type.dtype, dq.operands[1]->type.shape);
  g.output(kiln::dequant(w, s, dq.attrs.get_int("group")));
  ProgramOptions options;
  options.arch = arch;
  Program dequantise = Program::compile(g.ir(), options);
  auto state = std::make_shared<DenseWeight>();
  state->weight = DeviceBuffer(static_cast<size_t>(dq.result->type.bytes()));
  dequantise.executable().bind({&inputs.at(1), &inputs.at(2)}, {&state->weight});
  dequantise.executable().launch();
  cu::context_synchronize();  // the dense weight is ready before any timed launch
  GemmProblem p = problem_of(dtype, size);
  p.b_transposed = true;
  const CUdeviceptr x = inputs.at(0).ptr(), out = outputs.at(0).ptr();
  return VendorRun{fmt::format("cublasGemmEx on the weight dequantised to {} beforehand (not timed), fp32 compute",
                               dtype_name(dtype)),
                   [state, &cublas, p, x, out] { cublas.gemm(p, x, state->weight.ptr(), out); }};
}

}  // namespace

std::vector<std::string> vendor_impls(const BenchCase& c) {
  if (c.form != SizeForm::Gemm || is_fp8_case(c)) return {};  // fp8: torch._scaled_mm in bench/peers.py
  if (is_quant_case(c)) return {kCublasImpl};
  if (c.name == "gemm_bias_gelu") return {kCublasEpilogueImpl, kCublasLtImpl};
  return {kCublasImpl, kCublasLtImpl};
}

ir::Graph vendor_epilogue_graph(DType dtype, const BenchSize& size) {
  Shape shape = {size.rows, size.cols};
  if (size.batch > 0) shape.insert(shape.begin(), size.batch);
  kiln::Graph g(fmt::format("gemm_epilogue_{}_{}", dtype_name(dtype), size.str()));
  auto c = g.input("c", dtype, shape);
  auto bias = g.input("bias", dtype, {size.cols});
  g.output(kiln::gelu(c + bias, "tanh"));
  return g.ir().clone();
}

VendorRun make_vendor_run(const std::string& impl, const BenchCase& c, DType dtype, const BenchSize& size,
                          const std::vector<DeviceBuffer>& inputs, std::vector<DeviceBuffer>& outputs,
                          const std::string& arch) {
  bool known = false;
  for (const std::string& name : vendor_impls(c)) known = known || name == impl;
  if (!known) throw Error(fmt::format("benchmark case {} has no vendor row '{}'", c.name, impl));
  const bool fused = c.name == "gemm_bias_gelu";
  const size_t want_inputs = fused || is_quant_case(c) ? 3 : 2;
  if (inputs.size() != want_inputs || outputs.size() != 1)
    throw Error(fmt::format("vendor row {} of {}: expected {} inputs and 1 output, got {} and {}", impl, c.name,
                            want_inputs, inputs.size(), outputs.size()));
  if (is_quant_case(c)) return cublas_on_dequantised(c, dtype, size, inputs, outputs, arch);
  const GemmProblem p = problem_of(dtype, size);
  const CUdeviceptr a = inputs[0].ptr(), b = inputs[1].ptr(), out = outputs[0].ptr();
  if (impl == kCublasImpl) {
    const Cublas& cublas = Cublas::get();
    return VendorRun{p.batch > 1 ? "cublasGemmStridedBatchedEx, fp32 compute" : "cublasGemmEx, fp32 compute",
                     [&cublas, p, a, b, out] { cublas.gemm(p, a, b, out); }};
  }
  if (impl == kCublasEpilogueImpl) return cublas_then_epilogue(dtype, size, inputs, outputs, arch);
  // cuBLASLt: the fused GELU_BIAS epilogue for gemm_bias_gelu, none for the plain products.
  const CUdeviceptr bias = fused ? inputs[2].ptr() : 0;
  auto lt = std::make_shared<LtMatmul>(p, fused ? LtEpilogue::GeluBias : LtEpilogue::None, bias);
  return VendorRun{lt->config(), [lt, a, b, out, bias] { lt->run(a, b, out, bias); }};
}

}  // namespace kiln::runtime
