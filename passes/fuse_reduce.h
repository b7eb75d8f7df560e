// Row-reduce grouping for the `fuse` pass: each reduction along the innermost axis
// takes its element-wise producers (prologue), the element-wise consumers that combine
// the reduced value with the row (epilogue) and the later reductions of the same rows
// (softmax's sum of exp(x - max), LayerNorm's variance) into one kernel group. Each
// reduction over outer dims (a column sum, a full sum) does the same as a col_reduce
// group: element-wise producers, and element-wise consumers of the reduced columns.
#pragma once
#include <set>
#include <string>
#include <unordered_set>
#include <vector>

#include "ir/graph.h"

namespace kiln::passes {

struct RowGroup {
  Shape rows;                       // the row space [rows..., N]; col_reduce: the reduced operand's space
  std::set<const ir::Node*> nodes;  // computed inside; constants and views may be shared
  std::string kind = "row_reduce";  // or "col_reduce"
  std::vector<int64_t> reduced_axes;  // col_reduce: the reduced dims of `rows`
};

// The row-reduce groups of a graph without groups, in the order of their first
// reduction, then the col-reduce groups likewise. A node that computes (element-wise op or reduction) joins at most one
// group; constants and views may appear in several (fuse copies them). Every group
// passes build_row_reduce and reads nothing that depends on what it computes.
// Nodes that `planned` groups compute are left to them.
std::vector<RowGroup> plan_row_groups(const ir::Graph& g, const std::vector<RowGroup>& planned = {});

// Whether a node is free to copy (a constant, iota or view).
bool is_free_node(const ir::Node& n);
// Whether a node reads or makes i8, i4 or fp8 values, which only pointwise kernels load and
// store (row, column, gemm and attention kernels read them once a pointwise kernel has
// cast them, and leave casts to i8 to a pointwise kernel).
bool touches_storage_type(const ir::Node& n);

// What the groupers (row, column, gemm) share. Whether `v` is computed, through any
// chain of nodes, from a computing node of `group` (its free nodes are recomputed by
// every kernel that reads them, so reading one makes nothing wait):
bool depends_on_group(const ir::Value* v, const std::set<const ir::Node*>& group);
// The computed values of `group` that leave it: graph outputs, or read by a live node
// outside it, directly or through a view or constant of the group that does. `nodes` in graph order, `users` per value id (ir::Graph::users()).
std::vector<const ir::Value*> escaping_values(const std::set<const ir::Node*>& group,
                                              const std::vector<ir::Node*>& nodes,
                                              const std::vector<std::vector<ir::Node*>>& users,
                                              const std::unordered_set<const ir::Node*>& live,
                                              const std::unordered_set<const ir::Value*>& outputs);

}  // namespace kiln::passes
