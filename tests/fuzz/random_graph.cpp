// The random graph generator (see random_graph.h): one method per op family, each
// drawing its operands, attributes and result types from the decisions.
#include "tests/fuzz/random_graph.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>

#include "ir/error.h"

namespace kiln::fuzz {

namespace {

using ir::OpCategory;
using ir::OpKind;
using ir::Value;

// Sizes that meet the edge cases of tiling: 1 (broadcast), odd and prime sizes (tails),
// powers of two (vector loads), one past a power of two.
const std::vector<int64_t> kDims = {1, 1, 2, 3, 4, 5, 7, 8, 16, 17, 32, 33, 64, 128};
const std::vector<int64_t> kSmallDims = {1, 2, 3, 4, 8, 16, 17, 32};
const std::vector<DType> kDTypes = {DType::f32, DType::f32, DType::f16, DType::bf16, DType::i32, DType::i1};
const std::vector<DType> kFloats = {DType::f32, DType::f16, DType::bf16};
const std::vector<double> kConstants = {0, 1, -1, 0.5, 2, -3.25, 1e-3, 100, 7};

std::vector<int64_t> prime_factors(int64_t n) {
  std::vector<int64_t> f;
  for (int64_t p = 2; p * p <= n; ++p)
    while (n % p == 0) {
      f.push_back(p);
      n /= p;
    }
  if (n > 1) f.push_back(n);
  return f;
}

class Generator {
public:
  Generator(Decisions& d, const GeneratorLimits& limits, GeneratorStats& stats)
      : d_(d), limits_(limits), stats_(stats), g_("fuzz") {}

  ir::Graph run() {
    const int ops = 1 + static_cast<int>(d_.below(static_cast<uint32_t>(std::max(limits_.max_ops, 1))));
    for (int i = 0; i < ops && !(i > 0 && d_.exhausted()); ++i) one_op(d_.pick(ir::all_ops()));
    choose_outputs();
    return std::move(g_);
  }

private:
  // ---- shapes and values ----
  bool fits(const Shape& s) const { return numel(s) <= limits_.max_elements; }

  Shape fit(Shape s) const {
    while (!fits(s)) {
      auto largest = std::max_element(s.begin(), s.end());
      *largest = (*largest + 1) / 2;
    }
    return s;
  }

  Shape random_shape(int min_rank = 0) {
    int span = std::max(limits_.max_rank - min_rank, 0);
    int rank = min_rank + static_cast<int>(d_.below(static_cast<uint32_t>(span + 1)));
    if (rank == 0 && !d_.one_in(3)) rank = std::min(1, limits_.max_rank);  // scalars now and then
    Shape s;
    for (int i = 0; i < rank; ++i) s.push_back(d_.pick(kDims));
    return fit(s);
  }

  Value* input(TensorType t) {
    Value* v = g_.add_input(fmt::format("in{}", inputs_++), std::move(t));
    pool_.push_back(v);
    return v;
  }

  Value* add(OpKind op, std::vector<Value*> operands, const ir::Attrs& attrs = {},
             std::optional<TensorType> type = std::nullopt) {
    for (Value* v : operands)
      if (!v) return nullptr;
    try {
      Value* v = g_.add(op, std::move(operands), attrs, std::move(type));
      pool_.push_back(v);
      ++stats_.ops;
      return v;
    } catch (const Error&) {
      ++stats_.rejected;
      return nullptr;
    }
  }

  // A recent value most of the time, so that chains form; any value otherwise.
  Value* pick() {
    if (pool_.empty()) return input({d_.pick(kDTypes), random_shape()});
    size_t n = pool_.size();
    if (!d_.one_in(4)) return pool_[n - 1 - d_.below(static_cast<uint32_t>(std::min<size_t>(n, 4)))];
    return pool_[d_.below(static_cast<uint32_t>(n))];
  }

