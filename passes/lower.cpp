// Lowering of fused groups to kernels. The heart is the pointwise builder: starting
// from each output at the identity index map, it asks for every value "at a map"
// (value index = M * iteration index), pushes views into the map (broadcast zeroes
// rows, transpose permutes them, reshape regroups a linear index) and emits one
// scalar op per (value, map) pair, loads for values computed elsewhere.
#include "passes/lower.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <map>
#include <optional>
#include <set>
#include <unordered_set>

#include "ir/error.h"
#include "ir/printer.h"
#include "passes/lower_gemm.h"

namespace kiln::passes {

using ir::Node;
using ir::OpKind;
using ir::Value;

namespace {

// Row k, column d: how far value index k moves per step of iteration index d.
using Map = std::vector<std::vector<int64_t>>;

Map identity_map(const Shape& space) {
  Map m(space.size(), std::vector<int64_t>(space.size(), 0));
  for (size_t d = 0; d < space.size(); ++d) m[d][d] = space[d] == 1 ? 0 : 1;
  return m;
}

// numpy broadcasting read backwards: the operand's dims align with the result's
// trailing dims, and a size-1 operand dim always has index 0.
Map broadcast_map(const Shape& from, const Shape& to, const Map& m) {
  const size_t lead = to.size() - from.size();
  const size_t cols = m.empty() ? 0 : m[0].size();
  Map out(from.size(), std::vector<int64_t>(cols, 0));
  for (size_t k = 0; k < from.size(); ++k)
    if (from[k] != 1) out[k] = m[lead + k];
  return out;
}

// The offset into a row-major tensor of `shape`, per step of each iteration index.
std::vector<int64_t> linear_strides(const Shape& shape, const Map& m, size_t rank) {
  std::vector<int64_t> c(rank, 0);
  Shape rs = row_major_strides(shape);
  for (size_t k = 0; k < shape.size(); ++k)
    for (size_t d = 0; d < rank; ++d) c[d] += rs[k] * m[k][d];
  return c;
}

// The map onto a tensor of shape `w` that reaches linear offset sum_d c[d] * i[d].
// It exists when each iteration index moves exactly one of w's digits and no digit
// can carry into the next: then the mixed-radix digits are the indices.
std::optional<Map> unflatten(const std::vector<int64_t>& c, const Shape& w, const Shape& space) {
  Shape rs = row_major_strides(w);
  Map m(w.size(), std::vector<int64_t>(space.size(), 0));
  std::vector<int64_t> top(w.size(), 0);  // the largest value each digit reaches
  for (size_t d = 0; d < space.size(); ++d) {
    if (space[d] == 1 || c[d] == 0) continue;
    std::optional<size_t> digit;
    for (size_t j = 0; j < w.size(); ++j)
      if (w[j] > 1 && rs[j] <= c[d] && c[d] < rs[j] * w[j]) digit = j;
    if (!digit || c[d] % rs[*digit] != 0) return std::nullopt;
    int64_t q = c[d] / rs[*digit];
    m[*digit][d] = q;
    top[*digit] += (space[d] - 1) * q;
  }
  for (size_t j = 0; j < w.size(); ++j)
    if (top[j] >= w[j] && w[j] > 1) return std::nullopt;
  return m;
}

std::vector<int64_t> flatten(const Map& m) {
  std::vector<int64_t> out;
  for (const auto& row : m) out.insert(out.end(), row.begin(), row.end());
  out.push_back(static_cast<int64_t>(m.size()));  // keeps maps of different ranks apart
  return out;
}

class Builder {
public:
  // `rows`: a row-reduce kernel over `space` (its last dim reduced); else pointwise.
  Builder(const std::string& name, Shape space, const std::function<bool(const Value*)>& inside,
          const std::unordered_map<int, std::string>& names, bool rows = false)
      : space_(std::move(space)), inside_(inside), names_(names), rows_(rows) {
    result_.kernel.name = name;
    result_.kernel.kind = rows ? ir::KernelKind::RowReduce : ir::KernelKind::Pointwise;
    if (rows) result_.kernel.row_space = space_;
  }

  // Makes this a col-reduce kernel over `space` reducing `axes` (see col_reduction).
  void reduce_columns(const std::vector<int64_t>& axes) {
    reduced_ = axes;
    result_.kernel.kind = ir::KernelKind::ColReduce;
    result_.kernel.row_space = space_;
    result_.kernel.reduced_axes = axes;
  }

