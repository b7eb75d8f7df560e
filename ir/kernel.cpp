// The kernel IR's helpers: the iteration space and its collapsed form, the
// verifier and the printer (see kernel.h for the text form).
#include "ir/kernel.h"

#include <fmt/format.h>

#include <set>

#include "ir/error.h"

namespace kiln::ir {

std::string_view kernel_kind_name(KernelKind k) {
  switch (k) {
    case KernelKind::Pointwise: return "pointwise";
  }
  return "?";
}

const Shape& Kernel::space() const {
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

CollapsedSpace collapse(const Kernel& k) {
  const Shape& space = k.space();
  std::vector<std::vector<int64_t>> in;  // every access: args, then index ops
  for (const KernelArg& a : k.args) in.push_back(a.strides);
  for (const ScalarOp& op : k.body)
    if (op.kind == ScalarKind::Index) in.push_back(op.coeffs);

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
    for (size_t a = 0; a < in.size(); ++a) out[a] = {a < k.args.size() ? 1 : 0};
  }
  CollapsedSpace c;
  c.dims = std::move(dims);
  c.arg_strides.assign(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(k.args.size()));
  c.index_coeffs.assign(out.begin() + static_cast<std::ptrdiff_t>(k.args.size()), out.end());
  return c;
}

void verify(const Kernel& k) {
  auto fail = [&](const std::string& what) { throw Error(fmt::format("kernel @{}: {}", k.name, what)); };
  const Shape& space = k.space();
  const size_t rank = space.size();
  std::set<std::string> names;
  for (const KernelArg& a : k.args) {
    if (!names.insert(a.name).second) fail(fmt::format("argument %{} is named twice", a.name));
    if (a.strides.size() != rank)
      fail(fmt::format("argument %{} has {} strides; the iteration space {} has rank {}", a.name, a.strides.size(),
                       shape_str(space), rank));
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
      case ScalarKind::Index:
        if (op.coeffs.size() != rank) fail(where + ": an index needs one coefficient per iteration dim");
        break;
      case ScalarKind::Op:
        if (!is_elementwise(op.op)) fail(fmt::format("{}: {} is not an element-wise op", where, op_name(op.op)));
        if (static_cast<int>(op.operands.size()) != op_info(op.op).arity)
          fail(fmt::format("{}: {} takes {} operands, got {}", where, op_name(op.op), op_info(op.op).arity,
                           op.operands.size()));
        break;
    }
  }
  for (size_t i = 0; i < k.args.size(); ++i)
    if (k.args[i].is_output && stores[i] != 1)
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

std::string op_str(const Kernel& k, size_t id) {
  const ScalarOp& op = k.body[id];
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

}  // namespace

std::string print(const Kernel& k) {
  const Shape& space = k.space();
  std::string out = fmt::format("kernel @{} {}(", k.name, kernel_kind_name(k.kind));
  for (size_t i = 0; i < k.args.size(); ++i) out += (i ? ", " : "") + arg_str(k.args[i], space);
  out += ")";
  if (k.config != TileConfig{}) out += " config " + k.config.str();
  out += " {\n";
  for (size_t id = 0; id < k.body.size(); ++id) out += "  " + op_str(k, id) + "\n";
  return out + "}\n";
}

}  // namespace kiln::ir