  Value* pick_where(const std::function<bool(const Value*)>& ok) {
    std::vector<Value*> found;
    for (Value* v : pool_)
      if (ok(v)) found.push_back(v);
    if (found.empty()) return nullptr;
    if (!d_.one_in(3)) return found.back();  // the most recent
    return d_.pick(found);
  }

  // A value of at least `rank` dims: a recent one, else a new float input.
  Value* pick_ranked(int rank) {
    Value* v = pick();
    if (v->type.rank() >= rank) return v;
    if (Value* w = pick_where([rank](const Value* x) { return x->type.rank() >= rank; })) return w;
    return input({d_.pick(kFloats), fit(random_shape(rank))});
  }

  Value* cast(Value* v, DType dt) {
    if (!v || v->type.dtype == dt) return v;
    return add(OpKind::Cast, {v}, {}, TensorType{dt, v->type.shape});
  }
  Value* as_float(Value* v) { return v && is_float(v->type.dtype) ? v : cast(v, d_.pick(kFloats)); }
  Value* as_numeric(Value* v) {
    return v && v->type.dtype == DType::i1 ? cast(v, d_.one_in(2) ? DType::i32 : DType::f32) : v;
  }

  Value* constant(DType dt, Shape shape = {}) {
    double value = d_.pick(kConstants);
    if (dt == DType::i1) value = value != 0 ? 1 : 0;
    if (dt == DType::i32) value = std::trunc(value);
    ir::Attrs a;
    a.set("value", value);
    return add(OpKind::Const, {}, a, TensorType{dt, std::move(shape)});
  }

  // A value of type `t`: one already made (cast if need be), a constant for a
  // scalar, or a new input.
  Value* of_type(const TensorType& t) {
    if (!d_.one_in(4))
      if (Value* v = pick_where([&](const Value* x) { return x->type.shape == t.shape; })) return cast(v, t.dtype);
    if (t.shape.empty() && d_.one_in(2)) return constant(t.dtype);
    return input(t);
  }

  // A shape that broadcasts with `s`, whose broadcast with `s` still fits.
  Shape partner(const Shape& s) {
    Shape p = s;
    switch (d_.below(6)) {
      case 0: return {};  // a scalar
      case 1: p.erase(p.begin(), p.begin() + d_.below(static_cast<uint32_t>(p.size() + 1))); return p;  // a suffix
      case 2:  // some dims 1
        for (int64_t& dim : p)
          if (d_.one_in(2)) dim = 1;
        return p;
      case 3: {  // one more leading dim
        Shape q = p;
        q.insert(q.begin(), d_.pick(kSmallDims));
        if (fits(q) && static_cast<int>(q.size()) <= limits_.max_rank) return q;
        return p;
      }
      default: return p;
    }
  }

  // ---- ops, by family ----
  void one_op(OpKind op) {
    switch (ir::op_info(op).category) {
      case OpCategory::Unary: return unary(op);
      case OpCategory::Cast: return cast_op();
      case OpCategory::Binary:
      case OpCategory::Compare: return binary(op);
      case OpCategory::Select: return select();
      case OpCategory::Source: return op == OpKind::Const ? const_op() : iota();
      case OpCategory::Reduce: return reduce(op);
      case OpCategory::View: return view(op);
      case OpCategory::Matmul: return matmul();
      case OpCategory::Dequant: return dequant();
      case OpCategory::Composite:
        if (op == OpKind::Attention) return attention();
        if (op == OpKind::LayerNorm || op == OpKind::RmsNorm) return norm(op);
        return softmax(op);
    }
  }

  // Draws happen one statement at a time: the order of a call's arguments is the
  // compiler's choice, and the same bytes must give the same graph everywhere.
  void const_op() {
    DType dt = d_.pick(kDTypes);
    Shape s = d_.one_in(4) ? random_shape() : Shape{};
    constant(dt, s);
  }

  void unary(OpKind op) {
    Value* x = pick();
    x = op == OpKind::Neg || op == OpKind::Abs ? as_numeric(x) : as_float(x);
    ir::Attrs a;
    if (op == OpKind::Gelu) a.set("approximate", std::string(d_.one_in(2) ? "tanh" : "none"));
    add(op, {x}, a);
  }