  // Where a per-column value of `shape` (the space without its reduced dims, or with
  // them kept as 1) sits for the current column.
  std::optional<Map> col_map(const Shape& shape) const {
    Map id = identity_map(space_);
    Shape kept, keepdim = space_;
    Map kept_map;
    for (size_t d = 0; d < space_.size(); ++d) {
      bool reduced = std::count(reduced_.begin(), reduced_.end(), static_cast<int64_t>(d)) > 0;
      if (reduced) keepdim[d] = 1;
      if (reduced) continue;
      kept.push_back(space_[d]);
      kept_map.push_back(id[d]);
    }
    if (shape == keepdim) return broadcast_map(shape, space_, id);
    if (shape == kept) return kept_map;
    return std::nullopt;
  }

  // Where a per-row value of `shape` ([rows..., 1] or [rows...]) sits for the current row.
  std::optional<Map> row_map(const Shape& shape) const {
    Shape keep(space_.begin(), space_.end() - 1);
    Shape keepdim = keep;
    keepdim.push_back(1);
    Map id = identity_map(space_);
    if (shape == space_) return id;
    if (shape == keepdim) return broadcast_map(shape, space_, id);
    if (shape == keep) return Map(id.begin(), id.end() - 1);
    return std::nullopt;
  }

  // The scalar id of `v` at map `m`, or -1 once a reshape failed (see must_load).
  int demand(const Value* v, const Map& m) {
    if (result_.must_load) return -1;
    auto key = std::make_pair(v->id, flatten(m));
    if (auto it = memo_.find(key); it != memo_.end()) return it->second;
    int id = compute(v, m);
    if (id >= 0) memo_[key] = id;
    return id;
  }

  PointwiseBuild finish(const std::vector<const Value*>& roots, const std::vector<int>& ids,
                        const std::vector<Map>& maps) {
    ir::Kernel& k = result_.kernel;
    k.args = inputs_;
    for (size_t i = 0; i < roots.size(); ++i) {
      std::vector<int64_t> strides = linear_strides(roots[i]->type.shape, maps[i], space_.size());
      for (size_t d = 0; d < space_.size(); ++d)
        if (space_[d] == 1) strides[d] = 0;
      k.args.push_back(ir::KernelArg{unique_name(roots[i]), roots[i]->type, true, strides, roots[i]->id});
      ir::ScalarOp store;
      store.kind = ir::ScalarKind::Store;
      store.dtype = roots[i]->type.dtype;
      store.arg = static_cast<int>(k.args.size()) - 1;
      store.operands = {ids[i]};
      k.add(std::move(store));
    }
    return std::move(result_);
  }

  PointwiseBuild failed() { return std::move(result_); }

private:
  int compute(const Value* v, const Map& m) {
    if (!inside_(v)) return load(v, linear_strides(v->type.shape, m, space_.size()));
    const Node* n = v->producer;
    result_.nodes.insert(n);
    const DType dt = v->type.dtype;
    switch (ir::op_info(n->op).category) {
      case ir::OpCategory::Source: {
        if (n->op == OpKind::Const) return constant(round_to(dt, n->attrs.get_float("value")), dt);
        ir::ScalarOp index;  // iota: the index along its axis
        index.kind = ir::ScalarKind::Index;
        index.dtype = dt;
        index.coeffs = m[*normalize_axis(n->attrs.get_int("axis"), v->type.rank())];
        auto key = std::make_pair(index.coeffs, static_cast<int>(dt));
        return add_memo(std::move(index), index_memo_, key);
      }
      case ir::OpCategory::View: {
        const Value* u = n->operands[0];
        if (n->op == OpKind::Broadcast) return demand(u, broadcast_map(u->type.shape, v->type.shape, m));
        if (n->op == OpKind::Transpose) {  // result dim i is operand dim perm[i]
          const auto& perm = n->attrs.get_ints("perm");
          Map mu(m.size());
          for (size_t i = 0; i < perm.size(); ++i) mu[perm[i]] = m[i];
          return demand(u, mu);
        }
        return reshape(v, m);
      }
      case ir::OpCategory::Unary:
      case ir::OpCategory::Cast:
      case ir::OpCategory::Binary:
      case ir::OpCategory::Compare:
      case ir::OpCategory::Select: {
        ir::ScalarOp op;
        op.kind = ir::ScalarKind::Op;
        op.dtype = dt;
        op.op = n->op;
        op.attrs = n->attrs;
        for (const Value* u : n->operands) {
          int id = demand(u, broadcast_map(u->type.shape, v->type.shape, m));
          if (id < 0) return -1;
          op.operands.push_back(id);
        }
        return result_.kernel.add(std::move(op));
      }
      case ir::OpCategory::Reduce:
        if (!reduced_.empty()) return reduce_column(v, m);
        if (rows_) return reduce(v, m);
        [[fallthrough]];
      default:
        throw Error(fmt::format("kernel @{}: {} cannot be part of a pointwise kernel (only element-wise ops, "
                                "constants, iota and views can)",
                                result_.kernel.name, ir::op_name(n->op)));
    }
  }

