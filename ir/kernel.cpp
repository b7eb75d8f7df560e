// The kernel IR's generic part: kind names, the iteration space and its collapsed
// form (each reduction kind's form in ir/kernel_<kind>.cpp), the verifier and the
// printer (see kernel.h for the text form).
#include "ir/kernel.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <set>

#include "ir/error.h"
#include "ir/kernel_internal.h"

namespace kiln::ir {

std::string_view kernel_kind_name(KernelKind k) {
  switch (k) {
    case KernelKind::Pointwise: return "pointwise";
    case KernelKind::RowReduce: return "row_reduce";
    case KernelKind::ColReduce: return "col_reduce";
    case KernelKind::Gemm: return "gemm";
    case KernelKind::Attention: return "attention";
  }
  return "?";
}

const Shape& Kernel::space() const {
  if (!row_space.empty()) return row_space;
  for (const KernelArg& a : args)
    if (a.is_output) return a.type.shape;
  throw Error(fmt::format("kernel @{} has no output, so no iteration space", name));
}

std::vector<int64_t> contiguous_strides(const Shape& space) {
  std::vector<int64_t> s = row_major_strides(space);
  for (size_t d = 0; d < space.size(); ++d)
    if (space[d] == 1) s[d] = 0;
  return s;
}

bool is_contiguous(const KernelArg& a, const Shape& space) {
  return a.type.numel() == numel(space) && a.strides == contiguous_strides(space);
}

std::vector<bool> uniform_values(const Kernel& k, const std::function<bool(const std::vector<int64_t>&)>& moves) {
  std::vector<bool> uniform(k.body.size(), true);
  for (size_t id = 0; id < k.body.size(); ++id) {
    const ScalarOp& op = k.body[id];
    switch (op.kind) {
      case ScalarKind::Load: uniform[id] = !moves(k.args.at(op.arg).strides); break;
      case ScalarKind::Index: uniform[id] = !moves(op.coeffs); break;
      case ScalarKind::Op:
      case ScalarKind::Store:
        for (int x : op.operands) uniform[id] = uniform[id] && uniform[x];
        break;
      case ScalarKind::Const:
      case ScalarKind::Reduce: break;
      case ScalarKind::Acc: uniform[id] = false; break;
    }
  }
  return uniform;
}

CollapsedSpace merge_dims(const Shape& space, const std::vector<std::vector<int64_t>>& in, size_t num_args) {
  Shape dims;
  std::vector<std::vector<int64_t>> out(in.size());
  for (size_t d = 0; d < space.size(); ++d) {
    if (space[d] == 1) continue;  // its index is always 0
    bool merge = !dims.empty();
    for (size_t a = 0; a < in.size() && merge; ++a) merge = out[a].back() == in[a][d] * space[d];
    if (merge) {
      dims.back() *= space[d];
      for (size_t a = 0; a < in.size(); ++a) out[a].back() = in[a][d];
    } else {
      dims.push_back(space[d]);
      for (size_t a = 0; a < in.size(); ++a) out[a].push_back(in[a][d]);
    }
  }
  if (dims.empty()) {  // one element: every offset is 0, and arguments read as contiguous
    dims = {1};
    for (size_t a = 0; a < in.size(); ++a) out[a] = {a < num_args ? 1 : 0};
  }
  CollapsedSpace c;
  c.dims = std::move(dims);
  c.arg_strides.assign(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(num_args));
  c.index_coeffs.assign(out.begin() + static_cast<std::ptrdiff_t>(num_args), out.end());
  return c;
}

CollapsedSpace collapse(const Kernel& k) {
  const Shape& space = k.space();
  std::vector<std::vector<int64_t>> in;  // every access: args, then index ops
  for (const KernelArg& a : k.args) in.push_back(a.strides);
  for (const ScalarOp& op : k.body)
    if (op.kind == ScalarKind::Index) in.push_back(op.coeffs);
  if (k.kind == KernelKind::ColReduce && !space.empty()) return collapse_col(k, in);
  if (k.kind == KernelKind::RowReduce && !space.empty()) return collapse_row(k, in);
  return merge_dims(space, in, k.args.size());
}

namespace {

std::string ints_str(const std::vector<int64_t>& v);

// The col-reduce space: reduced dims distinct and sorted (any set of them).
template <class Fail>
void verify_col_space(const Kernel& k, const Fail& fail) {
  const Shape& space = k.space();
  if (space.empty()) fail("a col_reduce kernel needs a space of rank 1 or more");
  if (k.reduced_axes.empty()) fail("a col_reduce kernel reduces at least one dim");
  for (size_t i = 0; i < k.reduced_axes.size(); ++i) {
    int64_t d = k.reduced_axes[i];
    if (d < 0 || d >= static_cast<int64_t>(space.size()) || (i > 0 && d <= k.reduced_axes[i - 1]))
      fail(fmt::format("reduced dims {} must be distinct dims of {}, sorted", ints_str(k.reduced_axes),
                       shape_str(space)));
  }
}

}  // namespace

void verify(const Kernel& k) {
  auto fail = [&](const std::string& what) { throw Error(fmt::format("kernel @{}: {}", k.name, what)); };
  const Shape& space = k.space();
  const size_t rank = space.size();
  if (k.kind == KernelKind::ColReduce) verify_col_space(k, fail);
  if (k.kind == KernelKind::Gemm) verify_gemm(k);
  if (k.kind == KernelKind::Attention) verify_attention(k);
  std::set<std::string> names;
  for (size_t i = 0; i < k.args.size(); ++i) {
    const KernelArg& a = k.args[i];
    if (!names.insert(a.name).second) fail(fmt::format("argument %{} is named twice", a.name));
    const bool gemm_operand = gemm_operand_arg(k, static_cast<int>(i));
    const bool dequantised = k.kind == KernelKind::Gemm && k.gemm.b.dequant.active() &&
                             static_cast<int>(i) == k.gemm.b.arg;
    if (is_storage_only(a.type.dtype) && k.kind != KernelKind::Pointwise && !dequantised && !gemm_operand)
      fail(fmt::format("argument %{} holds {}: only pointwise kernels and dequantised gemm operands read i8 and i4",
                       a.name, a.type.str()));
    if (is_fp8(a.type.dtype) && k.kind != KernelKind::Pointwise && !gemm_operand)
      fail(fmt::format("argument %{} holds {}: only pointwise kernels and gemm operands (widened by their prologue) "
                       "read fp8, and only pointwise kernels write it",
                       a.name, a.type.str()));
    // A gemm's operands span their own [batch..., rows, cols]; verify_gemm checks them.
    if (gemm_operand) continue;
    // An attention kernel's operands and output span their own spaces; verify_attention checks them.
    if (k.kind == KernelKind::Attention && (a.is_output || attention_operand(k, static_cast<int>(i)))) continue;
    if (a.strides.size() != rank)
      fail(fmt::format("argument %{} has {} strides; the iteration space {} has rank {}", a.name, a.strides.size(),
                       shape_str(space), rank));
    if (a.is_output && k.kind == KernelKind::ColReduce) {
      if (a.type.numel() != col_count(k) || a.strides != per_col_strides(k))
        fail(fmt::format("output %{}: {} is not one value per column of the space {} reduced over {}", a.name,
                         a.type.str(), shape_str(space), ints_str(k.reduced_axes)));
      continue;
    }
    if (a.is_output && k.kind == KernelKind::RowReduce) {
      bool full = a.type.shape == space && a.strides == contiguous_strides(space);
      bool per_row = a.type.numel() == row_count(k) && a.strides == per_row_strides(space);
      if (!full && !per_row)
        fail(fmt::format("output %{}: {} is neither the row space {} written contiguously nor one value per row",
                         a.name, a.type.str(), shape_str(space)));
      continue;
    }
    if (a.is_output) {
      if (a.type.shape != space)
        fail(fmt::format("outputs have different shapes ({} and {}); a pointwise kernel has one iteration space",
                         shape_str(space), shape_str(a.type.shape)));
      if (a.strides != contiguous_strides(space)) fail(fmt::format("output %{} is not written contiguously", a.name));
      continue;
    }
    int64_t last = 0;  // the largest offset the kernel reads must lie inside the tensor
    for (size_t d = 0; d < rank; ++d) {
      if (a.strides[d] < 0) fail(fmt::format("argument %{} has a negative stride", a.name));
      last += (space[d] - 1) * a.strides[d];
    }
    if (last >= a.type.numel())
      fail(fmt::format("argument %{} ({}) is read at offset {}, past its end", a.name, a.type.str(), last));
  }
  std::vector<int> stores(k.args.size(), 0);
  for (size_t id = 0; id < k.body.size(); ++id) {
    const ScalarOp& op = k.body[id];
    std::string where = fmt::format("op %{}", id);
    for (int x : op.operands) {
      if (x < 0 || static_cast<size_t>(x) >= id)
        fail(fmt::format("{} uses %{}, which is not defined before it", where, x));
      if (k.body[x].kind == ScalarKind::Store) fail(fmt::format("{} uses a store as a value", where));
    }
    switch (op.kind) {
      case ScalarKind::Load:
      case ScalarKind::Store: {
        if (op.arg < 0 || static_cast<size_t>(op.arg) >= k.args.size()) fail(where + " names no argument");
        const KernelArg& a = k.args[op.arg];
        bool store = op.kind == ScalarKind::Store;
        if (a.is_output != store)
          fail(fmt::format("{} {} %{}, which is an {}", where, store ? "stores to" : "loads", a.name,
                           a.is_output ? "output" : "input"));
        if (op.dtype != a.type.dtype) fail(fmt::format("{} has dtype {}; %{} is {}", where, dtype_name(op.dtype),
                                                       a.name, dtype_name(a.type.dtype)));
        if (store) {
          if (op.operands.size() != 1) fail(where + " must store exactly one value");
          if (k.body[op.operands[0]].dtype != a.type.dtype)
            fail(fmt::format("{} stores a {} value into %{}: {}", where, dtype_name(k.body[op.operands[0]].dtype),
                             a.name, a.type.str()));
          ++stores[op.arg];
        }
        break;
      }
      case ScalarKind::Const: break;
      case ScalarKind::Reduce: {
        if (k.kind != KernelKind::RowReduce && k.kind != KernelKind::ColReduce)
          fail(where + ": only a row_reduce kernel reduces (or a col_reduce one)");
        if (op_info(op.op).category != OpCategory::Reduce)
          fail(fmt::format("{}: {} is not a reduction", where, op_name(op.op)));
        if (op.operands.size() != 1) fail(where + ": a reduction takes one operand");
        int phase = 0;  // one more than the latest reduction under its operand
        std::vector<int> stack{op.operands[0]};
        std::set<int> seen;
        while (!stack.empty()) {
          int x = stack.back();
          stack.pop_back();
          if (!seen.insert(x).second) continue;
          if (k.body[x].kind == ScalarKind::Reduce) phase = std::max(phase, k.body[x].phase + 1);
          else stack.insert(stack.end(), k.body[x].operands.begin(), k.body[x].operands.end());
        }
        if (op.phase != phase) fail(fmt::format("{} is in phase {}; its operand makes it phase {}", where, op.phase,
                                                phase));
        if (k.kind == KernelKind::ColReduce && phase != 0)
          fail(where + ": a col_reduce kernel reads its columns once, so no reduction may depend on another");
        break;
      }
      case ScalarKind::Index:
        if (op.coeffs.size() != rank) fail(where + ": an index needs one coefficient per iteration dim");
        break;
      case ScalarKind::Acc:
        if (k.kind != KernelKind::Gemm && k.kind != KernelKind::Attention)
          fail(where + ": only a gemm or attention kernel has an accumulator to read");
        break;
      case ScalarKind::Op:
        if (!is_elementwise(op.op)) fail(fmt::format("{}: {} is not an element-wise op", where, op_name(op.op)));
        if (static_cast<int>(op.operands.size()) != op_info(op.op).arity)
          fail(fmt::format("{}: {} takes {} operands, got {}", where, op_name(op.op), op_info(op.op).arity,
                           op.operands.size()));
        break;
    }
  }
  if (k.kind == KernelKind::RowReduce) {
    if (rank == 0) fail("a row_reduce kernel needs a row space of rank 1 or more");
    std::vector<bool> uniform = row_uniform(k);
    for (size_t id = 0; id < k.body.size(); ++id) {
      const ScalarOp& op = k.body[id];
      if (op.kind == ScalarKind::Store && k.args[op.arg].strides == per_row_strides(space) &&
          k.args[op.arg].type.shape != space && !uniform[op.operands[0]])
        fail(fmt::format("op %{} stores a value that varies along the row into the per-row output %{}", id,
                         k.args[op.arg].name));
    }
  }
  if (k.kind == KernelKind::ColReduce) {
    std::vector<bool> uniform = col_uniform(k);
    for (size_t id = 0; id < k.body.size(); ++id) {
      const ScalarOp& op = k.body[id];
      if (op.kind == ScalarKind::Store && !uniform[op.operands[0]])
        fail(fmt::format("op %{} stores a value that varies along the reduced dims into the per-column output %{}",
                         id, k.args[op.arg].name));
    }
  }
  for (size_t i = 0; i < k.args.size(); ++i)
    if (k.args[i].is_output && stores[i] != 1 && k.kind != KernelKind::Attention)
      fail(fmt::format("output %{} is stored {} times; it must be stored once", k.args[i].name, stores[i]));
}

namespace {

std::string ints_str(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) s += ",";
    s += std::to_string(v[i]);
  }
  return s + "]";
}

