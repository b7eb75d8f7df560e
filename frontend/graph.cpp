// kiln::Graph and kiln::Tensor: handles over an ir::Graph, and the one place where
// DSL calls become IR nodes (detail::append), each tagged with the user's call site.
#include "frontend/graph.h"

#include <fmt/format.h>

#include <cctype>

#include "ir/error.h"
#include "ir/printer.h"

namespace kiln {

namespace detail {

std::string where(const std::source_location& loc) { return fmt::format("{}:{}", loc.file_name(), loc.line()); }

Tensor append(const std::shared_ptr<ir::Graph>& graph, ir::OpKind op, std::vector<ir::Value*> operands,
              const ir::Attrs& attrs, std::optional<TensorType> annotated, const std::source_location& loc) {
  ir::Value* v = graph->add(op, std::move(operands), attrs, std::move(annotated), where(loc));
  return Tensor(Handle{graph, v});
}

const std::shared_ptr<ir::Graph>& graph_of(const Graph& g) { return g.graph_; }

}  // namespace detail

namespace {

bool is_identifier(const std::string& s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  return true;
}

bool name_taken(const ir::Graph& g, const std::string& name, const ir::Value* except) {
  for (const ir::Value* in : g.inputs())
    if (in != except && in->name == name) return true;
  for (const ir::Node* n : g.nodes())
    if (n->result != except && n->result->name == name) return true;
  return false;
}

}  // namespace

ir::Value* Tensor::value() const {
  if (!valid()) throw Error("kiln::Tensor: this handle is empty (default-constructed); assign it a graph value first");
  return handle_.value;
}

const TensorType& Tensor::type() const { return value()->type; }
const std::string& Tensor::name() const { return value()->name; }

Tensor& Tensor::name(const std::string& new_name, std::source_location loc) {
  ir::Value* v = value();
  if (!is_identifier(new_name))
    throw Error(fmt::format("{}: name '{}' is not an identifier (a letter or '_', then letters, digits, '_')",
                            detail::where(loc), new_name));
  if (name_taken(*handle_.graph, new_name, v))
    throw Error(fmt::format("{}: name '{}' is already used in graph '{}'", detail::where(loc), new_name,
                            handle_.graph->name()));
  v->name = new_name;
  return *this;
}

Graph::Graph(std::string name) : graph_(std::make_shared<ir::Graph>(std::move(name))) {}

Tensor Graph::input(const std::string& name, DType dtype, Shape shape, std::source_location loc) {
  if (!is_identifier(name))
    throw Error(fmt::format("{}: input name '{}' is not an identifier (a letter or '_', then letters, digits, '_')",
                            detail::where(loc), name));
  if (name_taken(*graph_, name, nullptr))
    throw Error(fmt::format("{}: name '{}' is already used in graph '{}'", detail::where(loc), name, graph_->name()));
  try {
    return Tensor(detail::Handle{graph_, graph_->add_input(name, TensorType{dtype, std::move(shape)})});
  } catch (const Error& e) {
    throw Error(detail::where(loc) + ": " + e.what());
  }
}

void Graph::output(const Tensor& t, std::source_location loc) {
  if (!t.valid()) throw Error(detail::where(loc) + ": output: the tensor handle is empty");
  if (t.graph() != graph_)
    throw Error(fmt::format("{}: output: the tensor belongs to graph '{}', not to '{}'", detail::where(loc),
                            t.graph()->name(), graph_->name()));
  graph_->add_output(t.value());
}

std::string Graph::str() const { return ir::print(*graph_); }

}  // namespace kiln
