// What the Python module's binding files share: the graph handles Python holds, and
// one function per file that adds its part to the module.
#pragma once
#include <pybind11/pybind11.h>

#include <memory>
#include <string>

#include "ir/graph.h"

namespace kiln::python {

// A graph, parsed or under construction; values built on it keep it alive.
struct GraphHandle {
  std::shared_ptr<ir::Graph> graph;
};

// A value of a graph under construction (the builder's tensors).
struct ValueHandle {
  std::shared_ptr<ir::Graph> graph;
  ir::Value* value = nullptr;
};

DType dtype_from_text(const std::string& name);  // "f16" -> DType::f16; throws kiln::Error

void bind_graph(pybind11::module_& m);    // graph_bindings.cpp: parse, print, the builder
void bind_program(pybind11::module_& m);  // program_bindings.cpp: compile, run on DLPack tensors

}  // namespace kiln::python
