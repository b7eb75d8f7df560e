// The attention kind's kernel IR: operand layouts, the attention line of the text form
// and the checks of an attention kernel's core (see kernel_attention.h).
#include "ir/kernel_attention.h"

#include <fmt/format.h>

#include "ir/attrs.h"
#include "ir/error.h"
#include "ir/kernel.h"

namespace kiln::ir {

namespace {

std::string strides_str(const std::vector<int64_t>& v) { return fmt::format("[{}]", fmt::join(v, ",")); }

// The logical [batch..., rows, cols] an operand argument spans.
Shape operand_space(const AttentionCore& a, int arg) {
  Shape s = a.batch;
  s.push_back(arg == a.q ? a.sq : a.skv);
  s.push_back(arg == a.v ? a.dv : a.d);
  return s;
}

}  // namespace

AttentionLayout attention_layout(const Kernel& k, int arg) {
  const std::vector<int64_t>& st = k.args.at(static_cast<size_t>(arg)).strides;
  AttentionLayout l;
  l.batch_strides.assign(st.begin(), st.end() - 2);
  const int64_t rows = arg == k.attention.q ? k.attention.sq : k.attention.skv;
  const int64_t cols = arg == k.attention.v ? k.attention.dv : k.attention.d;
  // A single row has stride 0: any row stride reads the same elements.
  l.ld = st[st.size() - 2] != 0 || rows != 1 ? st[st.size() - 2] : cols;
  return l;
}

bool attention_operand(const Kernel& k, int arg) {
  return arg == k.attention.q || arg == k.attention.k || arg == k.attention.v;
}

bool attention_plain_score(const Kernel& k) { return k.body.size() == 1 && k.body[0].kind == ScalarKind::Acc; }

int64_t attention_batch_count(const AttentionCore& a) { return numel(a.batch); }

std::string attention_core_str(const Kernel& k) {
  const AttentionCore& a = k.attention;
  auto operand = [&](const char* role, int arg) {
    const KernelArg& x = k.args.at(static_cast<size_t>(arg));
    return fmt::format("{} %{} strides{}", role, x.name, strides_str(x.strides));
  };
  std::string batch = a.batch.empty() ? "" : fmt::format("batch {} ", shape_str(a.batch));
  return fmt::format("attention {}{}x{} d {} dv {} {} {} {} {} -> f32 scale {}{}", batch, a.sq, a.skv, a.d, a.dv,
                     operand("q", a.q), operand("k", a.k), operand("v", a.v), dtype_name(a.dtype), attr_value_str(AttrValue{a.scale}),
                     a.causal ? " causal" : "");
}

void verify_attention(const Kernel& k) {
  auto fail = [&](const std::string& what) { throw Error(fmt::format("kernel @{}: {}", k.name, what)); };
  const AttentionCore& a = k.attention;
  if (a.sq < 1 || a.skv < 1 || a.d < 1 || a.dv < 1)
    fail(fmt::format("attention sizes {}x{} d {} dv {} must be positive", a.sq, a.skv, a.d, a.dv));
  if (a.dtype != DType::f16 && a.dtype != DType::bf16)
    fail(fmt::format("attention operands must be f16 or bf16, not {}", dtype_name(a.dtype)));
  Shape scores = a.batch;
  scores.push_back(a.sq);
  scores.push_back(a.skv);
  if (k.space() != scores)
    fail(fmt::format("the score space {} is not [batch..., Sq, Skv] = {}", shape_str(k.space()), shape_str(scores)));
  auto in_range = [&](int arg) { return arg >= 0 && static_cast<size_t>(arg) < k.args.size(); };
  for (auto [role, arg] : {std::pair{"q", a.q}, std::pair{"k", a.k}, std::pair{"v", a.v}}) {
    if (!in_range(arg)) fail(fmt::format("operand {} names no argument", role));
    const KernelArg& x = k.args[static_cast<size_t>(arg)];
    if (x.is_output) fail(fmt::format("operand {} (%{}) is an output", role, x.name));
    if (x.type.dtype != a.dtype)
      fail(fmt::format("operand {} (%{}) is {}; the kernel multiplies {}", role, x.name, x.type.str(),
                       dtype_name(a.dtype)));
    const Shape space = operand_space(a, arg);
    if (x.strides.size() != space.size())
      fail(fmt::format("operand {} (%{}) has {} strides; its space {} has rank {}", role, x.name, x.strides.size(),
                       shape_str(space), space.size()));
    int64_t last = 0;
    for (size_t d = 0; d < space.size(); ++d) {
      if (x.strides[d] < 0) fail(fmt::format("operand {} (%{}) has a negative stride", role, x.name));
      last += (space[d] - 1) * x.strides[d];
    }
    if (last >= x.type.numel())
      fail(fmt::format("operand {} (%{}: {}) is read at offset {}, past its end", role, x.name, x.type.str(), last));
    if (x.strides.back() != 1 && space.back() != 1)
      fail(fmt::format("operand {} (%{}) strides {}: its head dim must be contiguous", role, x.name,
                       strides_str(x.strides)));
  }
  if (!in_range(a.out)) fail("the output names no argument");
  const KernelArg& out = k.args[static_cast<size_t>(a.out)];
  Shape out_space = a.batch;
  out_space.push_back(a.sq);
  out_space.push_back(a.dv);
  if (!out.is_output || out.type.shape != out_space || out.type.dtype != a.dtype ||
      out.strides != contiguous_strides(out_space))
    fail(fmt::format("the output %{} ({}) must be {}[{}] written contiguously", out.name, out.type.str(),
                     dtype_name(a.dtype), fmt::join(out_space, ",")));
  for (size_t i = 0; i < k.args.size(); ++i)
    if (k.args[i].is_output && static_cast<int>(i) != a.out)
      fail(fmt::format("argument %{}: an attention kernel has one output", k.args[i].name));
  if (k.body.empty() || k.body[0].kind != ScalarKind::Acc) fail("the score body must start with `acc`");
  for (size_t id = 0; id < k.body.size(); ++id) {
    const ScalarOp& op = k.body[id];
    if (op.kind == ScalarKind::Store || op.kind == ScalarKind::Reduce || (op.kind == ScalarKind::Acc && id != 0))
      fail(fmt::format("score op %{} ({}): the score body reads the product once and stores nothing", id,
                       print_scalar_op(k, op, id)));
  }
  if (!is_float(k.body.back().dtype))
    fail(fmt::format("the score (op %{}) is {}, not a float", k.body.size() - 1, dtype_name(k.body.back().dtype)));
}

}  // namespace kiln::ir
