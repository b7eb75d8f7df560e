// The graph IR: SSA values with a TensorType, nodes (one op each) in
// topological order, named inputs and an ordered list of outputs.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ir/attrs.h"
#include "ir/ops.h"
#include "ir/shape.h"

namespace kiln::ir {

struct Node;

struct Value {
  int id = 0;              // unique within its graph, stable across printing
  TensorType type;
  std::string name;        // printed as %name; empty: printed as a number
  Node* producer = nullptr;  // null for graph inputs
};

struct Node {
  OpKind op;
  std::vector<Value*> operands;
  Attrs attrs;             // complete: every attribute of the op's schema
  Value* result = nullptr;
  std::string loc;         // where the user wrote it ("file:line:col"), may be empty
  int group = -1;          // index into Graph::groups(); -1: not in a fused kernel
};

// A fused kernel's group of nodes, made by the `fuse` pass. Its nodes are
// contiguous in the graph's node order; it prints as a `kernel @name kind { ... }` block.
struct Group {
  std::string name;  // "k0", "k1", ...
  std::string kind;  // "pointwise", "row_reduce", "col_reduce", "gemm", "attention"
  // The kernel's tile config as named integers ({threads = 256, elems = 8, vec = 8});
  // empty until the `tile` pass picks one (ir::TileConfig::from_attrs reads it back).
  Attrs tile = {};
};

class Graph {
public:
  explicit Graph(std::string name = "main") : name_(std::move(name)) {}
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;
  Graph(Graph&&) = default;
  Graph& operator=(Graph&&) = default;

  const std::string& name() const { return name_; }
  void set_name(std::string n) { name_ = std::move(n); }

  Value* add_input(const std::string& name, TensorType type);
  // Appends a node: fills in default attributes, infers the result type and
  // checks it against `annotated` when given. Throws kiln::Error (prefixed by
  // `loc` when given) on any broken rule; the graph is unchanged then.
  Value* add(OpKind op, std::vector<Value*> operands, const Attrs& attrs = {},
             std::optional<TensorType> annotated = std::nullopt, std::string loc = "");
  // Convenience for passes: a scalar constant of dtype `dt`.
  Value* constant(double value, DType dt, Shape shape = {});
  void add_output(Value* v) { outputs_.push_back(v); }
  void set_outputs(std::vector<Value*> outs) { outputs_ = std::move(outs); }

  const std::vector<Value*>& inputs() const { return inputs_; }
  const std::vector<Value*>& outputs() const { return outputs_; }
  // Nodes in topological order (every operand is defined before its use).
  std::vector<Node*> nodes() const;
  size_t num_nodes() const { return nodes_.size(); }

  const std::vector<Group>& groups() const { return groups_; }
  Group& group(int index) { return groups_.at(static_cast<size_t>(index)); }
  int add_group(Group grp) {
    groups_.push_back(std::move(grp));
    return static_cast<int>(groups_.size()) - 1;
  }
  void clear_groups();  // forgets every group (nodes go back to group -1)
  // Reorders nodes by a permutation of nodes() (a new topological order).
  void reorder(const std::vector<Node*>& order);

  // Rewriting helpers for passes.
  void replace_all_uses(Value* from, Value* to);  // operands and outputs
  // Removes nodes whose results reach no output; returns how many it removed.
  int remove_dead_nodes();
  // Moves the nodes appended since `mark` (a num_nodes() taken earlier) to just
  // before `before`, keeping their order; used when a pass expands one node.
  void move_tail_before(size_t mark, const Node* before);
  // Uses of each value by nodes (outputs are not counted).
  std::vector<std::vector<Node*>> users() const;  // indexed by Value::id
  int num_value_ids() const { return next_id_; }

  // A deep copy with the same names and ids.
  Graph clone() const;

private:
  Value* new_value(TensorType type, std::string name, Node* producer);

  std::string name_;
  std::vector<std::unique_ptr<Value>> values_;
  std::vector<std::unique_ptr<Node>> nodes_;
  std::vector<Value*> inputs_, outputs_;
  std::vector<Group> groups_;
  int next_id_ = 0;
};

// Checks every invariant: operand order, attributes complete and legal, every
// result type equal to what the op table infers, outputs defined, names unique.
// Throws kiln::Error naming the node, the op, the operand types and the rule.
void verify(const Graph& g);

}  // namespace kiln::ir
