// Graphs in Python: parsed from the text form, printed back, and a thin builder
// (Graph.input, Graph.op with any op of the text form, Graph.output) whose errors are
// the C++ DSL's, located at the Python caller's line.
#include <fmt/format.h>
#include <pybind11/stl.h>

#include "ir/error.h"
#include "ir/ops.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "python/bindings.h"

namespace py = pybind11;

namespace kiln::python {

DType dtype_from_text(const std::string& name) {
  std::optional<DType> t = parse_dtype(name);
  if (!t) throw Error(fmt::format("unknown dtype '{}' (Kiln's: f32, f16, bf16, i32, i1)", name));
  return *t;
}

namespace {

ir::AttrValue attr_from_python(const std::string& name, const py::handle& v) {
  if (py::isinstance<py::bool_>(v)) return v.cast<bool>();
  if (py::isinstance<py::int_>(v)) return v.cast<int64_t>();
  if (py::isinstance<py::float_>(v)) return v.cast<double>();
  if (py::isinstance<py::str>(v)) return v.cast<std::string>();
  if (py::isinstance<py::sequence>(v)) return v.cast<std::vector<int64_t>>();
  throw Error(fmt::format("attribute {}: a {} is not an attribute value (bool, int, float, str or list of ints)",
                          name, std::string(py::str(py::type::of(v).attr("__name__")))));
}

// "file.py:12", the caller's line (the builder's ops carry it as the DSL's do).
std::string python_caller() {
  py::object frame = py::module_::import("sys").attr("_getframe")(0);
  while (!frame.is_none()) {
    std::string file = py::str(frame.attr("f_code").attr("co_filename"));
    if (file.find("kiln/__init__.py") == std::string::npos)
      return fmt::format("{}:{}", file, frame.attr("f_lineno").cast<int>());
    frame = frame.attr("f_back");
  }
  return "";
}

ValueHandle add_op(GraphHandle& g, const std::string& op, const std::vector<ValueHandle>& operands,
                   const py::dict& attrs, const std::optional<std::pair<std::string, Shape>>& type) {
  std::vector<ir::Value*> values;
  for (const ValueHandle& v : operands) {
    if (v.graph != g.graph) throw Error(fmt::format("{}: an operand belongs to another graph", op));
    values.push_back(v.value);
  }
  std::optional<ir::OpKind> kind = ir::find_op(op, static_cast<int>(values.size()));
  if (!kind) throw Error(fmt::format("unknown op '{}' with {} operand(s)", op, values.size()));
  ir::Attrs a;
  for (const auto& [k, v] : attrs) a.set(k.cast<std::string>(), attr_from_python(k.cast<std::string>(), v));
  std::optional<TensorType> annotated;
  if (type) annotated = TensorType{dtype_from_text(type->first), type->second};
  return {g.graph, g.graph->add(*kind, values, a, annotated, python_caller())};
}

// a OP b for the builder's operators; a Python number becomes a constant of the
// tensor's dtype, as in the C++ DSL.
ValueHandle binary(const std::string& op, const ValueHandle& a, const py::handle& b, bool reflected) {
  GraphHandle g{a.graph};
  ValueHandle other = py::isinstance<ValueHandle>(b)
                          ? b.cast<ValueHandle>()
                          : ValueHandle{a.graph, a.graph->constant(b.cast<double>(), a.value->type.dtype)};
  return reflected ? add_op(g, op, {other, a}, py::dict(), std::nullopt)
                   : add_op(g, op, {a, other}, py::dict(), std::nullopt);
}

}  // namespace

void bind_graph(py::module_& m) {
  py::class_<ValueHandle>(m, "Value", "A value of a graph under construction.")
      .def_property_readonly("dtype", [](const ValueHandle& v) { return std::string(dtype_name(v.value->type.dtype)); })
      .def_property_readonly("shape", [](const ValueHandle& v) { return py::tuple(py::cast(v.value->type.shape)); })
      .def("__repr__", [](const ValueHandle& v) { return fmt::format("<kiln.Value {}>", v.value->type.str()); })
      .def("__add__", [](const ValueHandle& a, py::object b) { return binary("add", a, b, false); })
      .def("__radd__", [](const ValueHandle& a, py::object b) { return binary("add", a, b, true); })
      .def("__sub__", [](const ValueHandle& a, py::object b) { return binary("sub", a, b, false); })
      .def("__rsub__", [](const ValueHandle& a, py::object b) { return binary("sub", a, b, true); })
      .def("__mul__", [](const ValueHandle& a, py::object b) { return binary("mul", a, b, false); })
      .def("__rmul__", [](const ValueHandle& a, py::object b) { return binary("mul", a, b, true); })
      .def("__truediv__", [](const ValueHandle& a, py::object b) { return binary("div", a, b, false); })
      .def("__rtruediv__", [](const ValueHandle& a, py::object b) { return binary("div", a, b, true); })
      .def("__neg__", [](const ValueHandle& a) {
        GraphHandle g{a.graph};
        return add_op(g, "neg", {a}, py::dict(), std::nullopt);
      });

  py::class_<GraphHandle>(m, "Graph", "A graph of tensor ops: parsed (kiln.parse) or built (input, op, output).")
      .def(py::init([](const std::string& name) { return GraphHandle{std::make_shared<ir::Graph>(name)}; }),
           py::arg("name") = "main")
      .def_property_readonly("name", [](const GraphHandle& g) { return g.graph->name(); })
      .def(
          "input",
          [](GraphHandle& g, const std::string& name, const std::string& dtype, const Shape& shape) {
            return ValueHandle{g.graph, g.graph->add_input(name, TensorType{dtype_from_text(dtype), shape})};
          },
          py::arg("name"), py::arg("dtype"), py::arg("shape"), "Adds an input: g.input('x', 'f16', [4096, 4096]).")
      .def("op", &add_op, py::arg("op"), py::arg("operands"), py::arg("attrs") = py::dict(),
           py::arg("type") = py::none(),
           "Appends an op of the text form: g.op('softmax', [x], {'axis': -1}); type=('f32', [4, 8]) for "
           "ops whose result type is given (cast, reshape, broadcast, const).")
      .def(
          "constant",
          [](GraphHandle& g, double value, const std::string& dtype) {
            return ValueHandle{g.graph, g.graph->constant(value, dtype_from_text(dtype))};
          },
          py::arg("value"), py::arg("dtype"), "A scalar constant (broadcasting does the rest).")
      .def(
          "output",
          [](GraphHandle& g, const ValueHandle& v) {
            if (v.graph != g.graph) throw Error("output: the value belongs to another graph");
            g.graph->add_output(v.value);
          },
          py::arg("value"))
      .def("__str__", [](const GraphHandle& g) { return ir::print(*g.graph); });

  m.def(
      "parse",
      [](const std::string& text, const std::string& filename) {
        return GraphHandle{std::make_shared<ir::Graph>(ir::parse(text, filename))};
      },
      py::arg("text"), py::arg("filename") = "<input>", "Parses a graph in Kiln's text form.");
  m.def(
      "parse_file", [](const std::string& path) { return GraphHandle{std::make_shared<ir::Graph>(ir::parse_file(path))}; },
      py::arg("path"), "Parses a .kiln file.");
}

}  // namespace kiln::python