  void cast_op() {
    Value* x = pick();
    DType to = d_.pick(kDTypes);
    if (to == x->type.dtype) to = to == DType::f32 ? DType::f16 : DType::f32;
    cast(x, to);
  }

  void binary(OpKind op) {
    Value* a = pick();
    if (op == OpKind::Pow) a = as_float(a);
    else if (op != OpKind::Eq && op != OpKind::Ne) a = as_numeric(a);
    if (!a) return;
    Value* b = of_type({a->type.dtype, partner(a->type.shape)});
    if (d_.one_in(2)) std::swap(a, b);
    add(op, {a, b});
  }

  void select() {
    Value* x = pick();
    const Shape& s = x->type.shape;
    Value* cond = pick_where([&](const Value* c) {
      auto b = broadcast_shapes(c->type.shape, s);
      return c->type.dtype == DType::i1 && b && fits(*b);
    });
    if (!cond || d_.one_in(3)) {
      Value* n = as_numeric(x);
      if (!n) return;
      OpKind compare = d_.one_in(2) ? OpKind::Gt : OpKind::Le;
      Value* zero_or_so = constant(n->type.dtype);
      cond = add(compare, {n, zero_or_so});
    }
    Value* y = of_type({x->type.dtype, partner(s)});
    if (d_.one_in(2)) std::swap(x, y);
    add(OpKind::Select, {cond, x, y});
  }

  void iota() {
    Shape s = random_shape(1);
    if (s.empty()) return;
    const int rank = static_cast<int>(s.size());
    ir::Attrs a;
    a.set("axis", int64_t{static_cast<int64_t>(d_.below(static_cast<uint32_t>(2 * rank))) - rank});
    add(OpKind::Iota, {}, a, TensorType{d_.pick(std::vector<DType>{DType::i32, DType::f32, DType::f16}), s});
  }

  std::vector<int64_t> some_axes(int rank) {
    std::vector<int64_t> axes;
    for (int i = 0; i < rank; ++i)
      if (d_.one_in(2)) axes.push_back(d_.one_in(3) ? i - rank : i);
    if (axes.empty()) axes.push_back(d_.one_in(2) ? -1 : static_cast<int64_t>(d_.below(static_cast<uint32_t>(rank))));
    return axes;
  }

  void reduce(OpKind op) {
    Value* x = pick_ranked(1);
    if (op == OpKind::ReduceMean || op == OpKind::ReduceLogSumExp || op == OpKind::ReduceVar) x = as_float(x);
    else x = as_numeric(x);
    if (!x) return;
    ir::Attrs a;
    a.set("axis", some_axes(x->type.rank()));
    a.set("keepdim", d_.one_in(2));
    add(op, {x}, a);
  }

  void view(OpKind op) {
    Value* x = pick();
    Shape s = x->type.shape;
    if (op == OpKind::Transpose) {
      std::vector<int64_t> perm(s.size());
      for (size_t i = 0; i < perm.size(); ++i) perm[i] = static_cast<int64_t>(i);
      for (size_t i = perm.size(); i > 1; --i) std::swap(perm[i - 1], perm[d_.below(static_cast<uint32_t>(i))]);
      ir::Attrs a;
      a.set("perm", perm);
      add(op, {x}, a);
      return;
    }
    if (op == OpKind::Broadcast) {
      Shape to = s;
      for (int64_t& dim : to) {
        int64_t was = dim;
        if (dim == 1 && d_.one_in(2)) dim = d_.pick(kDims);
        if (!fits(to)) dim = was;
      }
      for (int lead = static_cast<int>(d_.below(3)); lead > 0 && static_cast<int>(to.size()) < limits_.max_rank;
           --lead) {
        Shape more = to;
        more.insert(more.begin(), d_.pick(kSmallDims));
        if (fits(more)) to = more;
      }
      add(op, {x}, {}, TensorType{x->type.dtype, to});
      return;
    }
    // Reshape: the element count's prime factors spread over a few dims, with 1s.
    const int rank = 1 + static_cast<int>(d_.below(static_cast<uint32_t>(std::max(limits_.max_rank, 1))));
    Shape to(static_cast<size_t>(rank), 1);
    for (int64_t f : prime_factors(x->type.numel())) to[d_.below(static_cast<uint32_t>(rank))] *= f;
    if (d_.one_in(5)) to = {};  // to a scalar, when there is one element
    if (numel(to) != x->type.numel()) to = {x->type.numel()};
    add(op, {x}, {}, TensorType{x->type.dtype, to});
  }

