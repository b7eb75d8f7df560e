// The extension module kiln._kiln: kiln::Error becomes kiln.Error (a RuntimeError)
// with the same message; the rest is bound in graph_bindings.cpp and program_bindings.cpp.
#include <pybind11/pybind11.h>

#include "ir/error.h"
#include "python/bindings.h"
#include "runtime/cuda_driver.h"

namespace py = pybind11;

PYBIND11_MODULE(_kiln, m) {
  m.doc() = "Kiln: graphs of tensor ops compiled to fused CUDA kernels";
  m.attr("__version__") = KILN_VERSION;
  py::register_exception<kiln::Error>(m, "Error", PyExc_RuntimeError);
  m.def(
      "gpu_available", [] { return kiln::runtime::gpu_available(); },
      "Whether a CUDA GPU can be used here (see why_no_gpu()).");
  m.def(
      "why_no_gpu",
      [] {
        std::string why;
        kiln::runtime::gpu_available(&why);
        return why;
      },
      "Why no GPU can be used here (\"libcuda.so.1 not found\", ...); empty when one can.");
  kiln::python::bind_graph(m);
  kiln::python::bind_program(m);
}
