// Lowering of attention groups (see lower_attention.h). The operands reuse the
// pointwise body builder to fold their views into strides; the score ops are built as
// a pointwise kernel over the score space in which the first product is a load at the
// identity index, then turned into the accumulator, as a gemm epilogue is.
#include "passes/lower_attention.h"

#include <fmt/format.h>

#include <cmath>
#include <unordered_set>

#include "ir/error.h"
#include "ir/printer.h"
#include "passes/fuse_reduce.h"
#include "passes/lower.h"
#include "passes/lower_group.h"

namespace kiln::passes {

using ir::Node;
using ir::ScalarKind;
using ir::ScalarOp;
using ir::Value;

namespace {

std::string printed(const Value* v, const std::unordered_map<int, std::string>& names) {
  auto it = names.find(v->id);
  return it != names.end() ? it->second : fmt::format("v{}", v->id);
}

std::string unique(std::unordered_set<std::string>& taken, const std::string& base) {
  std::string name = base;
  for (int i = 1; !taken.insert(name).second; ++i) name = fmt::format("{}.{}", base, i);
  return name;
}

// Strides of `u` (over its own shape) as strides over [batch..., rows, cols]: batch
// dims align to the right and broadcast (stride 0) where missing or of size 1;
// `transposed` swaps the matrix dims.
std::vector<int64_t> logical_strides(const Value* u, const std::vector<int64_t>& su, bool transposed,
                                     size_t batch_rank) {
  const Shape& s = u->type.shape;
  const size_t r = s.size(), bu = r - 2;
  std::vector<int64_t> out(batch_rank, 0);
  for (size_t j = 0; j < bu && j < batch_rank; ++j)
    if (s[bu - 1 - j] != 1) out[batch_rank - 1 - j] = su[bu - 1 - j];
  out.push_back(transposed ? su[r - 1] : su[r - 2]);
  out.push_back(transposed ? su[r - 2] : su[r - 1]);
  return out;
}

// The argument an operand reads, its views folded into strides over [batch..., S, D].
ir::KernelArg operand_arg(const std::string& name, const char* role, const Value* u, bool transposed,
                          const std::set<const Node*>& nodes, const std::unordered_map<int, std::string>& names,
                          size_t batch_rank) {
  std::set<const Node*> views;
  for (const Value* w = u; w->producer && nodes.count(w->producer) &&
                           ir::op_info(w->producer->op).category == ir::OpCategory::View;
       w = w->producer->operands[0])
    views.insert(w->producer);
  if (views.empty()) {
    ir::KernelArg a{printed(u, names), u->type, false, {}, u->id};
    a.strides = logical_strides(u, ir::contiguous_strides(u->type.shape), transposed, batch_rank);
    return a;
  }
  auto inside = [&](const Value* v) { return v->producer && views.count(v->producer); };
  PointwiseBuild b = build_pointwise(name, {u}, inside, names);
  if (b.must_load)
    throw Error(fmt::format("kernel @{}: attention operand {}: `{}` cannot become index arithmetic", name, role,
                            ir::print_node(*b.failed_reshape, names)));
  const ir::KernelArg* load = nullptr;
  for (const ir::KernelArg& a : b.kernel.args)
    if (!a.is_output) load = &a;
  for (const ScalarOp& op : b.kernel.body)
    if (op.kind != ScalarKind::Load && op.kind != ScalarKind::Store)
      throw Error(fmt::format("kernel @{}: attention operand {} (%{}) is computed; the kernel reads q, k and v "
                              "through views only",
                              name, role, printed(u, names)));
  ir::KernelArg a = *load;
  a.strides = logical_strides(u, load->strides, transposed, batch_rank);
  return a;
}

bool is_const(const std::vector<ScalarOp>& body, int id, double* value = nullptr) {
  const ScalarOp& op = body[static_cast<size_t>(id)];
  if (op.kind != ScalarKind::Const) return false;
  if (value) *value = op.value;
  return true;
}

bool is_minus_inf(const std::vector<ScalarOp>& body, int id) {
  double v = 0;
  return is_const(body, id, &v) && std::isinf(v) && v < 0;
}

// An i32 iota along dim `axis` of the score space (coefficient 1 there, 0 elsewhere).
bool is_iota(const std::vector<ScalarOp>& body, int id, size_t axis) {
  const ScalarOp& op = body[static_cast<size_t>(id)];
  if (op.kind != ScalarKind::Index || op.dtype != DType::i32) return false;
  for (size_t d = 0; d < op.coeffs.size(); ++d)
    if (op.coeffs[d] != (d == axis ? 1 : 0)) return false;
  return true;
}

// Whether `cond` says "key after query" (masked: above) or "key at or before the
// query" (kept: !above) for the key index j and the query index i.
bool is_causal_condition(const std::vector<ScalarOp>& body, int cond, bool above, size_t rank) {
  const ScalarOp& c = body[static_cast<size_t>(cond)];
  if (c.kind != ScalarKind::Op || c.operands.size() != 2) return false;
  const size_t key = rank - 1, query = rank - 2;
  auto is = [&](int which, size_t axis) { return is_iota(body, c.operands[static_cast<size_t>(which)], axis); };
  const bool key_query = is(0, key) && is(1, query), query_key = is(0, query) && is(1, key);
  if (above) return (c.op == ir::OpKind::Gt && key_query) || (c.op == ir::OpKind::Lt && query_key);
  return (c.op == ir::OpKind::Le && key_query) || (c.op == ir::OpKind::Ge && query_key);
}

// The score body with the scale folded into the core, a final causal select turned into
// the causal flag, and the ops the score no longer needs dropped (op 0 stays `acc`).
void simplify_score(ir::Kernel& k, int score) {
  std::vector<ScalarOp>& body = k.body;
  const size_t rank = k.row_space.size();
  std::vector<int> uses(body.size(), 0);
  for (const ScalarOp& op : body)
    for (int x : op.operands) ++uses[static_cast<size_t>(x)];
  std::vector<int> alias(body.size());
  for (size_t i = 0; i < body.size(); ++i) alias[i] = static_cast<int>(i);
  for (size_t i = 1; i < body.size() && uses[0] == 1; ++i) {  // scale: acc * c, c * acc or acc / c
    const ScalarOp& op = body[i];
    if (op.kind != ScalarKind::Op || op.operands.size() != 2 || !is_float(op.dtype)) continue;
    const int a = op.operands[0], b = op.operands[1];
    double c = 0;
    if (op.op == ir::OpKind::Mul && a == 0 && is_const(body, b, &c)) k.attention.scale = c;
    else if (op.op == ir::OpKind::Mul && b == 0 && is_const(body, a, &c)) k.attention.scale = c;
    else if (op.op == ir::OpKind::Div && a == 0 && is_const(body, b, &c) && c != 0) k.attention.scale = 1.0 / c;
    else continue;
    if (!std::isfinite(k.attention.scale) || k.attention.scale <= 0) {  // a sign flip or inf stays in the body
      k.attention.scale = 1.0;
      continue;
    }
    alias[i] = 0;
    break;
  }
  const ScalarOp& last = body[static_cast<size_t>(score)];
  if (last.kind == ScalarKind::Op && last.op == ir::OpKind::Select) {
    const int cond = last.operands[0], a = last.operands[1], b = last.operands[2];
    if (is_minus_inf(body, a) && is_causal_condition(body, cond, true, rank)) {
      k.attention.causal = true;
      score = b;
    } else if (is_minus_inf(body, b) && is_causal_condition(body, cond, false, rank)) {
      k.attention.causal = true;
      score = a;
    }
  }
  auto resolve = [&](int id) {
    while (alias[static_cast<size_t>(id)] != id) id = alias[static_cast<size_t>(id)];
    return id;
  };
  score = resolve(score);
  std::vector<bool> live(body.size(), false);
  live[0] = true;
  live[static_cast<size_t>(score)] = true;
  for (int i = score; i > 0; --i)
    if (live[static_cast<size_t>(i)])
      for (int x : body[static_cast<size_t>(i)].operands) live[static_cast<size_t>(resolve(x))] = true;
  std::vector<ScalarOp> out;
  std::vector<int> renumber(body.size(), -1);
  for (int i = 0; i <= score; ++i) {
    if (!live[static_cast<size_t>(i)] || alias[static_cast<size_t>(i)] != i) continue;
    ScalarOp op = body[static_cast<size_t>(i)];
    for (int& x : op.operands) x = renumber[static_cast<size_t>(resolve(x))];
    renumber[static_cast<size_t>(i)] = static_cast<int>(out.size());
    out.push_back(std::move(op));
  }
  body = std::move(out);
}

}  // namespace

ir::Kernel build_attention(const std::string& name, const AttentionPattern& p,
                           const std::unordered_map<int, std::string>& names) {
  const Value* x = p.scores;
  const Shape& space = x->type.shape;
  const size_t rank = space.size(), batch_rank = rank - 2;
  ir::Kernel k;
  k.name = name;
  k.kind = ir::KernelKind::Attention;
  k.row_space = space;
  ir::AttentionCore& a = k.attention;
  a.batch.assign(space.begin(), space.end() - 2);
  a.sq = space[batch_rank];
  a.skv = space[batch_rank + 1];
  const Value* out = p.pv->result;
  a.dv = out->type.shape.back();
  a.dtype = out->type.dtype;
  Shape want = a.batch;
  want.push_back(a.sq);
  want.push_back(a.dv);
  if (out->type.shape != want)
    throw Error(fmt::format("kernel @{}: the second matmul's result {} broadcasts past the scores {}", name,
                            out->type.str(), x->type.str()));

  std::unordered_set<std::string> taken;
  auto add_operand = [&](const char* role, const Value* u, bool transposed) {
    ir::KernelArg arg = operand_arg(name, role, u, transposed, p.nodes, names, batch_rank);
    arg.name = unique(taken, arg.name);
    k.args.push_back(std::move(arg));
    return static_cast<int>(k.args.size()) - 1;
  };
  a.q = add_operand("q", p.q, false);
  a.k = add_operand("k", p.k, !p.qk->attrs.get_bool("transpose_b"));
  a.v = add_operand("v", p.pv->operands[1], p.pv->attrs.get_bool("transpose_b"));
  a.d = p.q->type.shape.back();  // q is [..., Sq, D] (transpose_a is false)

  ScalarOp acc;
  acc.kind = ScalarKind::Acc;
  acc.dtype = DType::f32;
  k.add(acc);
  int score = 0;
  if (x != p.qk->result) {
    auto inside = [&](const Value* v) { return v->producer && v->producer != p.qk && p.nodes.count(v->producer); };
    PointwiseBuild b = build_pointwise(name, {x}, inside, names);
    if (b.must_load)
      throw Error(fmt::format("kernel @{}: `{}` cannot become index arithmetic in an attention score", name,
                              ir::print_node(*b.failed_reshape, names)));
    std::vector<int> remap(b.kernel.args.size(), -1);
    int product = -1;
    for (size_t i = 0; i < b.kernel.args.size(); ++i) {
      ir::KernelArg arg = b.kernel.args[i];
      if (arg.is_output) continue;
      if (arg.value_id == p.qk->result->id) {
        if (arg.strides != ir::contiguous_strides(space))
          throw Error(fmt::format("kernel @{}: the score ops read the product %{} at other elements than their own",
                                  name, printed(p.qk->result, names)));
        product = static_cast<int>(i);
        continue;
      }
      arg.name = unique(taken, arg.name);
      remap[i] = static_cast<int>(k.args.size());
      k.args.push_back(std::move(arg));
    }
    std::vector<int> ids(b.kernel.body.size(), -1);
    for (size_t id = 0; id < b.kernel.body.size(); ++id) {
      ScalarOp op = b.kernel.body[id];
      if (op.kind == ScalarKind::Load && op.arg == product) {
        ids[id] = 0;
        continue;
      }
      if (op.kind == ScalarKind::Store) {
        score = ids[static_cast<size_t>(op.operands[0])];
        continue;
      }
      for (int& u : op.operands) u = ids[static_cast<size_t>(u)];
      if (op.kind == ScalarKind::Load) op.arg = remap[static_cast<size_t>(op.arg)];
      ids[id] = k.add(std::move(op));
    }
  }
  a.out = static_cast<int>(k.args.size());
  k.args.push_back(ir::KernelArg{unique(taken, printed(out, names)), out->type, true, ir::contiguous_strides(want),
                                 out->id});
  simplify_score(k, score);
  ir::verify(k);
  return k;
}

ir::Kernel lower_attention_group(const ir::Graph& g, int group, const std::unordered_map<int, std::string>& names) {
  const ir::Group& grp = g.groups().at(static_cast<size_t>(group));
  const GroupNodes nodes = checked_group_nodes(g, group);
  if (nodes.roots.size() != 1 || !nodes.roots[0]->producer)
    throw Error(fmt::format("kernel @{}: an attention kernel has one output, the second matmul's; it has {}", grp.name,
                            nodes.roots.size()));
  std::optional<AttentionPattern> p = match_attention(*nodes.roots[0]->producer);
  if (!p)
    throw Error(fmt::format("kernel @{}: `{}` does not end matmul -> scores -> softmax -> matmul", grp.name,
                            ir::print_node(*nodes.roots[0]->producer, names)));
  for (const Node* n : nodes.members)
    if (!p->nodes.count(n) && !is_free_node(*n))
      throw Error(fmt::format("kernel @{}: `{}` is not part of the attention pattern", grp.name,
                              ir::print_node(*n, names)));
  ir::Kernel k = build_attention(grp.name, *p, names);
  for (const Node* n : nodes.members) k.fused_nodes.push_back(ir::print_node(*n, names));
  choose_config(k, grp);
  return k;
}

}  // namespace kiln::passes