  void matmul() {
    const bool ta = d_.one_in(3), tb = d_.one_in(3);
    ir::Attrs attrs;
    attrs.set("transpose_a", ta);
    attrs.set("transpose_b", tb);
    Value* a = nullptr;
    Shape batch;
    int64_t m = d_.pick(kDims), k = d_.pick(kDims), n = d_.pick(kDims);
    if (!d_.one_in(3))
      a = pick_where([](const Value* v) { return v->type.rank() >= 2 && is_float(v->type.dtype); });
    if (a) {  // the product of something made already: its prologue can fuse
      const Shape& s = a->type.shape;
      batch.assign(s.begin(), s.end() - 2);
      m = s[s.size() - (ta ? 1 : 2)];
      k = s[s.size() - (ta ? 2 : 1)];
    } else {
      for (int i = static_cast<int>(d_.below(3)); i > 0; --i) batch.push_back(d_.pick(kSmallDims));
      Shape sa = batch;
      sa.push_back(ta ? k : m);
      sa.push_back(ta ? m : k);
      if (!fits(sa)) return;
      a = of_type({d_.pick(kFloats), sa});
    }
    Shape batch_b = partner(batch);
    if (batch_b.size() > batch.size()) batch_b = batch;
    Shape sb = batch_b;
    sb.push_back(tb ? n : k);
    sb.push_back(tb ? k : n);
    Shape out = *broadcast_shapes(batch, batch_b);
    out.push_back(m);
    out.push_back(n);
    if (!fits(sb) || !fits(out)) return;
    Value* b = of_type({a->type.dtype, sb});
    add(OpKind::Matmul, {a, b}, attrs);
  }

  // Integer weights with group scales (and sometimes zero points), as decoding reads
  // them: half the time the B operand of a matmul with transpose_b (the folded form),
  // else a value like any other (expanded into element-wise ops).
  void dequant() {
    const DType wt = d_.one_in(2) ? DType::i4 : DType::i8;
    const int64_t group = d_.pick(std::vector<int64_t>{1, 2, 8, 16, 32});
    int64_t k = group * (1 + static_cast<int64_t>(d_.below(4)));
    if (wt == DType::i4 && k % 2 != 0) k *= 2;
    Shape ws{d_.pick(kDims), k};
    if (d_.one_in(4)) ws.insert(ws.begin(), d_.pick(kSmallDims));
    if (!fits(ws)) return;
    Shape ss = ws;
    ss.back() = k / group;
    const DType st = d_.pick(kFloats);
    // The weights, scales and zero points stay out of the pool: other ops would refuse i8 / i4.
    auto weight_input = [&](TensorType t) { return g_.add_input(fmt::format("in{}", inputs_++), std::move(t)); };
    std::vector<Value*> operands = {weight_input({wt, ws}), weight_input({st, ss})};
    // Zero points of the weights' type; an i4 input needs an even last dim.
    const bool integer_zero = d_.one_in(2) && (wt != DType::i4 || ss.back() % 2 == 0);
    if (d_.one_in(3)) operands.push_back(weight_input({integer_zero ? wt : st, ss}));
    ir::Attrs attrs;
    attrs.set("group", group);
    Value* w = add(OpKind::Dequant, std::move(operands), attrs);
    if (!w || ws.size() != 2 || d_.one_in(2)) return;
    const int64_t m = d_.pick(kDims);
    if (!fits({m, k}) || !fits({m, ws[0]})) return;
    Value* x = of_type({st, {m, k}});
    ir::Attrs mm;
    mm.set("transpose_b", true);
    add(OpKind::Matmul, {x, w}, mm);
  }

