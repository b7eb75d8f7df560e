#include "tests/fuzz/wide_reference.h"

#include <optional>
#include <unordered_map>

#include "ir/interpreter.h"

namespace kiln::fuzz {

namespace {

using ir::OpCategory;

bool low_precision(DType t) { return t == DType::f16 || t == DType::bf16; }

// Ops whose kernels read their operands at the graph's dtypes and give a result rounded
// to its dtype even inside a kernel (see the header).
bool rounds_in_registers(ir::OpKind op) {
  switch (ir::op_info(op).category) {
    case OpCategory::Cast:
    case OpCategory::Compare:
    case OpCategory::Dequant: return true;
    default: return op == ir::OpKind::Attention;
  }
}

class Widener {
public:
  explicit Widener(const ir::Graph& g) : out_{ir::Graph(g.name()), 0} {
    for (const ir::Value* in : g.inputs()) map_[in] = out_.graph.add_input(in->name, in->type);
    for (const ir::Node* n : g.nodes()) map_[n->result] = rewrite(*n);
    for (const ir::Value* o : g.outputs()) out_.graph.add_output(stored(o));  // the kernel's store rounds
  }
  WideGraph take() { return std::move(out_); }

private:
  bool is_wide(const ir::Value* v) const { return map_.at(v)->type.dtype != v->type.dtype; }

  ir::Value* cast(ir::Value* v, DType t) {
    return out_.graph.add(ir::OpKind::Cast, {v}, {}, TensorType{t, v->type.shape});
  }

  // `v` at its own dtype: a wide value rounded to it, once however many read it.
  ir::Value* stored(const ir::Value* v) {
    if (!is_wide(v)) return map_.at(v);
    ir::Value*& r = stored_[v];
    if (!r) r = cast(map_.at(v), v->type.dtype);
    return r;
  }

  // `v` at f32 where it is f16 / bf16: a wide value as it is, any other one cast (exact).
  ir::Value* at_f32(const ir::Value* v) {
    if (!low_precision(v->type.dtype) || is_wide(v)) return map_.at(v);
    ir::Value*& r = widened_[v];
    if (!r) r = cast(map_.at(v), DType::f32);
    return r;
  }

  ir::Value* rewrite(const ir::Node& n) {
    const ir::OpInfo& info = ir::op_info(n.op);
    std::vector<ir::Value*> operands;
    ir::Value* r = nullptr;
    if (info.category == OpCategory::View) {  // a view moves elements: it keeps its operand's precision
      for (const ir::Value* o : n.operands) operands.push_back(map_.at(o));
      std::optional<TensorType> type;
      if (info.type_from_annotation) type = TensorType{operands[0]->type.dtype, n.result->type.shape};
      r = out_.graph.add(n.op, operands, n.attrs, type);
    } else if (info.category == OpCategory::Matmul && low_precision(n.result->type.dtype)) {
      // Tensor Cores read the operands at their dtype; the fp32 sums stay wide.
      for (const ir::Value* o : n.operands) operands.push_back(cast(stored(o), DType::f32));
      r = out_.graph.add(n.op, operands, n.attrs);
      ++out_.widened;
    } else if (info.category == OpCategory::Source || rounds_in_registers(n.op) ||
               !low_precision(n.result->type.dtype)) {
      for (const ir::Value* o : n.operands) operands.push_back(stored(o));
      r = out_.graph.add(n.op, operands, n.attrs, n.result->type);
    } else {  // element-wise math, a reduction, a norm or softmax: computed in fp32 registers
      for (const ir::Value* o : n.operands) operands.push_back(at_f32(o));
      r = out_.graph.add(n.op, operands, n.attrs);
      ++out_.widened;
    }
    r->name = n.result->name;
    return r;
  }

  WideGraph out_;
  std::unordered_map<const ir::Value*, ir::Value*> map_, stored_, widened_;
};

}  // namespace

WideGraph wide_graph(const ir::Graph& g) { return Widener(g).take(); }

std::vector<HostTensor> wide_reference(const ir::Graph& g, const std::vector<HostTensor>& inputs) {
  return ir::evaluate(wide_graph(g).graph, inputs);
}

}  // namespace kiln::fuzz
