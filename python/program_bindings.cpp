// Compiling in Python, and running a program on the caller's tensors: each tensor is
// borrowed through DLPack, or described by kiln/__init__.py (PyTorch CUDA tensors: no
// copy either way), checked with the C++ API's checks and messages, and the kernels are
// enqueued on the caller's stream.
#include <fmt/format.h>
#include <pybind11/stl.h>

#include "ir/error.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "python/bindings.h"
#include "python/dlpack_import.h"
#include "runtime/bench_cases.h"
#include "runtime/program.h"

namespace py = pybind11;

namespace kiln::python {

namespace {

struct TensorSpec {
  std::string name;
  TensorType type;
};

std::vector<TensorSpec> specs(const passes::Plan& plan, const std::vector<int>& buffers) {
  std::vector<TensorSpec> out;
  for (int b : buffers) out.push_back({plan.buffers[b].name, plan.buffers[b].type});
  return out;
}

// None: the legacy default stream; an int: a CUstream / cudaStream_t handle; a
// torch.cuda.Stream (.cuda_stream) or a cupy.cuda.Stream (.ptr).
CUstream stream_from_python(const py::handle& s) {
  if (s.is_none()) return nullptr;
  py::object handle = py::reinterpret_borrow<py::object>(s);
  if (py::hasattr(s, "cuda_stream")) handle = s.attr("cuda_stream");
  else if (py::hasattr(s, "ptr")) handle = s.attr("ptr");
  if (!py::isinstance<py::int_>(handle))
    throw Error("stream: expected None, an int handle, a torch.cuda.Stream or a cupy.cuda.Stream");
  return reinterpret_cast<CUstream>(handle.cast<uintptr_t>());
}

std::unique_ptr<runtime::Program> compile(const py::handle& graph, const std::string& arch,
                                          const std::optional<std::string>& pipeline, bool tune) {
  runtime::ProgramOptions options;
  options.arch = arch;
  options.tune = tune;
  if (pipeline) options.pipeline = *pipeline;
  if (py::isinstance<py::str>(graph))
    return std::make_unique<runtime::Program>(runtime::Program::compile(ir::parse(graph.cast<std::string>()), options));
  return std::make_unique<runtime::Program>(runtime::Program::compile(*graph.cast<GraphHandle&>().graph, options));
}

void run(runtime::Program& p, const py::sequence& inputs, const py::sequence& outputs, const py::handle& stream) {
  const passes::Plan& plan = p.plan();
  if (inputs.size() != plan.inputs.size() || outputs.size() != plan.outputs.size())
    throw Error(fmt::format("the graph takes {} input(s) and {} output(s); {} and {} tensors were given",
                            plan.inputs.size(), plan.outputs.size(), inputs.size(), outputs.size()));
  CUstream s = stream_from_python(stream);
  std::vector<BorrowedTensor> borrowed;
  std::vector<std::string> what;
  std::vector<TensorType> expected;
  auto borrow = [&](const py::handle& obj, int buffer, const std::string& label) {
    what.push_back(fmt::format("{} %{}", label, plan.buffers[buffer].name));
    expected.push_back(plan.buffers[buffer].type);
    borrowed.push_back(borrow_tensor(obj, s, expected.back(), what.back()));
    runtime::check_device_tensor(borrowed.back().tensor, expected.back(), what.back());
  };
  for (size_t i = 0; i < inputs.size(); ++i) borrow(inputs[i], plan.inputs[i], fmt::format("input {}", i));
  for (size_t i = 0; i < outputs.size(); ++i) borrow(outputs[i], plan.outputs[i], fmt::format("output {}", i));
  for (size_t i = 0; i < borrowed.size(); ++i) require_cuda_memory(borrowed[i], expected[i], what[i]);

  std::vector<runtime::DeviceTensor> ins, outs;
  for (size_t i = 0; i < borrowed.size(); ++i) (i < inputs.size() ? ins : outs).push_back(borrowed[i].tensor);
  py::gil_scoped_release no_gil;  // launches only enqueue; other Python threads may run
  p.run(ins, outs, s);
}

// A CUDA tensor as the Python side describes it: data pointer, Kiln dtype name, shape,
// strides in elements.
using Described = std::tuple<uintptr_t, std::string, std::vector<int64_t>, std::vector<int64_t>>;

// run() for tensors the caller has described (kiln/__init__.py does it for PyTorch CUDA
// tensors of Kiln's dtypes on the current stream): a few attribute reads a tensor
// instead of a DLPack export, which costs PyTorch 10-20 us a tensor. The same checks and
// messages follow, in C++.
void run_described(runtime::Program& p, const std::vector<Described>& inputs, const std::vector<Described>& outputs,
                   uintptr_t stream) {
  // Program::run checks the count, dtypes, shapes, strides and pointers, with run()'s messages.
  auto tensors = [](const std::vector<Described>& described, const char* side) {
    std::vector<runtime::DeviceTensor> out;
    for (size_t i = 0; i < described.size(); ++i) {
      const auto& [ptr, dtype_name, shape, strides] = described[i];
      const std::optional<DType> dtype = parse_dtype(dtype_name);
      if (!dtype) throw Error(fmt::format("{} {}: '{}' is not one of Kiln's dtypes", side, i, dtype_name));
      out.push_back(runtime::DeviceTensor{static_cast<CUdeviceptr>(ptr), *dtype, Shape(shape), strides});
    }
    return out;
  };
  const std::vector<runtime::DeviceTensor> ins = tensors(inputs, "input"), outs = tensors(outputs, "output");
  py::gil_scoped_release no_gil;
  p.run(ins, outs, reinterpret_cast<CUstream>(stream));
}

}  // namespace

void bind_program(py::module_& m) {
  py::class_<TensorSpec>(m, "TensorSpec", "A program's input or output: name, dtype and shape.")
      .def_readonly("name", &TensorSpec::name)
      .def_property_readonly("dtype", [](const TensorSpec& t) { return std::string(dtype_name(t.type.dtype)); })
      .def_property_readonly("shape", [](const TensorSpec& t) { return py::tuple(py::cast(t.type.shape)); })
      .def("__repr__", [](const TensorSpec& t) { return fmt::format("TensorSpec(%{}: {})", t.name, t.type.str()); });

  py::class_<runtime::Program>(m, "Program", "A compiled graph (kiln.compile); call it on tensors.")
      .def_property_readonly("arch", &runtime::Program::arch)
      .def_property_readonly("inputs", [](const runtime::Program& p) { return specs(p.plan(), p.plan().inputs); })
      .def_property_readonly("outputs", [](const runtime::Program& p) { return specs(p.plan(), p.plan().outputs); })
      .def_property_readonly("graph", [](const runtime::Program& p) { return ir::print(p.graph()); },
                             "The graph after the pass pipeline, as text.")
      .def_property_readonly(
          "kernels",
          [](const runtime::Program& p) {
            py::list out;
            for (const runtime::CompiledKernel& k : p.kernels()) {
              py::dict d;
              d["name"] = k.kernel.name;
              d["kind"] = std::string(ir::kernel_kind_name(k.kernel.kind));
              d["config"] = k.kernel.config.str();
              d["cuda"] = k.source;
              d["ptx_bytes"] = k.binary.ptx.size();
              d["cubin_bytes"] = k.binary.cubin.size();
              out.append(d);
            }
            return out;
          },
          "One dict per kernel: name, kind, config, cuda (the source), ptx_bytes, cubin_bytes.")
      .def("_run_described", &run_described, py::arg("inputs"), py::arg("outputs"), py::arg("stream"),
           "run() for tensors described as (data pointer, dtype name, shape, strides); kiln/__init__.py's fast "
           "path for PyTorch tensors.")
      .def("run", &run, py::arg("inputs"), py::arg("outputs"), py::arg("stream") = py::none(),
           "Runs in place on DLPack tensors (inputs, then outputs, in graph order), enqueued on `stream` "
           "(None: the legacy default stream); returns without waiting.");

  m.def(
      "bench_graph",
      [](const std::string& case_name, const std::string& dtype, const std::string& size) {
        const runtime::BenchCase& c = runtime::find_bench_case(case_name);
        std::vector<runtime::BenchSize> sizes = runtime::parse_bench_sizes(size);
        if (sizes.size() != 1) throw Error(fmt::format("bench_graph: one size, got '{}'", size));
        runtime::check_size_form(c, sizes[0]);
        return GraphHandle{
            std::make_shared<ir::Graph>(runtime::bench_graph(c, dtype_from_text(dtype), sizes[0]))};
      },
      py::arg("case"), py::arg("dtype"), py::arg("size"),
      "The graph of a `kiln bench` case: bench_graph('softmax', 'f16', '32768x4096').");
  m.def("compile", &compile, py::arg("graph"), py::arg("arch") = "", py::arg("pipeline") = py::none(),
        py::arg("tune") = false,
        "Compiles a kiln.Graph or a graph's text: passes, fusion, CUDA, NVRTC. arch: e.g. 'sm_90a' (default: "
        "KILN_ARCH, else the GPU's).");
}

}  // namespace kiln::python
