// Lowering of gemm groups (see lower_gemm.h). Both sides reuse the pointwise body
// builder: an operand is built as a one-output pointwise kernel over its own shape
// (its one load's strides are the operand's layout, its ops the prologue), and the
// epilogue as a pointwise kernel over the output space in which the product is a load
// of the matmul's value at the identity index, then turned into the accumulator.
#include "passes/lower_gemm.h"

#include <fmt/format.h>

#include <algorithm>
#include <unordered_set>

#include "ir/error.h"
#include "ir/printer.h"
#include "passes/dequant_fold.h"
#include "passes/lower.h"
#include "passes/lower_group.h"
#include "runtime/knobs.h"

namespace kiln::passes {

using ir::Node;
using ir::ScalarKind;
using ir::Value;

namespace {

// The members reached going up from `from` without passing `stop`.
std::set<const Node*> cone(const std::vector<const Value*>& from, const std::set<const Node*>& members,
                           const Node* stop) {
  std::set<const Node*> out;
  std::vector<const Value*> stack(from.begin(), from.end());
  while (!stack.empty()) {
    const Value* v = stack.back();
    stack.pop_back();
    const Node* n = v->producer;
    if (!n || n == stop || !members.count(n) || !out.insert(n).second) continue;
    for (const Value* u : n->operands) stack.push_back(u);
  }
  return out;
}

std::string printed(const Value* v, const std::unordered_map<int, std::string>& names) {
  auto it = names.find(v->id);
  return it != names.end() ? it->second : fmt::format("v{}", v->id);
}

struct Operand {
  ir::KernelArg arg;  // strides over the logical [batch..., rows, cols] of the product's operand
  std::vector<ir::ScalarOp> prologue;  // Load ops refer to argument 0
  // A dequantised operand: its scales (and zero points) and group; `dequant`'s argument
  // indices count from 0 in `extra`.
  std::vector<ir::KernelArg> extra;
  ir::GemmDequant dequant;
};

// Strides of the operand value `u` (over its own shape) as strides over the logical
// operand [out_batch..., rows, cols]: transposed swaps the matrix dims, batch dims
// align to the right and broadcast where missing or of size 1.
std::vector<int64_t> logical_strides(const Value* u, const std::vector<int64_t>& su, bool transposed,
                                     size_t out_batch_rank) {
  const Shape& s = u->type.shape;
  const size_t r = s.size(), bu = r - 2;
  std::vector<int64_t> out(out_batch_rank, 0);
  for (size_t j = 0; j < bu; ++j)
    if (s[j] != 1) out[out_batch_rank - bu + j] = su[j];
  out.push_back(transposed ? su[r - 1] : su[r - 2]);
  out.push_back(transposed ? su[r - 2] : su[r - 1]);
  return out;
}

Operand build_operand(const std::string& name, const Node& matmul, int index, const std::set<const Node*>& members,
                      const std::unordered_map<int, std::string>& names, size_t out_batch_rank) {
  const Value* u = matmul.operands[static_cast<size_t>(index)];
  const bool transposed = matmul.attrs.get_bool(index == 0 ? "transpose_a" : "transpose_b");
  const char* which = index == 0 ? "A" : "B";
  const std::set<const Node*> chain = cone({u}, members, &matmul);
  Operand op;
  const Node* dequant = u->producer && u->producer->op == ir::OpKind::Dequant ? u->producer : nullptr;
  // The interleaved layout of the weights (dequant_fold.h): the transpose and reshape
  // under the dequant are the gemv's addressing, not a prologue.
  const Value* interleaved = nullptr;
  if (dequant && chain.size() == 3 && chain.count(dequant)) {
    const Value* w = dequant->operands[0];
    const Value* wp = interleaved_weight_source(w);
    if (wp && chain.count(w->producer) && chain.count(w->producer->operands[0]->producer)) interleaved = wp;
  }
  if (dequant && (chain.size() == 1 || interleaved)) {
    // The weights [N, K] as the operand, read in place; the scales and zero points are
    // read at (n, k / group): a stride along N only. Interleaved weights are given the
    // strides of [N, K] (the same bytes); `interleave` says how the gemv finds them.
    const Node& d = *dequant;
    if (index != 1 || !transposed)
      throw Error(fmt::format("kernel @{}: a dequantised matmul operand must be B with transpose_b", name));
    const Value* w = interleaved ? interleaved : d.operands[0];
    op.arg = ir::KernelArg{printed(w, names), w->type, false, {}, w->id};
    op.arg.strides = logical_strides(u, ir::contiguous_strides(d.operands[0]->type.shape), transposed, out_batch_rank);
    if (interleaved) op.dequant.interleave = 8;
    for (size_t i = 1; i < d.operands.size(); ++i) {
      const Value* s = d.operands[i];
      std::vector<int64_t> strides(out_batch_rank + 2, 0);
      strides.back() = s->type.shape.back();
      op.extra.push_back(ir::KernelArg{printed(s, names), s->type, false, strides, s->id});
    }
    op.dequant.scale = 0;
    op.dequant.zero = d.operands.size() > 2 ? 1 : -1;
    op.dequant.group = d.attrs.get_int("group");
    return op;
  }
  if (chain.empty()) {
    op.arg = ir::KernelArg{printed(u, names), u->type, false, {}, u->id};
    op.arg.strides = logical_strides(u, ir::contiguous_strides(u->type.shape), transposed, out_batch_rank);
    return op;
  }
  auto inside = [&](const Value* v) { return v->producer && chain.count(v->producer); };
  PointwiseBuild b = build_pointwise(name, {u}, inside, names);
  if (b.must_load)
    throw Error(fmt::format("kernel @{}: matmul operand {}: `{}` cannot become index arithmetic", name, which,
                            ir::print_node(*b.failed_reshape, names)));
  std::vector<const ir::KernelArg*> loads;
  for (const ir::KernelArg& a : b.kernel.args)
    if (!a.is_output) loads.push_back(&a);
  if (loads.size() != 1)
    throw Error(fmt::format("kernel @{}: matmul operand {} (%{}) reads {} tensors; an operand's prologue reads one",
                            name, which, printed(u, names), loads.size()));
  op.arg = *loads[0];
  op.arg.strides = logical_strides(u, loads[0]->strides, transposed, out_batch_rank);
  const int load_arg = static_cast<int>(loads[0] - b.kernel.args.data());
  bool only_load = true;
  for (const ir::ScalarOp& s : b.kernel.body) {
    if (s.kind == ScalarKind::Store) continue;
    if (s.kind == ScalarKind::Index)
      throw Error(fmt::format("kernel @{}: matmul operand {} uses iota; an operand's prologue cannot", name, which));
    ir::ScalarOp p = s;
    if (p.kind == ScalarKind::Load) p.arg = load_arg == p.arg ? 0 : -1;
    only_load = only_load && p.kind == ScalarKind::Load;
    op.prologue.push_back(std::move(p));
  }
  if (only_load) op.prologue.clear();  // a view: the layout says it all
  return op;
}

std::string unique(std::unordered_set<std::string>& taken, const std::string& base) {
  std::string name = base;
  for (int i = 1; !taken.insert(name).second; ++i) name = fmt::format("{}.{}", base, i);
  return name;
}

}  // namespace

ir::Kernel build_gemm(const std::string& name, const Node& matmul, const std::set<const Node*>& members,
                      const std::vector<const Value*>& roots, const std::unordered_map<int, std::string>& names) {
  if (matmul.op != ir::OpKind::Matmul) throw Error(fmt::format("kernel @{}: a gemm kernel needs a matmul", name));
  const Value* product = matmul.result;
  const Shape& out = product->type.shape;
  const size_t batch_rank = out.size() - 2;
  ir::Kernel k;
  k.name = name;
  k.kind = ir::KernelKind::Gemm;
  ir::GemmCore& g = k.gemm;
  g.batch.assign(out.begin(), out.end() - 2);
  g.m = out[batch_rank];
  g.n = out[batch_rank + 1];
  const Value* a = matmul.operands[0];
  g.k = a->type.shape[a->type.rank() - (matmul.attrs.get_bool("transpose_a") ? 2 : 1)];
  g.operand_dtype = a->type.dtype;
  g.tf32 = g.operand_dtype == DType::f32 && knobs::tf32();

  Operand ops[2] = {build_operand(name, matmul, 0, members, names, batch_rank),
                    build_operand(name, matmul, 1, members, names, batch_rank)};
  std::unordered_set<std::string> taken;
  for (int i = 0; i < 2; ++i) {
    ops[i].arg.name = unique(taken, ops[i].arg.name);
    k.args.push_back(ops[i].arg);
    for (ir::ScalarOp& p : ops[i].prologue)
      if (p.kind == ScalarKind::Load) p.arg = i;
    (i == 0 ? g.a : g.b).arg = static_cast<int>(k.args.size()) - 1;
    (i == 0 ? g.a : g.b).prologue = std::move(ops[i].prologue);
  }
  for (int i = 0; i < 2; ++i) {  // a dequantised operand's scales and zero points, after both operands
    const int first = static_cast<int>(k.args.size());
    for (ir::KernelArg& a : ops[i].extra) {
      a.name = unique(taken, a.name);
      k.args.push_back(std::move(a));
    }
    ir::GemmDequant& d = (i == 0 ? g.a : g.b).dequant;
    d = ops[i].dequant;
    if (d.active()) {
      d.scale += first;
      if (d.zero >= 0) d.zero += first;
    }
  }

  // The epilogue over the output space; the product is read at the identity index.
  std::vector<const Value*> epilogue_roots;
  for (const Value* r : roots)
    if (r != product) epilogue_roots.push_back(r);
  std::set<const Node*> epilogue = cone(epilogue_roots, members, &matmul);
  auto inside = [&](const Value* v) { return v->producer && epilogue.count(v->producer); };
  ir::Kernel body;
  if (!epilogue_roots.empty()) {
    PointwiseBuild e = build_pointwise(name, epilogue_roots, inside, names);
    if (e.must_load)
      throw Error(fmt::format("kernel @{}: `{}` cannot become index arithmetic in a gemm epilogue", name,
                              ir::print_node(*e.failed_reshape, names)));
    body = std::move(e.kernel);
  }
  std::vector<int> remap(body.args.size(), -1);
  int acc_arg = -1;
  for (size_t i = 0; i < body.args.size(); ++i) {
    ir::KernelArg a = body.args[i];
    if (a.value_id == product->id) {
      if (acc_arg >= 0 || a.strides != ir::contiguous_strides(out))
        throw Error(fmt::format("kernel @{}: the epilogue reads the product %{} at other elements than its own; "
                                "a gemm epilogue runs element by element on the output",
                                name, printed(product, names)));
      acc_arg = static_cast<int>(i);
      continue;
    }
    if (a.is_output) continue;
    a.name = unique(taken, a.name);
    remap[i] = static_cast<int>(k.args.size());
    k.args.push_back(a);
  }
  auto add_output = [&](const Value* v) {
    k.args.push_back(ir::KernelArg{unique(taken, printed(v, names)), v->type, true, ir::contiguous_strides(out), v->id});
    return static_cast<int>(k.args.size()) - 1;
  };
  int acc_id = -1;
  auto accumulator = [&] {
    if (acc_id < 0) {
      ir::ScalarOp acc;
      acc.kind = ScalarKind::Acc;
      acc.dtype = product->type.dtype;
      acc_id = k.add(std::move(acc));
    }
    return acc_id;
  };
  std::vector<int> ids(body.body.size(), -1);
  for (size_t id = 0; id < body.body.size(); ++id) {
    ir::ScalarOp op = body.body[id];
    if (op.kind == ScalarKind::Load && op.arg == acc_arg) {
      ids[id] = accumulator();
      continue;
    }
    for (int& x : op.operands) x = ids[static_cast<size_t>(x)];
    if (op.kind == ScalarKind::Store) {
      const ir::KernelArg& target = body.args[static_cast<size_t>(op.arg)];
      const Value* root = nullptr;
      for (const Value* r : epilogue_roots)
        if (r->id == target.value_id) root = r;
      op.arg = add_output(root);
    } else if (op.kind == ScalarKind::Load) {
      op.arg = remap[static_cast<size_t>(op.arg)];
    }
    ids[id] = k.add(std::move(op));
  }
  if (std::find(roots.begin(), roots.end(), product) != roots.end()) {  // the product itself leaves the kernel
    ir::ScalarOp store;
    store.kind = ScalarKind::Store;
    store.dtype = product->type.dtype;
    store.operands = {accumulator()};
    store.arg = add_output(product);
    k.add(std::move(store));
  }
  // Inputs were placed first and outputs after them: the order of a kernel's CUDA parameters.
  ir::verify(k);
  return k;
}

ir::Kernel lower_gemm_group(const ir::Graph& g, int group, const std::unordered_map<int, std::string>& names) {
  const ir::Group& grp = g.groups().at(static_cast<size_t>(group));
  const GroupNodes nodes = checked_group_nodes(g, group);
  const std::set<const Node*> members(nodes.members.begin(), nodes.members.end());
  const Node* matmul = nullptr;
  for (const Node* n : nodes.members) {
    if (n->op != ir::OpKind::Matmul) continue;
    if (matmul)
      throw Error(fmt::format("kernel @{}: a gemm kernel holds one matmul; `{}` and `{}` are both in it", grp.name,
                              ir::print_node(*matmul, names), ir::print_node(*n, names)));
    matmul = n;
  }
  if (!matmul) throw Error(fmt::format("kernel @{}: a gemm kernel has no matmul", grp.name));
  const std::vector<const Value*>& roots = nodes.roots;
  ir::Kernel k = build_gemm(grp.name, *matmul, members, roots, names);
  for (const Node* n : nodes.members) k.fused_nodes.push_back(ir::print_node(*n, names));
  choose_config(k, grp);
  return k;
}

}  // namespace kiln::passes
