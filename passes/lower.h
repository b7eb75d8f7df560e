// Lowering: a fused (and tiled) graph becomes its kernels, in launch order, and a
// buffer plan saying which graph values are inputs, outputs and intermediates.
// Codegen reads the kernels; the runtime allocates and binds the buffers.
#pragma once
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/graph.h"
#include "ir/kernel.h"

namespace kiln::passes {

enum class BufferRole { Input, Output, Intermediate };

// A tensor in device memory, one per graph value that crosses a kernel boundary.
struct Buffer {
  int value_id = -1;  // ir::Value::id, which KernelArg::value_id refers to
  std::string name;   // the value's printed name
  TensorType type;
  BufferRole role = BufferRole::Intermediate;
};

struct Plan {
  std::vector<ir::Kernel> kernels;  // in launch order
  std::vector<Buffer> buffers;      // graph inputs first, then in order of first write
  std::vector<int> inputs;          // per graph input: an index into buffers
  // Per graph output: an index into buffers. A graph that returns one of its inputs
  // names an Input buffer here; the caller copies it.
  std::vector<int> outputs;

  int buffer_of(int value_id) const;  // -1 when no buffer holds that value
};

// Lowers every kernel group; each group's config is its `tile` attribute (validated)
// or, when the tile pass has not run, the heuristic's. Throws kiln::Error when a live
// node is outside every group ("sum: no kernel kind handles reductions yet") or a
// group cannot be one kernel.
Plan lower(const ir::Graph& g);

// The kernel of one group, with its config as in lower(), from its kind's lowering
// (passes/lower_<kind>.cpp). `names` are the printed names (ir::value_names(g)).
ir::Kernel lower_group(const ir::Graph& g, int group, const std::unordered_map<int, std::string>& names);

// The pointwise kind's body (passes/lower_pointwise.cpp, through the scalar body
// builder of passes/body_builder.h), which lower_group uses and which fuse asks
// whether a set of values can be computed by one pointwise kernel. It walks back from
// `roots` (one shape: the iteration space) through every value for which
// `computed_inside` is true, folding views into index maps; other values are loaded.
struct PointwiseBuild {
  ir::Kernel kernel;                    // args, body; no config, no fused_nodes
  std::set<const ir::Node*> nodes;      // the nodes computed inside
  std::vector<const ir::Value*> loads;  // the values read from memory, first use first
  // Set when a reshape cannot become index arithmetic (it regroups elements that an
  // inner view or broadcast has already reordered): the value under the reshape,
  // which another kernel must write to memory first, and the reshape itself.
  const ir::Value* must_load = nullptr;
  const ir::Node* failed_reshape = nullptr;
  std::string failure;  // row reductions: why must_load could not be computed inside
};
PointwiseBuild build_pointwise(const std::string& name, const std::vector<const ir::Value*>& roots,
                               const std::function<bool(const ir::Value*)>& computed_inside,
                               const std::unordered_map<int, std::string>& names);

// The same for a row-reduce kernel (passes/lower_row_reduce.cpp) over `rows`
// ([rows..., N], N reduced): roots are full-size ([rows..., N]) or per-row
// ([rows..., 1] or [rows...]); reductions of values of shape `rows` along the last
// axis, computed inside, become Reduce ops.
PointwiseBuild build_row_reduce(const std::string& name, const Shape& rows, const std::vector<const ir::Value*>& roots,
                                const std::function<bool(const ir::Value*)>& computed_inside,
                                const std::unordered_map<int, std::string>& names);

// A reduction that a col_reduce kernel takes: a tensor of shape `space` reduced
// over `axes` (sorted), any set of them: a column sum of [M, N] over axis 0, a full
// reduction, [B, S, D] over [1] (a middle axis) or over [0, 2].
struct ColReduction {
  Shape space;
  std::vector<int64_t> axes;
};
std::optional<ColReduction> col_reduction(const ir::Node& n);

// The same for a col-reduce kernel (passes/lower_col_reduce.cpp): roots hold one
// value per column (the space without its reduced dims, or with them kept as 1);
// reductions of values of the space's shape over those dims become Reduce ops, and
// none may read another.
PointwiseBuild build_col_reduce(const std::string& name, const ColReduction& cols,
                                const std::vector<const ir::Value*>& roots,
                                const std::function<bool(const ir::Value*)>& computed_inside,
                                const std::unordered_map<int, std::string>& names);

// The row space of a row reduction node (its operand's shape) when it reduces the
// innermost axis only (other reduced axes have size 1), of a float or i32 tensor; else
// empty.
Shape row_reduction_space(const ir::Node& n);

}  // namespace kiln::passes
