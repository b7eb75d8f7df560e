#include "passes/dequant_fold.h"

namespace kiln::passes {

bool dequant_folds_into_matmul(const ir::Graph& g, const ir::Node& dequant) {
  if (dequant.op != ir::OpKind::Dequant) return false;
  for (const ir::Value* u : dequant.operands)
    if (u->producer) return false;
  const TensorType& w = dequant.operands[0]->type;
  const DType out = dequant.result->type.dtype;
  const int64_t group = dequant.attrs.get_int("group");
  // K of 1 leaves the weight's layout ambiguous (both strides 1): such a dequant is expanded.
  if (w.rank() != 2 || w.shape[1] < 2 || (out != DType::f16 && out != DType::bf16)) return false;
  if (group % 8 != 0 && group != w.shape[1]) return false;
  for (const ir::Value* o : g.outputs())
    if (o == dequant.result) return false;
  const std::vector<std::vector<ir::Node*>> users = g.users();
  const std::vector<ir::Node*>& readers = users[static_cast<size_t>(dequant.result->id)];
  if (readers.empty()) return false;
  for (const ir::Node* r : readers)
    if (r->op != ir::OpKind::Matmul || r->operands[0] == dequant.result || r->operands[1] != dequant.result ||
        !r->attrs.get_bool("transpose_b"))
      return false;
  return true;
}

}  // namespace kiln::passes