  // A reduction over the current row. It must reduce exactly the space's last dim of
  // a value of the space's shape, and be wanted for the current row (not another).
  int reduce(const Value* v, const Map& m) {
    const Node* n = v->producer;
    const Value* u = n->operands[0];
    const int rank = static_cast<int>(space_.size());
    std::vector<int64_t> axes = n->attrs.get_ints("axis");
    bool last_only = std::find(axes.begin(), axes.end(), rank - 1) != axes.end() ||
                     std::find(axes.begin(), axes.end(), -1) != axes.end();
    for (int64_t a : axes) {
      int64_t d = a < 0 ? a + rank : a;
      last_only = last_only && (d == rank - 1 || u->type.shape[static_cast<size_t>(d)] == 1);
    }
    std::optional<Map> here = row_map(v->type.shape);
    if (u->type.shape != space_ || !last_only || !here || *here != m) {
      result_.must_load = v;
      result_.failure = fmt::format("{} does not reduce the rows {} of this kernel along their last axis for the "
                                    "row being computed", ir::print_node(*n, names_), shape_str(space_));
      return -1;
    }
    int x = demand(u, identity_map(space_));
    if (x < 0) return -1;
    ir::ScalarOp op;
    op.kind = ir::ScalarKind::Reduce;
    op.dtype = v->type.dtype;
    op.op = n->op;
    op.operands = {x};
    op.phase = phase_under(x);
    return result_.kernel.add(std::move(op));
  }

  // A reduction over the reduced dims of the current column: it must reduce exactly
  // those dims (size-1 dims aside) of a value of the space's shape, for this column,
  // and depend on no other reduction (a col_reduce kernel reads its columns once).
  int reduce_column(const Value* v, const Map& m) {
    const Node* n = v->producer;
    const Value* u = n->operands[0];
    std::optional<ColReduction> mine = col_reduction(*n);
    std::optional<Map> here = col_map(v->type.shape);
    auto significant = [&](const std::vector<int64_t>& axes) {
      std::vector<int64_t> out;
      for (int64_t d : axes)
        if (space_[static_cast<size_t>(d)] != 1) out.push_back(d);
      return out;
    };
    bool same = mine && u->type.shape == space_ && significant(mine->axes) == significant(reduced_);
    int x = -1;
    if (same && here && *here == m) {
      x = demand(u, identity_map(space_));
      if (x < 0) return -1;
      if (phase_under(x) == 0) {
        ir::ScalarOp op;
        op.kind = ir::ScalarKind::Reduce;
        op.dtype = v->type.dtype;
        op.op = n->op;
        op.operands = {x};
        return result_.kernel.add(std::move(op));
      }
    }
    result_.must_load = v;
    result_.failure = fmt::format("{} does not reduce the dims {} of this kernel's space {} once per column{}",
                                  ir::print_node(*n, names_), shape_str(reduced_), shape_str(space_),
                                  x >= 0 ? " (it reads another reduction of the same columns)" : "");
    return -1;
  }

  // One more than the latest reduction that op `x` depends on; 0 when none.
  int phase_under(int x) const {
    const auto& body = result_.kernel.body;
    int phase = 0;
    std::vector<int> stack{x};
    std::set<int> seen;
    while (!stack.empty()) {
      int y = stack.back();
      stack.pop_back();
      if (!seen.insert(y).second) continue;
      if (body[y].kind == ir::ScalarKind::Reduce) phase = std::max(phase, body[y].phase + 1);
      else stack.insert(stack.end(), body[y].operands.begin(), body[y].operands.end());
    }
    return phase;
  }