  int64_t some_axis(int rank) { return static_cast<int64_t>(d_.below(static_cast<uint32_t>(2 * rank))) - rank; }

  void softmax(OpKind op) {
    Value* x = as_float(pick_ranked(1));
    if (!x) return;
    ir::Attrs a;
    a.set("axis", some_axis(x->type.rank()));
    add(op, {x}, a);
  }

  void norm(OpKind op) {
    Value* x = as_float(pick_ranked(1));
    if (!x) return;
    const int64_t axis = some_axis(x->type.rank());
    const Shape row{x->type.shape[static_cast<size_t>(*normalize_axis(axis, x->type.rank()))]};
    ir::Attrs a;
    a.set("axis", axis);
    a.set("eps", d_.pick(std::vector<double>{1e-5, 1e-6, 0.1}));
    std::vector<Value*> operands{x, of_type({x->type.dtype, row})};
    if (op == OpKind::LayerNorm) operands.push_back(of_type({x->type.dtype, row}));
    add(op, operands, a);
  }

  void attention() {
    Value* q = nullptr;
    if (!d_.one_in(3))
      q = pick_where([](const Value* v) { return v->type.rank() >= 2 && is_float(v->type.dtype); });
    if (!q) {
      Shape s;
      for (int i = static_cast<int>(d_.below(3)); i > 0; --i) s.push_back(d_.pick(kSmallDims));
      s.push_back(d_.pick(kDims));
      s.push_back(d_.pick(kSmallDims));
      if (!fits(s)) return;
      q = of_type({d_.pick(kFloats), s});
    }
    const Shape& s = q->type.shape;
    Shape batch(s.begin(), s.end() - 2);
    const int64_t d = s.back(), keys = d_.pick(kDims), dv = d_.pick(kSmallDims);
    Shape sk = batch, sv = batch;
    sk.insert(sk.end(), {keys, d});
    sv.insert(sv.end(), {keys, dv});
    Shape out = batch;
    out.insert(out.end(), {s[s.size() - 2], dv});
    if (!fits(sk) || !fits(sv) || !fits(out)) return;
    ir::Attrs a;
    a.set("scale", d_.pick(std::vector<double>{1.0 / std::sqrt(static_cast<double>(d)), 0.125, 1.0}));
    a.set("causal", d_.one_in(2));
    add(OpKind::Attention, {q, of_type({q->type.dtype, sk}), of_type({q->type.dtype, sv})}, a);
  }

  // The last value made, and a few others.
  void choose_outputs() {
    if (g_.num_nodes() == 0) {
      Value* x = pick();
      add(OpKind::Relu, {as_float(x)});
    }
    std::vector<Value*> outs;
    for (auto it = pool_.rbegin(); it != pool_.rend(); ++it)
      if ((*it)->producer) {
        outs.push_back(*it);
        break;
      }
    const int more = static_cast<int>(d_.below(static_cast<uint32_t>(std::max(limits_.max_outputs, 1))));
    for (int i = 0; i < more; ++i) {
      Value* v = d_.pick(pool_);
      if (std::find(outs.begin(), outs.end(), v) == outs.end()) outs.push_back(v);
    }
    for (Value* v : outs) g_.add_output(v);
  }

  Decisions& d_;
  const GeneratorLimits& limits_;
  GeneratorStats& stats_;
  ir::Graph g_;
  std::vector<Value*> pool_;
  int inputs_ = 0;
};

}  // namespace

ir::Graph random_graph(Decisions& d, const GeneratorLimits& limits, GeneratorStats* stats) {
  GeneratorStats ignored;
  return Generator(d, limits, stats ? *stats : ignored).run();
}

}  // namespace kiln::fuzz
