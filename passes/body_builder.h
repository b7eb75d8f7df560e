// The scalar body builder that every kernel kind's lowering shares (passes/lower_*.cpp):
// starting from each output at an index map, it asks for every value "at a map"
// (value index = M * iteration index), pushes views into the map (broadcast zeroes
// rows, transpose permutes them, reshape regroups a linear index) and emits one
// scalar op per (value, map) pair, loads for values computed elsewhere. A kind's
// lowering picks the iteration space and the maps of its outputs; the builder does
// the rest, so that element-wise prologues and epilogues mean the same in every kind.
// Internal to passes/.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "ir/graph.h"
#include "ir/kernel.h"
#include "passes/lower.h"

namespace kiln::passes {

// Row k, column d: how far value index k moves per step of iteration index d.
using Map = std::vector<std::vector<int64_t>>;

// Each dim of `space` at its own index (0 on size-1 dims): the map of a full-size output.
Map identity_map(const Shape& space);

class BodyBuilder {
public:
  // `rows`: a row-reduce kernel over `space` (its last dim reduced); else pointwise.
  // `inside` says which values the kernel computes; the others are loaded.
  BodyBuilder(const std::string& name, Shape space, const std::function<bool(const ir::Value*)>& inside,
              const std::unordered_map<int, std::string>& names, bool rows = false);

  // Makes this a col-reduce kernel over `space` reducing `axes` (see col_reduction).
  void reduce_columns(const std::vector<int64_t>& axes);

  // Where a per-column value of `shape` (the space without its reduced dims, or with
  // them kept as 1) sits for the current column.
  std::optional<Map> col_map(const Shape& shape) const;

  // Where a per-row value of `shape` ([rows..., 1] or [rows...]) sits for the current row.
  std::optional<Map> row_map(const Shape& shape) const;

  // The scalar id of `v` at map `m`, or -1 once a reshape failed (see must_load).
  int demand(const ir::Value* v, const Map& m);

  // The build: one output argument and store per root, of the value `ids[i]` at map `maps[i]`.
  PointwiseBuild finish(const std::vector<const ir::Value*>& roots, const std::vector<int>& ids,
                        const std::vector<Map>& maps);

  // The build so far, after demand returned -1 (must_load says why).
  PointwiseBuild failed() { return std::move(result_); }

private:
  using Demand = std::pair<const ir::Value*, Map>;
  // A reshape chain read back to the first value that is not a reshape computed inside.
  struct ReshapeSource {
    std::vector<int64_t> offsets;             // the linear offset per iteration step
    std::vector<const ir::Node*> chain;       // the inner reshapes folded away
    const ir::Value* value = nullptr;         // loaded, or computed at `map`
    std::optional<Map> map;                   // unset: loaded, or the reshape fails
  };

  void prepare(const ir::Value* v, const Map& m);
  std::vector<Demand> operand_demands(const ir::Value* v, const Map& m) const;
  bool reduces_this_row(const ir::Value* v, const Map& m) const;
  bool reduces_this_column(const ir::Value* v, const Map& m) const;
  ReshapeSource reshape_source(const ir::Value* v, const Map& m) const;
  int compute(const ir::Value* v, const Map& m);
  int reduce(const ir::Value* v, const Map& m);
  int reduce_column(const ir::Value* v, const Map& m);
  int phase_under(int x) const;
  int reshape(const ir::Value* v, const Map& m);
  int load(const ir::Value* v, std::vector<int64_t> strides);
  int constant(double value, DType dt);
  template <class Key>
  int add_memo(ir::ScalarOp op, std::map<Key, int>& memo, const Key& key);
  std::string unique_name(const ir::Value* v);

  Shape space_;
  const std::function<bool(const ir::Value*)>& inside_;
  const std::unordered_map<int, std::string>& names_;
  bool rows_ = false;
  std::vector<int64_t> reduced_;  // col_reduce: the reduced dims of the space
  PointwiseBuild result_;
  std::vector<ir::KernelArg> inputs_;
  std::map<std::pair<int, std::vector<int64_t>>, int> memo_;     // (value, map) -> id
  std::map<std::pair<int, std::vector<int64_t>>, int> arg_of_;   // (value, strides) -> input arg
  std::map<int, int> load_memo_;                                 // input arg -> id
  std::map<std::pair<uint64_t, int>, int> const_memo_;           // (value bits, dtype) -> id
  std::map<std::pair<std::vector<int64_t>, int>, int> index_memo_;  // (coeffs, dtype) -> id
  std::unordered_set<std::string> used_names_;
};

// Finishes a reduction kernel: every root must have the shape `map_of` maps (else the
// error says it is `expected`) and be computed inside the kernel.
PointwiseBuild demand_outputs(BodyBuilder& b, const std::string& name, const std::vector<const ir::Value*>& roots,
                              const std::function<bool(const ir::Value*)>& computed_inside,
                              const std::unordered_map<int, std::string>& names,
                              const std::function<std::optional<Map>(const Shape&)>& map_of,
                              const std::string& expected);

}  // namespace kiln::passes