  // A reshape keeps the linear index; a chain of them is one. Loading through it
  // needs only the linear offset; computing the value underneath needs its
  // multi-index, which exists only when the regrouping does not straddle dims.
  int reshape(const Value* v, const Map& m) {
    const Node* outer = v->producer;
    std::vector<int64_t> c = linear_strides(v->type.shape, m, space_.size());
    const Value* w = outer->operands[0];
    while (inside_(w) && w->producer->op == OpKind::Reshape) {
      result_.nodes.insert(w->producer);
      w = w->producer->operands[0];
    }
    if (!inside_(w)) return load(w, c);
    if (auto mw = unflatten(c, w->type.shape, space_)) return demand(w, *mw);
    if (w->producer->op == OpKind::Const)  // the same value everywhere
      return demand(w, Map(w->type.shape.size(), std::vector<int64_t>(space_.size(), 0)));
    result_.must_load = w;
    result_.failed_reshape = outer;
    return -1;
  }

  int load(const Value* v, std::vector<int64_t> strides) {
    for (size_t d = 0; d < space_.size(); ++d)
      if (space_[d] == 1) strides[d] = 0;
    auto key = std::make_pair(v->id, strides);
    auto it = arg_of_.find(key);
    if (it == arg_of_.end()) {
      if (std::find(result_.loads.begin(), result_.loads.end(), v) == result_.loads.end()) result_.loads.push_back(v);
      inputs_.push_back(ir::KernelArg{unique_name(v), v->type, false, strides, v->id});
      it = arg_of_.emplace(key, static_cast<int>(inputs_.size()) - 1).first;
    }
    ir::ScalarOp op;
    op.kind = ir::ScalarKind::Load;
    op.dtype = v->type.dtype;
    op.arg = it->second;
    return add_memo(std::move(op), load_memo_, it->second);
  }

  int constant(double value, DType dt) {
    ir::ScalarOp op;
    op.kind = ir::ScalarKind::Const;
    op.dtype = dt;
    op.value = value;
    return add_memo(std::move(op), const_memo_, std::make_pair(std::bit_cast<uint64_t>(value), static_cast<int>(dt)));
  }

  template <class Key>
  int add_memo(ir::ScalarOp op, std::map<Key, int>& memo, const Key& key) {
    if (auto it = memo.find(key); it != memo.end()) return it->second;
    int id = result_.kernel.add(std::move(op));
    memo.emplace(key, id);
    return id;
  }

  std::string unique_name(const Value* v) {
    auto it = names_.find(v->id);
    std::string base = it != names_.end() ? it->second : fmt::format("v{}", v->id);
    std::string name = base;
    for (int i = 1; !used_names_.insert(name).second; ++i) name = fmt::format("{}.{}", base, i);
    return name;
  }