std::string arg_str(const KernelArg& a, const Shape& space) {
  std::string s = fmt::format("{}%{}: {}", a.is_output ? "out " : "", a.name, a.type.str());
  if (!a.is_output && !is_contiguous(a, space)) s += " strides" + ints_str(a.strides);
  return s;
}

}  // namespace

std::string print_scalar_op(const Kernel& k, const ScalarOp& op, size_t id) {
  auto arg_name = [&]() -> std::string {
    return op.arg >= 0 && static_cast<size_t>(op.arg) < k.args.size() ? k.args[op.arg].name : "?";
  };
  std::string operands;
  for (size_t i = 0; i < op.operands.size(); ++i) operands += fmt::format("{}%{}", i ? ", " : "", op.operands[i]);
  std::string type = std::string(dtype_name(op.dtype));
  switch (op.kind) {
    case ScalarKind::Load: return fmt::format("%{} = load %{} : {}", id, arg_name(), type);
    case ScalarKind::Store: return fmt::format("store %{}, {}", arg_name(), operands);
    case ScalarKind::Const: return fmt::format("%{} = const {} : {}", id, attr_value_str(op.value), type);
    case ScalarKind::Index: return fmt::format("%{} = index {} : {}", id, ints_str(op.coeffs), type);
    case ScalarKind::Reduce:
      return fmt::format("%{} = reduce {} {} phase {} : {}", id, op_name(op.op), operands, op.phase, type);
    case ScalarKind::Acc: return fmt::format("%{} = acc : {}", id, type);
    case ScalarKind::Op: {
      std::string attrs;
      for (const auto& [key, value] : op.attrs.items())
        attrs += fmt::format("{}{} = {}", attrs.empty() ? "" : ", ", key, attr_value_str(value));
      return fmt::format("%{} = {} {}{} : {}", id, op_name(op.op), operands, attrs.empty() ? "" : " {" + attrs + "}",
                         type);
    }
  }
  return "?";
}

