// The scalar body builder (see body_builder.h): index maps and their views, and the
// walk from a kernel's outputs back to its loads.
#include "passes/body_builder.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <set>

#include "ir/error.h"
#include "ir/printer.h"

namespace kiln::passes {

using ir::Node;
using ir::OpKind;
using ir::Value;

Map identity_map(const Shape& space) {
  Map m(space.size(), std::vector<int64_t>(space.size(), 0));
  for (size_t d = 0; d < space.size(); ++d) m[d][d] = space[d] == 1 ? 0 : 1;
  return m;
}

namespace {

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

// Result dim i of a transpose is operand dim perm[i].
Map transpose_map(const std::vector<int64_t>& perm, const Map& m) {
  Map mu(m.size());
  for (size_t i = 0; i < perm.size(); ++i) mu[static_cast<size_t>(perm[i])] = m[i];
  return mu;
}

std::vector<int64_t> flatten(const Map& m) {
  std::vector<int64_t> out;
  for (const auto& row : m) out.insert(out.end(), row.begin(), row.end());
  out.push_back(static_cast<int64_t>(m.size()));  // keeps maps of different ranks apart
  return out;
}

}  // namespace

BodyBuilder::BodyBuilder(const std::string& name, Shape space, const std::function<bool(const Value*)>& inside,
                         const std::unordered_map<int, std::string>& names, bool rows)
    : space_(std::move(space)), inside_(inside), names_(names), rows_(rows) {
  result_.kernel.name = name;
  result_.kernel.kind = rows ? ir::KernelKind::RowReduce : ir::KernelKind::Pointwise;
  if (rows) result_.kernel.row_space = space_;
}

void BodyBuilder::reduce_columns(const std::vector<int64_t>& axes) {
  reduced_ = axes;
  result_.kernel.kind = ir::KernelKind::ColReduce;
  result_.kernel.row_space = space_;
  result_.kernel.reduced_axes = axes;
}

std::optional<Map> BodyBuilder::col_map(const Shape& shape) const {
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

std::optional<Map> BodyBuilder::row_map(const Shape& shape) const {
  Shape keep(space_.begin(), space_.end() - 1);
  Shape keepdim = keep;
  keepdim.push_back(1);
  Map id = identity_map(space_);
  if (shape == space_) return id;
  if (shape == keepdim) return broadcast_map(shape, space_, id);
  if (shape == keep) return Map(id.begin(), id.end() - 1);
  return std::nullopt;
}

int BodyBuilder::demand(const Value* v, const Map& m) {
  if (result_.must_load) return -1;
  auto key = std::make_pair(v->id, flatten(m));
  if (auto it = memo_.find(key); it != memo_.end()) return it->second;
  prepare(v, m);
  if (result_.must_load) return -1;
  int id = compute(v, m);
  if (id >= 0) memo_[key] = id;
  return id;
}

// Computes, deepest first and in the order compute() would ask for them, everything
// that `v` at `m` needs, with an explicit stack: a chain of tens of thousands of ops
// would overflow the call stack if compute() recursed through it. compute(v, m) then
// finds its operands memoised and recurses one level only.
void BodyBuilder::prepare(const Value* v, const Map& m) {
  struct Frame {
    const Value* v;
    Map m;
    std::vector<Demand> needs;
    size_t next = 0;
  };
  std::vector<Frame> stack;
  stack.push_back(Frame{v, m, operand_demands(v, m)});
  while (!stack.empty() && !result_.must_load) {
    Frame& top = stack.back();
    if (top.next < top.needs.size()) {
      Demand need = top.needs[top.next++];  // a copy: the push below may move `top`
      if (!memo_.count(std::make_pair(need.first->id, flatten(need.second)))) {
        std::vector<Demand> needs = operand_demands(need.first, need.second);
        stack.push_back(Frame{need.first, std::move(need.second), std::move(needs)});
      }
      continue;
    }
    if (stack.size() > 1) {  // the outermost is the caller's to compute
      auto key = std::make_pair(top.v->id, flatten(top.m));
      if (!memo_.count(key)) {
        int id = compute(top.v, top.m);
        if (id >= 0) memo_[key] = id;
      }
    }
    stack.pop_back();
  }
}

// What compute(v, m) will demand, in its order; none when it loads `v`, when `v` is a
// source, or when compute() will fail or throw without demanding anything.
std::vector<BodyBuilder::Demand> BodyBuilder::operand_demands(const Value* v, const Map& m) const {
  if (!inside_(v)) return {};
  const Node* n = v->producer;
  switch (ir::op_info(n->op).category) {
    case ir::OpCategory::View: {
      const Value* u = n->operands[0];
      if (n->op == OpKind::Broadcast) return {{u, broadcast_map(u->type.shape, v->type.shape, m)}};
      if (n->op == OpKind::Transpose) return {{u, transpose_map(n->attrs.get_ints("perm"), m)}};
      ReshapeSource src = reshape_source(v, m);
      if (src.map) return {{src.value, *src.map}};
      return {};
    }
    case ir::OpCategory::Unary:
    case ir::OpCategory::Cast:
    case ir::OpCategory::Binary:
    case ir::OpCategory::Compare:
    case ir::OpCategory::Select: {
      std::vector<Demand> needs;
      for (const Value* u : n->operands) needs.push_back({u, broadcast_map(u->type.shape, v->type.shape, m)});
      return needs;
    }
    case ir::OpCategory::Reduce: {
      bool computes = !reduced_.empty() ? reduces_this_column(v, m) : rows_ && reduces_this_row(v, m);
      if (computes) return {{n->operands[0], identity_map(space_)}};
      return {};
    }
    default: return {};
  }
}

PointwiseBuild BodyBuilder::finish(const std::vector<const Value*>& roots, const std::vector<int>& ids,
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

int BodyBuilder::compute(const Value* v, const Map& m) {
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
      if (n->op == OpKind::Transpose) return demand(u, transpose_map(n->attrs.get_ints("perm"), m));
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

// Whether reduction `v` at `m` reduces exactly the space's last dim of a value of the
// space's shape, and is wanted for the current row (not another).
bool BodyBuilder::reduces_this_row(const Value* v, const Map& m) const {
  const Node* n = v->producer;
  const Value* u = n->operands[0];
  const int rank = static_cast<int>(space_.size());
  if (u->type.shape != space_) return false;
  std::vector<int64_t> axes = n->attrs.get_ints("axis");
  bool last_only = std::find(axes.begin(), axes.end(), rank - 1) != axes.end() ||
                   std::find(axes.begin(), axes.end(), -1) != axes.end();
  for (int64_t a : axes) {
    int64_t d = a < 0 ? a + rank : a;
    last_only = last_only && (d == rank - 1 || u->type.shape[static_cast<size_t>(d)] == 1);
  }
  std::optional<Map> here = row_map(v->type.shape);
  return last_only && here && *here == m;
}

// A reduction over the current row (see reduces_this_row).
int BodyBuilder::reduce(const Value* v, const Map& m) {
  const Node* n = v->producer;
  const Value* u = n->operands[0];
  if (!reduces_this_row(v, m)) {
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

// Whether reduction `v` at `m` reduces exactly the kernel's reduced dims (size-1 dims
// aside) of a value of the space's shape, for the current column.
bool BodyBuilder::reduces_this_column(const Value* v, const Map& m) const {
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
  return same && here && *here == m;
}

// A reduction over the reduced dims of the current column (see reduces_this_column);
// it must also depend on no other reduction (a col_reduce kernel reads its columns once).
int BodyBuilder::reduce_column(const Value* v, const Map& m) {
  const Node* n = v->producer;
  const Value* u = n->operands[0];
  int x = -1;
  if (reduces_this_column(v, m)) {
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
int BodyBuilder::phase_under(int x) const {
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
BodyBuilder::ReshapeSource BodyBuilder::reshape_source(const Value* v, const Map& m) const {
  ReshapeSource src;
  src.offsets = linear_strides(v->type.shape, m, space_.size());
  const Value* w = v->producer->operands[0];
  while (inside_(w) && w->producer->op == OpKind::Reshape) {
    src.chain.push_back(w->producer);
    w = w->producer->operands[0];
  }
  src.value = w;
  if (!inside_(w)) return src;
  src.map = unflatten(src.offsets, w->type.shape, space_);
  if (!src.map && w->producer->op == OpKind::Const)  // the same value everywhere
    src.map = Map(w->type.shape.size(), std::vector<int64_t>(space_.size(), 0));
  return src;
}

int BodyBuilder::reshape(const Value* v, const Map& m) {
  ReshapeSource src = reshape_source(v, m);
  result_.nodes.insert(src.chain.begin(), src.chain.end());
  if (!inside_(src.value)) return load(src.value, src.offsets);
  if (src.map) return demand(src.value, *src.map);
  result_.must_load = src.value;
  result_.failed_reshape = v->producer;
  return -1;
}

int BodyBuilder::load(const Value* v, std::vector<int64_t> strides) {
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

int BodyBuilder::constant(double value, DType dt) {
  ir::ScalarOp op;
  op.kind = ir::ScalarKind::Const;
  op.dtype = dt;
  op.value = value;
  return add_memo(std::move(op), const_memo_, std::make_pair(std::bit_cast<uint64_t>(value), static_cast<int>(dt)));
}

template <class Key>
int BodyBuilder::add_memo(ir::ScalarOp op, std::map<Key, int>& memo, const Key& key) {
  if (auto it = memo.find(key); it != memo.end()) return it->second;
  int id = result_.kernel.add(std::move(op));
  memo.emplace(key, id);
  return id;
}

std::string BodyBuilder::unique_name(const Value* v) {
  auto it = names_.find(v->id);
  std::string base = it != names_.end() ? it->second : fmt::format("v{}", v->id);
  std::string name = base;
  for (int i = 1; !used_names_.insert(name).second; ++i) name = fmt::format("{}.{}", base, i);
  return name;
}

// Finishes a reduction kernel: every root must have the shape `map_of` maps (else the
// error says it is `expected`) and be computed inside the kernel.
PointwiseBuild demand_outputs(BodyBuilder& b, const std::string& name, const std::vector<const Value*>& roots,
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

}  // namespace kiln::passes
