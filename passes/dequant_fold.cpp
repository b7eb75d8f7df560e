#include "passes/dequant_fold.h"

#include "ir/kernel_gemm.h"

namespace kiln::passes {

namespace {

// The one reader of `v`, when it has exactly one and is not a graph output.
const ir::Node* only_reader(const ir::Graph& g, const std::vector<std::vector<ir::Node*>>& users, const ir::Value* v) {
  for (const ir::Value* o : g.outputs())
    if (o == v) return nullptr;
  const std::vector<ir::Node*>& readers = users[static_cast<size_t>(v->id)];
  return readers.size() == 1 ? readers[0] : nullptr;
}

// The gemv reads the interleaved weight: at most 16 rows of activations, one matrix,
// row-major (a later pass decides the rest; these are what it needs to read it).
bool gemv_reads(const ir::Node& matmul, DType operand) {
  const TensorType& a = matmul.operands[0]->type;
  return a.rank() == 2 && a.dtype == operand && !matmul.attrs.get_bool("transpose_a") && a.shape[0] <= 16;
}

// Whether `w` is the interleaved layout of a graph input whose transpose and reshape
// nothing else reads (so that folding them leaves no other kernel needing them).
bool interleaved_weight_input(const ir::Graph& g, const std::vector<std::vector<ir::Node*>>& users,
                              const ir::Value* w) {
  if (!interleaved_weight_source(w)) return false;
  const ir::Node* reshape = w->producer;
  const ir::Node* transpose = reshape->operands[0]->producer;
  return only_reader(g, users, transpose->result) == reshape && only_reader(g, users, reshape->result);
}

}  // namespace

const ir::Value* interleaved_weight_source(const ir::Value* w) {
  const ir::Node* reshape = w->producer;
  if (!reshape || reshape->op != ir::OpKind::Reshape) return nullptr;
  const ir::Node* transpose = reshape->operands[0]->producer;
  if (!transpose || transpose->op != ir::OpKind::Transpose || transpose->attrs.get_ints("perm") !=
                                                                   std::vector<int64_t>{0, 2, 1, 3})
    return nullptr;
  const ir::Value* wp = transpose->operands[0];
  if (wp->producer) return nullptr;
  const TensorType& p = wp->type;
  if (p.dtype != DType::i4 && p.dtype != DType::i8) return nullptr;
  const int64_t e = ir::gemm_piece_elems(p.dtype);
  if (p.rank() != 4 || p.shape[2] != 8 || p.shape[3] != e) return nullptr;
  if (w->type.shape != Shape{p.shape[0] * 8, p.shape[1] * e} || w->type.dtype != p.dtype) return nullptr;
  return wp;
}

bool dequant_folds_into_matmul(const ir::Graph& g, const ir::Node& dequant) {
  if (dequant.op != ir::OpKind::Dequant) return false;
  const std::vector<std::vector<ir::Node*>> users = g.users();
  const ir::Value* weight = dequant.operands[0];
  const bool interleaved = weight->producer && interleaved_weight_input(g, users, weight);
  for (const ir::Value* u : dequant.operands)
    if (u->producer && !(u == weight && interleaved)) return false;
  const TensorType& w = weight->type;
  const DType out = dequant.result->type.dtype;
  const int64_t group = dequant.attrs.get_int("group");
  // K of 1 leaves the weight's layout ambiguous (both strides 1): such a dequant is expanded.
  if (w.rank() != 2 || w.shape[1] < 2 || (out != DType::f16 && out != DType::bf16)) return false;
  if (group % 8 != 0 && group != w.shape[1]) return false;
  if (interleaved && group % ir::gemm_piece_elems(w.dtype) != 0 && group != w.shape[1]) return false;
  for (const ir::Value* o : g.outputs())
    if (o == dequant.result) return false;
  const std::vector<ir::Node*>& readers = users[static_cast<size_t>(dequant.result->id)];
  if (readers.empty()) return false;
  for (const ir::Node* r : readers) {
    if (r->op != ir::OpKind::Matmul || r->operands[0] == dequant.result || r->operands[1] != dequant.result ||
        !r->attrs.get_bool("transpose_b"))
      return false;
    if (interleaved && !gemv_reads(*r, out)) return false;
  }
  return true;
}

}  // namespace kiln::passes