std::string print(const Kernel& k) {
  const Shape& space = k.space();
  std::string out = fmt::format("kernel @{} {}(", k.name, kernel_kind_name(k.kind));
  for (size_t i = 0; i < k.args.size(); ++i) {
    // A gemm's operands print their layout on the matmul line instead.
    const bool operand = gemm_operand_arg(k, static_cast<int>(i)) ||
                         (k.kind == KernelKind::Attention && attention_operand(k, static_cast<int>(i)));
    const KernelArg& a = k.args[i];
    out += (i ? ", " : "") + (operand ? fmt::format("%{}: {}", a.name, a.type.str()) : arg_str(a, space));
  }
  out += ")";
  if (k.kind == KernelKind::RowReduce) out += " rows " + ints_str(space);
  if (k.kind == KernelKind::ColReduce) out += " space " + ints_str(space) + " reduce " + ints_str(k.reduced_axes);
  if (k.kind == KernelKind::Gemm) out += "\n    " + gemm_core_str(k);
  if (k.kind == KernelKind::Attention) out += "\n    " + attention_core_str(k);
  const bool tensor_core = k.kind == KernelKind::Gemm || k.kind == KernelKind::Attention;
  if (k.config != TileConfig{}) out += (tensor_core ? "\n    config " : " config ") + k.config.str();
  out += " {\n";
  for (size_t id = 0; id < k.body.size(); ++id) out += "  " + print_scalar_op(k, k.body[id], id) + "\n";
  return out + "}\n";
}

}  // namespace kiln::ir
