// The C++ DSL's graph and tensor handles. kiln::Graph owns an ir::Graph; the DSL's
// functions and operators (frontend/ops.h) append nodes to it; kiln::Tensor is a
// cheap handle to one of its values. The IR must not be rewritten (passes) while
// the DSL still builds on it: handles point at its values.
#pragma once
#include <memory>
#include <optional>
#include <source_location>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace kiln {

inline constexpr DType f32 = DType::f32;
inline constexpr DType f16 = DType::f16;
inline constexpr DType bf16 = DType::bf16;
inline constexpr DType i32 = DType::i32;
inline constexpr DType i1 = DType::i1;
inline constexpr DType i8 = DType::i8;
inline constexpr DType i4 = DType::i4;

class Graph;
class Tensor;

namespace detail {
// What a Tensor handle refers to: a value and the graph that owns it.
struct Handle {
  std::shared_ptr<ir::Graph> graph;
  ir::Value* value = nullptr;
};
// "FILE:LINE" of a call site, the `loc` every DSL node carries.
std::string where(const std::source_location& loc);
// Appends one node to `graph` with the call site as its location and returns its result.
Tensor append(const std::shared_ptr<ir::Graph>& graph, ir::OpKind op, std::vector<ir::Value*> operands,
              const ir::Attrs& attrs, std::optional<TensorType> annotated, const std::source_location& loc);
const std::shared_ptr<ir::Graph>& graph_of(const Graph& g);
}  // namespace detail

// A handle to a value of a kiln::Graph. Copies refer to the same value.
// A default-constructed handle is empty; using it throws kiln::Error.
class Tensor {
public:
  Tensor() = default;
  explicit Tensor(detail::Handle h) : handle_(std::move(h)) {}

  bool valid() const { return handle_.value != nullptr; }
  const TensorType& type() const;
  DType dtype() const { return type().dtype; }
  const Shape& shape() const { return type().shape; }
  int rank() const { return type().rank(); }
  std::string str() const { return type().str(); }  // "f16[8192,4096]"

  // The name the value prints with (%name); empty when it prints as a number.
  const std::string& name() const;
  // Sets the printed name; it must be an identifier not already used in the graph.
  Tensor& name(const std::string& new_name, std::source_location loc = std::source_location::current());

  ir::Value* value() const;
  const std::shared_ptr<ir::Graph>& graph() const { return handle_.graph; }

private:
  detail::Handle handle_;
};

// A graph under construction:
//   kiln::Graph g("add_rmsnorm");
//   auto x = g.input("x", kiln::f16, {8192, 4096});
//   g.output(kiln::exp(x));
class Graph {
public:
  explicit Graph(std::string name = "main");

  Tensor input(const std::string& name, DType dtype, Shape shape,
               std::source_location loc = std::source_location::current());
  // Appends `t` to the graph's outputs (in call order; a graph may have several).
  void output(const Tensor& t, std::source_location loc = std::source_location::current());

  const std::string& name() const { return graph_->name(); }
  ir::Graph& ir() { return *graph_; }
  const ir::Graph& ir() const { return *graph_; }
  std::string str() const;  // the text form (ir::print)

private:
  friend const std::shared_ptr<ir::Graph>& detail::graph_of(const Graph& g);
  std::shared_ptr<ir::Graph> graph_;
};

}  // namespace kiln