  Shape space_;
  const std::function<bool(const Value*)>& inside_;
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

std::string unlowerable(const Node& n, const std::unordered_map<int, std::string>& names) {
  std::string what;
  switch (ir::op_info(n.op).category) {
    case ir::OpCategory::Reduce:
      what = "no kernel kind handles this reduction yet (row_reduce takes reductions along the innermost axis of "
             "float tensors, col_reduce reductions over axes outside all the kept ones)";
      break;
    case ir::OpCategory::Matmul: what = "it is in no gemm kernel; run the fuse pass before lowering"; break;
    case ir::OpCategory::Composite: what = "no kernel kind handles composite ops yet"; break;
    default: what = "it is in no kernel; run the fuse pass before lowering"; break;
  }
  return fmt::format("{}{}: {} ({})", n.loc.empty() ? "" : n.loc + ": ", ir::op_name(n.op), what,
                     ir::print_node(n, names));
}

// Nodes whose result some graph output needs; the others are never computed.
std::unordered_set<const Node*> live_nodes(const ir::Graph& g) {
  std::unordered_set<const Value*> needed(g.outputs().begin(), g.outputs().end());
  std::unordered_set<const Node*> live;
  auto nodes = g.nodes();
  for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
    if (!needed.count((*it)->result)) continue;
    live.insert(*it);
    for (const Value* v : (*it)->operands) needed.insert(v);
  }
  return live;
}

// Finishes a reduction kernel: every root must have the shape `map_of` maps (else the
// error says it is `expected`) and be computed inside the kernel.
PointwiseBuild demand_outputs(Builder& b, const std::string& name, const std::vector<const Value*>& roots,
                              const std::function<bool(const Value*)>& computed_inside,
                              const std::unordered_map<int, std::string>& names,
                              const std::function<std::optional<Map>(const Shape&)>& map_of,
                              const std::string& expected) {
  std::vector<int> ids;
  std::vector<Map> maps;
  for (const Value* r : roots) {
    std::optional<Map> m = map_of(r->type.shape);
    if (!m) {
      auto it = names.find(r->id);
      throw Error(fmt::format("kernel @{}: output %{}: {} is {}", name,
                              it != names.end() ? it->second : fmt::format("v{}", r->id), r->type.str(), expected));
    }
    if (!computed_inside(r)) throw Error(fmt::format("kernel @{}: an output is not computed inside it", name));
    int id = b.demand(r, *m);
    if (id < 0) return b.failed();
    ids.push_back(id);
    maps.push_back(*m);
  }
  return b.finish(roots, ids, maps);
}

}  // namespace

int Plan::buffer_of(int value_id) const {
  for (size_t i = 0; i < buffers.size(); ++i)
    if (buffers[i].value_id == value_id) return static_cast<int>(i);
  return -1;
}

PointwiseBuild build_pointwise(const std::string& name, const std::vector<const Value*>& roots,
                               const std::function<bool(const Value*)>& computed_inside,
                               const std::unordered_map<int, std::string>& names) {
  if (roots.empty()) throw Error(fmt::format("kernel @{} has no outputs", name));
  auto printed = [&](const Value* v) {
    auto it = names.find(v->id);
    return fmt::format("%{}: {}", it != names.end() ? it->second : fmt::format("v{}", v->id), v->type.str());
  };
  const Shape& space = roots[0]->type.shape;
  for (const Value* r : roots) {
    if (r->type.shape != space)
      throw Error(fmt::format("kernel @{}: outputs {} and {} have different shapes; a pointwise kernel has one "
                              "iteration space",
                              name, printed(roots[0]), printed(r)));
    if (!computed_inside(r))
      throw Error(fmt::format("kernel @{}: output {} is not computed inside it", name, printed(r)));
  }
  Builder b(name, space, computed_inside, names);
  std::vector<int> ids;
  for (const Value* r : roots) {
    int id = b.demand(r, identity_map(space));
    if (id < 0) return b.failed();
    ids.push_back(id);
  }
  return b.finish(roots, ids, std::vector<Map>(roots.size(), identity_map(space)));
}

PointwiseBuild build_row_reduce(const std::string& name, const Shape& rows,
                                const std::vector<const Value*>& roots,
                                const std::function<bool(const Value*)>& computed_inside,
                                const std::unordered_map<int, std::string>& names) {
  if (roots.empty()) throw Error(fmt::format("kernel @{} has no outputs", name));
  if (rows.empty()) throw Error(fmt::format("kernel @{}: a row reduction needs rows of rank 1 or more", name));
  Builder b(name, rows, computed_inside, names, true);
  return demand_outputs(b, name, roots, computed_inside, names, [&](const Shape& s) { return b.row_map(s); },
                        fmt::format("neither the rows {} nor one value per row", shape_str(rows)));
}

Shape row_reduction_space(const Node& n) {
  if (ir::op_info(n.op).category != ir::OpCategory::Reduce) return {};
  const Shape& in = n.operands[0]->type.shape;
  if (in.empty() || !is_float(n.operands[0]->type.dtype)) return {};
  const int rank = static_cast<int>(in.size());
  bool last = false;
  for (int64_t a : n.attrs.get_ints("axis")) {
    int64_t d = a < 0 ? a + rank : a;
    if (d == rank - 1) last = true;
    else if (in[static_cast<size_t>(d)] != 1) return {};
  }
  return last ? in : Shape{};
}

std::optional<ColReduction> col_reduction(const Node& n) {
  if (ir::op_info(n.op).category != ir::OpCategory::Reduce) return std::nullopt;
  const Shape& in = n.operands[0]->type.shape;
  if (in.empty() || !is_float(n.operands[0]->type.dtype)) return std::nullopt;
  const int rank = static_cast<int>(in.size());
  std::vector<int64_t> axes;
  for (int64_t a : n.attrs.get_ints("axis")) axes.push_back(a < 0 ? a + rank : a);
  std::sort(axes.begin(), axes.end());
  axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  bool seen_kept = false;  // a kept dim of size > 1 outside a reduced one breaks the form
  for (int d = 0; d < rank; ++d) {
    if (in[static_cast<size_t>(d)] == 1) continue;
    bool reduced = std::binary_search(axes.begin(), axes.end(), d);
    if (reduced && seen_kept) return std::nullopt;
    seen_kept = seen_kept || !reduced;
  }
  return ColReduction{in, axes};
}

PointwiseBuild build_col_reduce(const std::string& name, const ColReduction& cols,
                                const std::vector<const Value*>& roots,
                                const std::function<bool(const Value*)>& computed_inside,
                                const std::unordered_map<int, std::string>& names) {
  if (roots.empty()) throw Error(fmt::format("kernel @{} has no outputs", name));
  if (cols.space.empty() || cols.axes.empty())
    throw Error(fmt::format("kernel @{}: a column reduction needs a space of rank 1 or more and a reduced dim", name));
  Builder b(name, cols.space, computed_inside, names);
  b.reduce_columns(cols.axes);
  return demand_outputs(b, name, roots, computed_inside, names, [&](const Shape& s) { return b.col_map(s); },
                        fmt::format("not one value per column of {} reduced over {}", shape_str(cols.space),
                                    shape_str(cols.axes)));
}

namespace {

// A group's nodes, in graph order, and its outputs: the values of the group that a
// node outside it reads or the graph returns.
struct GroupNodes {
  std::vector<const Node*> members;
  std::vector<const Value*> roots;
};

GroupNodes group_nodes(const ir::Graph& g, int group) {
  GroupNodes out;
  for (const Node* n : g.nodes())
    if (n->group == group) out.members.push_back(n);
  std::unordered_set<const Value*> escaping(g.outputs().begin(), g.outputs().end());
  for (const Node* n : g.nodes())
    if (n->group != group)
      for (const Value* v : n->operands) escaping.insert(v);
  for (const Node* n : out.members)
    if (escaping.count(n->result)) out.roots.push_back(n->result);
  return out;
}

// The kernel of a finished build: the graph lines it fuses, verified, and its config
// from the group's `tile` attribute (validated) or the heuristic.
ir::Kernel finish_kernel(PointwiseBuild& build, const std::vector<const Node*>& members, const ir::Group& grp,
                         const std::unordered_map<int, std::string>& names) {
  ir::Kernel k = std::move(build.kernel);
  for (const Node* n : members)
    if (build.nodes.count(n)) k.fused_nodes.push_back(ir::print_node(*n, names));
  ir::verify(k);
  if (grp.tile.empty()) {
    k.config = ir::heuristic(k);
  } else {
    k.config = ir::TileConfig::from_attrs(grp.tile);
    ir::validate(k, k.config);
  }
  return k;
}

// lower_group for a col_reduce group: its reduction's space and dims, then the
// outputs (values that leave the group) as per-column values.
ir::Kernel lower_col_group(const ir::Graph& g, int group, const std::unordered_map<int, std::string>& names) {
  const ir::Group& grp = g.groups().at(static_cast<size_t>(group));
  const auto [members, roots] = group_nodes(g, group);
  std::optional<ColReduction> cols;
  for (const Node* n : members) {
    if (cols || ir::op_info(n->op).category != ir::OpCategory::Reduce) continue;
    cols = col_reduction(*n);
    if (!cols)
      throw Error(fmt::format("kernel @{}: `{}` does not reduce only dims outside its kept ones of a float tensor, "
                              "which a col_reduce kernel needs",
                              grp.name, ir::print_node(*n, names)));
  }
  if (!cols) throw Error(fmt::format("kernel @{}: a col_reduce kernel has no reduction", grp.name));
  if (roots.empty()) throw Error(fmt::format("kernel @{} computes nothing that is used outside it", grp.name));
  auto inside = [group](const Value* v) { return v->producer && v->producer->group == group; };
  PointwiseBuild build = build_col_reduce(grp.name, *cols, roots, inside, names);
  if (build.must_load && !build.failure.empty()) throw Error(fmt::format("kernel @{}: {}", grp.name, build.failure));
  if (build.must_load)
    throw Error(fmt::format("kernel @{}: `{}` cannot become index arithmetic inside a col_reduce kernel", grp.name,
                            ir::print_node(*build.failed_reshape, names)));
  return finish_kernel(build, members, grp, names);
}

}  // namespace

ir::Kernel lower_group(const ir::Graph& g, int group, const std::unordered_map<int, std::string>& names) {
  const ir::Group& grp = g.groups().at(static_cast<size_t>(group));
  const bool rows = grp.kind == "row_reduce";
  if (grp.kind == "col_reduce") return lower_col_group(g, group, names);
  if (grp.kind == "gemm") return lower_gemm_group(g, group, names);
  if (grp.kind != "pointwise" && !rows)
    throw Error(fmt::format("kernel @{}: kernel kind '{}' has no lowering yet", grp.name, grp.kind));

  const auto [members, roots] = group_nodes(g, group);
  if (members.empty()) throw Error(fmt::format("kernel @{} has no nodes", grp.name));
  if (roots.empty()) throw Error(fmt::format("kernel @{} computes nothing that is used outside it", grp.name));

  auto inside = [group](const Value* v) { return v->producer && v->producer->group == group; };
  Shape row_space;
  for (const Node* n : members)
    if (rows && row_space.empty() && ir::op_info(n->op).category == ir::OpCategory::Reduce) {
      row_space = row_reduction_space(*n);
      if (row_space.empty())
        throw Error(fmt::format("kernel @{}: `{}` is not a reduction along the innermost axis of a float tensor, "
                                "which a row_reduce kernel needs",
                                grp.name, ir::print_node(*n, names)));
    }
  if (rows && row_space.empty()) throw Error(fmt::format("kernel @{}: a row_reduce kernel has no reduction", grp.name));
  PointwiseBuild build = rows ? build_row_reduce(grp.name, row_space, roots, inside, names)
                              : build_pointwise(grp.name, roots, inside, names);
  if (build.must_load && !build.failure.empty())
    throw Error(fmt::format("kernel @{}: {}", grp.name, build.failure));
  if (build.must_load) {
    auto it = names.find(build.must_load->id);
    throw Error(fmt::format("kernel @{}: `{}` regroups elements that a view inside the kernel has already reordered, "
                            "so it cannot become index arithmetic; %{} must be written to memory by an earlier kernel",
                            grp.name, ir::print_node(*build.failed_reshape, names),
                            it != names.end() ? it->second : std::to_string(build.must_load->id)));
  }
  return finish_kernel(build, members, grp, names);
}

Plan lower(const ir::Graph& g) {
  auto names = ir::value_names(g);
  auto live = live_nodes(g);
  const Node* outside = nullptr;  // a reduction (or matmul, ...) explains more than a view next to it
  for (const Node* n : g.nodes()) {
    if (n->group >= 0 || !live.count(n)) continue;
    bool opaque = !ir::is_elementwise(n->op) && ir::op_info(n->op).category != ir::OpCategory::Source &&
                  ir::op_info(n->op).category != ir::OpCategory::View;
    if (opaque) throw Error(unlowerable(*n, names));
    if (!outside) outside = n;
  }
  if (outside) throw Error(unlowerable(*outside, names));

  Plan plan;
  std::unordered_set<const Value*> outputs(g.outputs().begin(), g.outputs().end());
  for (const Value* in : g.inputs()) {
    plan.inputs.push_back(static_cast<int>(plan.buffers.size()));
    plan.buffers.push_back(Buffer{in->id, names.at(in->id), in->type, BufferRole::Input});
  }
  // Groups are contiguous and in topological order, so their order is a launch order.
  std::vector<int> order;
  for (const Node* n : g.nodes())
    if (n->group >= 0 && (order.empty() || order.back() != n->group)) order.push_back(n->group);
  for (int group : order) {
    ir::Kernel k = lower_group(g, group, names);
    for (const ir::KernelArg& a : k.args) {
      if (plan.buffer_of(a.value_id) >= 0) continue;
      if (!a.is_output)
        throw Error(fmt::format("kernel @{} reads %{}, which no earlier kernel writes", k.name, a.name));
      bool returned = std::any_of(outputs.begin(), outputs.end(), [&](const Value* o) { return o->id == a.value_id; });
      plan.buffers.push_back(
          Buffer{a.value_id, names.at(a.value_id), a.type, returned ? BufferRole::Output : BufferRole::Intermediate});
    }
    plan.kernels.push_back(std::move(k));
  }
  for (const Value* out : g.outputs()) {
    int b = plan.buffer_of(out->id);
    if (b < 0) throw Error(fmt::format("graph '{}': output %{} is computed by no kernel", g.name(), names.at(out->id)));
    plan.outputs.push_back(b);
  }
  return plan;
}

}  // namespace kiln::passes
