// The col-reduce emitter. The collapsed space is [K..., N...]: K reduced, N kept, each
// side walked by one linear index whose digits give the coordinates (any set of
// reduced axes: see ir/kernel_col_reduce.cpp for the patterns). Block (bx, by) covers columns [bx * C, (bx + 1) * C) and slice `by` of K's k_split
// slices. Its threads form a (k_threads x C / V) grid: consecutive threads own
// consecutive groups of V columns, so a warp reads a contiguous stretch of each row
// (16-byte vectors when V * element size is 16), and the K threads walk the slice's
// rows with a stride of k_threads. Each thread accumulates in fp32 (an integer
// reduction exactly, in integer state of its own: integer_reduce.h; a logsumexp keeps a
// running max and sum, a var Welford's count, mean and squared deviations); the K threads then
// combine through shared memory as a tree over a fixed pairing. With k_split > 1 each
// block writes its fp32 partials to module scratch and takes a ticket; the last block
// of a column tile sums the slices in a fixed order and runs the epilogue (ticket
// counters are reset by that block, so the next launch starts from zero). Every order
// is fixed: a run gives the same bits every time, with no floating-point atomics.
// When the innermost dim is reduced (a full reduction, [K, R], [R1, K, R2]) a block
// takes one column and the vector of V runs along K instead (col_reads_along_reduced).
#include "codegen/col_reduce_emitter.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "codegen/integer_reduce.h"
#include "codegen/kernel_params.h"
#include "codegen/scalar_emit.h"
#include "ir/error.h"

namespace kiln::codegen {

using ir::Kernel;
using ir::ScalarKind;

namespace {


int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The last block's fold of the slices: loads a thread keeps in flight.
constexpr int kFoldUnroll = 8;

class ColReduceEmitter {
public:
  explicit ColReduceEmitter(const Kernel& k) : k_(k), c_(k.config), space_(ir::collapse(k)) {
    for (int d = 0; d < static_cast<int>(space_.dims.size()); ++d)
      (d < space_.reduced_dims ? k_count_ : n_count_) *= space_.dims[static_cast<size_t>(d)];
    one_column_ = ir::col_reads_along_reduced(k);  // a block takes one column
    col_threads_ = one_column_ ? 1 : c_.cols / c_.vec;
    width_ = one_column_ ? 1 : c_.cols;
    chunk_ = ceil_div(ceil_div(k_count_, c_.k_split), kvec()) * kvec();
    const bool wide = needs_wide_index(k);
    idx_ = wide ? "unsigned long long" : "unsigned int";
    suffix_ = wide ? "ull" : "u";
    param_ = param_names(k);
    size_t j = 0;
    for (size_t id = 0; id < k.body.size(); ++id) {
      if (k.body[id].kind == ScalarKind::Index) index_slot_[id] = j++;
      if (k.body[id].kind == ScalarKind::Reduce) reduces_.push_back(static_cast<int>(id));
    }
  }

  std::string emit() const {
    std::string s = header();
    if (c_.k_split > 1) s += scratch();
    s += signature();
    s += prologue();
    s += accumulate();
    s += combine_threads();
    if (c_.k_split > 1) s += combine_slices();
    s += epilogue();
    return s + "}\n";
  }

private:
  int kvec() const { return one_column_ ? c_.vec : 1; }
  int block() const { return col_threads_ * c_.k_threads; }
  std::string lit(int64_t v) const { return std::to_string(v) + suffix_; }
  std::string_view storage(int arg) const { return storage_type(k_.args[arg].type.dtype); }
  std::string vec_type(int arg) const { return fmt::format("kiln_vec<{}, {}>", storage(arg), c_.vec); }
  std::string scratch_name(const char* what) const { return fmt::format("kiln_{}_{}", k_.name, what); }
  int64_t col_tiles() const { return ceil_div(n_count_, width_); }

  // The dim along which the vector of V elements runs: the innermost kept dim, or
  // with one column the innermost reduced dim.
  size_t vector_dim() const {
    return one_column_ ? static_cast<size_t>(space_.reduced_dims) - 1 : space_.dims.size() - 1;
  }
  bool vectorized(int arg) const { return c_.vec > 1 && space_.arg_strides[arg][vector_dim()] != 0; }

  // sum over the dims of one side (reduced or kept) of coordinate * stride, where the
  // coordinates are the mixed-radix digits of the linear index `lin` on that side.
  std::string offset(const std::vector<int64_t>& strides, bool kept, const std::string& lin) const {
    const size_t first = kept ? static_cast<size_t>(space_.reduced_dims) : 0;
    const size_t last = kept ? space_.dims.size() : static_cast<size_t>(space_.reduced_dims);
    std::string s;
    int64_t inner = 1;
    for (size_t d = last; d-- > first;) {
      if (strides[d] != 0) {
        std::string coord = inner == 1 ? fmt::format("({})", lin) : fmt::format("(({}) / {})", lin, lit(inner));
        if (d != first) coord = fmt::format("({} % {})", coord, lit(space_.dims[d]));
        s += s.empty() ? "" : " + ";
        s += strides[d] == 1 ? coord : fmt::format("{} * {}", coord, lit(strides[d]));
      }
      inner *= space_.dims[d];
    }
    return s.empty() ? lit(0) : s;
  }

  std::string header() const {
    LaunchDims d = col_reduce_launch_dims(k_);
    std::string s = fmt::format("\n// ---- kernel {}: col_reduce over {} reducing dims {}: {} reduced element{} for {} "
                                "column{} ----\n",
                                k_.name, shape_str(k_.space()), shape_str(k_.reduced_axes), k_count_,
                                k_count_ == 1 ? "" : "s", n_count_, n_count_ == 1 ? "" : "s");
    s += "// Fuses:\n";
    for (const std::string& line : k_.fused_nodes) s += "//   " + line + "\n";
    s += fmt::format("// Config {}: grid {} x {} blocks of {} threads ({} along K x {} across columns); ", c_.str(),
                     d.grid[0], d.grid[1], d.block[0], c_.k_threads, col_threads_);
    s += fmt::format("{} consecutive {} per thread; K in {} slice{} of {}{}.\n", c_.vec,
                     one_column_ ? "reduced elements" : "columns", c_.k_split, c_.k_split == 1 ? "" : "s", chunk_,
                     c_.k_split == 1 ? "" : ", combined by the last block of each column tile");
    return s;
  }

  // Module-scope scratch: one ticket per column tile (zero at load, reset by the last
  // block) and fp32 partials [state slot][slice][column]; integer states have 64-bit
  // partials of their own, in the same layout.
  std::string scratch() const {
    std::string s = fmt::format("__device__ unsigned int {}[{}];\n", scratch_name("tickets"), col_tiles());
    if (state_slots(false) > 0)
      s += fmt::format("__device__ float {}[{}];\n", scratch_name("partials"),
                       int64_t{state_slots(false)} * c_.k_split * n_count_);
    if (state_slots(true) > 0)
      s += fmt::format("__device__ long long {}[{}];\n", scratch_name("ipartials"),
                       int64_t{state_slots(true)} * c_.k_split * n_count_);
    return s;
  }

  std::string signature() const {
    std::vector<std::string> params;
    for (size_t i = 0; i < k_.args.size(); ++i)
      params.push_back(fmt::format("{}{}* __restrict__ {}", k_.args[i].is_output ? "" : "const ",
                                   storage(static_cast<int>(i)), param_[i]));
    return fmt::format("extern \"C\" __global__ void __launch_bounds__({}) {}({}) {{\n", block(), k_.name,
                       fmt::join(params, ", "));
  }

  std::string prologue() const {
    std::string s;
    if (state_slots(false) > 0 || state_slots(true) == 0)
      s += fmt::format("  __shared__ float kiln_part[{}][{}];\n", std::max(1, state_slots(false)),
                       int64_t{c_.k_threads} * width_);
    if (state_slots(true) > 0)
      s += fmt::format("  __shared__ long long kiln_ipart[{}][{}];\n", state_slots(true),
                       int64_t{c_.k_threads} * width_);
    s += fmt::format("  const unsigned ct = threadIdx.x % {}u;  // column thread\n", col_threads_);
    s += fmt::format("  const unsigned kt = threadIdx.x / {}u;  // thread along K\n", col_threads_);
    s += fmt::format("  const {} col0 = ({})blockIdx.x * {} + ({})ct * {};\n", idx_, idx_, lit(width_), idx_,
                     lit(one_column_ ? 0 : c_.vec));
    s += fmt::format("  const bool active = col0 < {};\n", lit(n_count_));
    s += fmt::format("  const {} k_begin = ({})blockIdx.y * {};\n", idx_, idx_, lit(chunk_));
    s += fmt::format("  const {} k_end = k_begin + {} < {} ? k_begin + {} : {};\n", idx_, lit(chunk_),
                     lit(k_count_), lit(chunk_), lit(k_count_));
    // Where each argument and index starts for this thread's first column.
    const std::vector<size_t> ops = loop_ops();
    std::set<size_t> used;
    for (size_t id : ops)
      used.insert(k_.body[id].kind == ScalarKind::Load ? static_cast<size_t>(k_.body[id].arg) + k_.body.size() : id);
    for (size_t i = 0; i < k_.args.size(); ++i)
      if (used.count(i + k_.body.size()))
        s += fmt::format("  const {} nbase{} = active ? {} : {};\n", idx_, i,
                         offset(space_.arg_strides[i], true, "col0"), lit(0));
    for (const auto& [id, j] : index_slot_)
      if (used.count(id))
        s += fmt::format("  const {} nibase{} = active ? {} : {};\n", idx_, id,
                         offset(space_.index_coeffs[j], true, "col0"), lit(0));
    return s;
  }

  static std::string identity(ir::OpKind op) {
    if (op == ir::OpKind::ReduceMax) return "__int_as_float(0xff800000)";  // -inf
    if (op == ir::OpKind::ReduceMin) return "__int_as_float(0x7f800000)";  // +inf
    return "0.0f";
  }
  static std::string combine(ir::OpKind op, const std::string& acc, const std::string& v) {
    if (op == ir::OpKind::ReduceMax) return fmt::format("kiln_max({}, {})", acc, v);
    if (op == ir::OpKind::ReduceMin) return fmt::format("kiln_min({}, {})", acc, v);
    return fmt::format("{} + {}", acc, v);
  }

  // A reduction's running state is ir::reduce_state_size(op) floats: its names with
  // `prefix` (acc5, or acc5_m and acc5_s for a logsumexp, acc5_n, acc5_mean and acc5_m2
  // for a var), each followed by `index`.
  std::vector<std::string> state(int r, const std::string& prefix, const std::string& index) const {
    const ir::OpKind op = k_.body[r].op;
    std::vector<std::string> parts = {""};
    if (op == ir::OpKind::ReduceLogSumExp) parts = {"_m", "_s"};
    if (op == ir::OpKind::ReduceVar) parts = {"_n", "_mean", "_m2"};
    std::vector<std::string> out;
    for (const std::string& p : parts) out.push_back(fmt::format("{}{}{}{}", prefix, r, p, index));
    return out;
  }
  // The same state in shared memory: kiln_part[slot][index] (kiln_ipart for an
  // integer reduction), a slot each.
  std::vector<std::string> shared_state(int r, const std::string& index) const {
    std::vector<std::string> out;
    const char* array = integer(r) ? "kiln_ipart" : "kiln_part";
    for (int j = 0; j < ir::reduce_state_size(k_.body[r].op); ++j)
      out.push_back(fmt::format("{}[{}][{}]", array, first_slot(r) + j, index));
    return out;
  }
  bool integer(int r) const { return is_integer_reduce(k_.body[r]); }
  // The register type of reduction r's running state.
  std::string_view state_type(int r) const { return integer(r) ? integer_accumulator(k_.body[r].op) : "float"; }
  // The empty state: the identity, a -inf max with a zero sum, or no elements.
  std::vector<std::string> empty_state(int r) const {
    const ir::OpKind op = k_.body[r].op;
    if (op == ir::OpKind::ReduceLogSumExp) return {"__int_as_float(0xff800000)", "0.0f"};
    if (op == ir::OpKind::ReduceVar) return {"0.0f", "0.0f", "0.0f"};
    return {integer(r) ? integer_identity(op) : identity(op)};
  }
  // state <- state with one more element x.
  std::string add_element(int r, const std::vector<std::string>& st, const std::string& x) const {
    const ir::OpKind op = k_.body[r].op;
    if (op == ir::OpKind::ReduceLogSumExp) return fmt::format("kiln_lse_add({}, {}, {}, 1.0f);", st[0], st[1], x);
    if (op == ir::OpKind::ReduceVar)
      return fmt::format("kiln_welford_add({}, {}, {}, 1.0f, {}, 0.0f);", st[0], st[1], st[2], x);
    return fmt::format("{} = {};", st[0], integer(r) ? integer_combine(op, st[0], x) : combine(op, st[0], x));
  }
  // state <- state merged with another part's state (the order is fixed by the caller).
  std::string merge(int r, const std::vector<std::string>& st, const std::vector<std::string>& other) const {
    const ir::OpKind op = k_.body[r].op;
    if (op == ir::OpKind::ReduceLogSumExp)
      return fmt::format("kiln_lse_add({}, {}, {}, {});", st[0], st[1], other[0], other[1]);
    if (op == ir::OpKind::ReduceVar)
      return fmt::format("kiln_welford_add({}, {}, {}, {}, {}, {});", st[0], st[1], st[2], other[0], other[1],
                         other[2]);
    return fmt::format("{} = {};", st[0],
                       integer(r) ? integer_combine(op, st[0], other[0]) : combine(op, st[0], other[0]));
  }
  // The reduced value of a column from its final state.
  std::string result(int r, const std::string& index) const {
    const ir::OpKind op = k_.body[r].op;
    const std::vector<std::string> st = state(r, "res", index);
    if (op == ir::OpKind::ReduceLogSumExp) return fmt::format("kiln_lse_result({}, {})", st[0], st[1]);
    if (op == ir::OpKind::ReduceVar) return fmt::format("{} / {}", st[2], const_expr(DType::f32, k_count_));
    if (op == ir::OpKind::ReduceMean) return fmt::format("{} / {}", st[0], const_expr(DType::f32, k_count_));
    return integer(r) ? integer_result(op, st[0]) : st[0];
  }

  // The ops that `roots` need (Reduce ops stop the walk), in body order.
  std::vector<size_t> cone(const std::vector<int>& roots) const {
    std::vector<bool> need(k_.body.size(), false);
    std::vector<int> stack = roots;
    while (!stack.empty()) {
      int x = stack.back();
      stack.pop_back();
      if (need[x]) continue;
      need[x] = true;
      if (k_.body[x].kind != ScalarKind::Reduce)
        stack.insert(stack.end(), k_.body[x].operands.begin(), k_.body[x].operands.end());
    }
    std::vector<size_t> out;
    for (size_t id = 0; id < need.size(); ++id)
      if (need[id]) out.push_back(id);
    return out;
  }

  // The expression of op `id` for element t of the current vector; inside the K loop
  // (`in_loop`) loads read the vectors v<arg> or scalars s<arg> loaded for row k; in
  // the epilogue they read the per-column argument at column col0 + t.
  std::string value_expr(size_t id, bool in_loop) const {
    const ir::ScalarOp& op = k_.body[id];
    switch (op.kind) {
      case ScalarKind::Load: {
        if (in_loop)
          return load_expr(op.dtype, vectorized(op.arg) ? fmt::format("v{}.v[t]", op.arg) : fmt::format("s{}", op.arg));
        return load_expr(op.dtype,
                         fmt::format("{}[{}]", param_[op.arg], offset(space_.arg_strides[op.arg], true, "col0 + t")));
      }
      case ScalarKind::Const: return const_expr(op.dtype, op.value);
      case ScalarKind::Index: {
        const std::vector<int64_t>& coeffs = space_.index_coeffs[index_slot_.at(id)];
        if (!in_loop) return index_expr(op.dtype, "(" + offset(coeffs, true, "col0 + t") + ")");
        int64_t along = c_.vec > 1 ? coeffs[vector_dim()] : 0;
        std::string at = fmt::format("{} + nibase{}", offset(coeffs, false, "k"), id);
        if (along != 0) at += fmt::format(" + ({})t * {}", idx_, lit(along));
        return index_expr(op.dtype, "(" + at + ")");
      }
      case ScalarKind::Op: {
        std::vector<DType> types;
        std::vector<std::string> names;
        for (int x : op.operands) {
          types.push_back(k_.body[x].dtype);
          names.push_back(fmt::format("e{}", x));
        }
        return op_expr(op.op, op.attrs, op.dtype, types, names);
      }
      case ScalarKind::Reduce: return result(static_cast<int>(id), "[t]");  // the epilogue's reduced value
      case ScalarKind::Store:
      case ScalarKind::Acc: break;
    }
    throw Error(fmt::format("kernel @{}: op %{} has no value expression", k_.name, id));
  }

  std::string element_ops(const std::vector<size_t>& ops, bool in_loop, const std::string& in) const {
    std::string s;
    for (size_t id : ops) {
      ScalarKind kind = k_.body[id].kind;
      if (kind == ScalarKind::Store || (kind == ScalarKind::Reduce && in_loop)) continue;
      std::string_view type = register_type(k_.body[id].dtype);  // a float reduction's fp32 result too
      s += fmt::format("{}const {} e{} = {};\n", in, type, id, value_expr(id, in_loop));
    }
    return s;
  }

  // The ops the K loop evaluates: everything the reductions' operands need.
  std::vector<size_t> loop_ops() const {
    std::vector<int> operands;
    for (int r : reduces_) operands.push_back(k_.body[r].operands[0]);
    return cone(operands);
  }

  // The K loop: each thread accumulates V fp32 values per reduction (one per column,
  // or with one column one per lane of the vector, folded in order afterwards).
  std::string accumulate() const {
    std::string s = "  // Accumulate this thread's rows of the slice in fp32.\n";
    for (int r : reduces_) {
      const std::vector<std::string> names = state(r, "acc", ""), empty = empty_state(r);
      for (size_t j = 0; j < names.size(); ++j)
        s += fmt::format("  {} {}[{}];\n#pragma unroll\n  for (int t = 0; t < {}; ++t) {}[t] = {};\n", state_type(r),
                         names[j], c_.vec, c_.vec, names[j], empty[j]);
    }
    std::vector<size_t> ops = loop_ops();
    std::set<int> args;
    for (size_t id : ops)
      if (k_.body[id].kind == ScalarKind::Load) args.insert(k_.body[id].arg);
    s += "  if (active) {\n#pragma unroll 4\n";
    s += fmt::format("    for ({} k = k_begin + ({})kt * {}; k < k_end; k += {}) {{\n", idx_, idx_, lit(kvec()),
                     lit(int64_t{c_.k_threads} * kvec()));
    for (int a : args) {
      std::string at = fmt::format("{} + {} + nbase{}", param_[a], offset(space_.arg_strides[a], false, "k"), a);
      if (vectorized(a))
        s += fmt::format("      const {} v{} = *reinterpret_cast<const {}*>({});\n", vec_type(a), a, vec_type(a), at);
      else
        s += fmt::format("      const {} s{} = *({});\n", storage(a), a, at);
    }
    s += fmt::format("#pragma unroll\n      for (int t = 0; t < {}; ++t) {{\n", c_.vec);
    s += element_ops(ops, true, "        ");
    for (int r : reduces_)
      s += fmt::format("        {}\n", add_element(r, state(r, "acc", "[t]"), fmt::format("e{}", k_.body[r].operands[0])));
    s += "      }\n    }\n  }\n";
    if (one_column_ && c_.vec > 1)
      for (int r : reduces_)
        s += fmt::format("#pragma unroll\n  for (int t = 1; t < {}; ++t) {}\n", c_.vec,
                         merge(r, state(r, "acc", "[0]"), state(r, "acc", "[t]")));
    return s;
  }

  // The values each thread holds per column (acc<r>[0..W)) combined over the K
  // threads, in a fixed order; every thread ends with the result in res<r>. Where a warp
  // holds several threads along K (16 column threads or fewer), shuffles combine them and
  // the first warp folds the warps' values from shared memory: two barriers. Otherwise a
  // tree in shared memory, kt with kt + s, halving s: a barrier a level. (On the H200 the
  // tree's seven barriers at 512 threads cost a tall column sum about 2 us of its 21.)
  std::string tree(const std::string& what, bool declare) const {
    const bool by_warps = col_threads_ <= 16 && c_.k_threads > 1;
    std::string s = fmt::format("  // Combine {} over the {} threads along K, in a fixed order{}.\n", what,
                                c_.k_threads, by_warps ? ": shuffles in each warp, then across the warps" : "");
    s += by_warps ? warp_combine() : shared_tree();
    const int w = one_column_ ? 1 : c_.vec;
    const std::string first = one_column_ ? "0" : fmt::format("ct * {}u + t", c_.vec);
    for (int r : reduces_) {
      const std::vector<std::string> res = state(r, "res", ""), part = shared_state(r, first);
      for (size_t j = 0; j < res.size(); ++j) {
        // Without K slices to publish, a var's result needs only its squared deviations.
        if (c_.k_split == 1 && k_.body[r].op == ir::OpKind::ReduceVar && j != 2) continue;
        if (declare) s += fmt::format("  {} {}[{}];\n", state_type(r), res[j], w);
        s += fmt::format("#pragma unroll\n  for (int t = 0; t < {}; ++t) {}[t] = {};\n", w, res[j], part[j]);
      }
    }
    return s;
  }

  // Every reduction's acc<r>[t] written to its shared-memory slots at index `slot`.
  std::string store_state(const std::string& slot, const std::string& indent) const {
    const int w = one_column_ ? 1 : c_.vec;
    std::string s;
    for (int r : reduces_) {
      const std::vector<std::string> part = shared_state(r, slot), acc = state(r, "acc", "[t]");
      for (size_t j = 0; j < part.size(); ++j)
        s += fmt::format("#pragma unroll\n{}for (int t = 0; t < {}; ++t) {} = {};\n", indent, w, part[j], acc[j]);
    }
    return s;
  }

  // Leaves the combined state of column c in slot c of shared memory.
  std::string shared_tree() const {
    const int w = one_column_ ? 1 : c_.vec;
    const std::string slot = one_column_ ? "kt" : fmt::format("kt * {}u + ct * {}u + t", width_, c_.vec);
    std::string s = store_state(slot, "  ") + "  __syncthreads();\n";
    if (c_.k_threads > 1) {
      s += fmt::format("  for (unsigned s = {}u; s > 0; s >>= 1) {{\n    if (kt < s) {{\n", c_.k_threads / 2);
      const std::string other = one_column_ ? "kt + s" : fmt::format("(kt + s) * {}u + ct * {}u + t", width_, c_.vec);
      for (int r : reduces_)
        s += fmt::format("#pragma unroll\n      for (int t = 0; t < {}; ++t) {}\n", w,
                         merge(r, shared_state(r, slot), shared_state(r, other)));
      s += "    }\n    __syncthreads();\n  }\n";
    }
    return s;
  }

  // The same with shuffles: lane l merges lane l ^ o's state for o = column threads, twice
  // that, ... 16, so that the warp's first threads along K hold the warp's state; they
  // write it to slot (warp, column); the first warp's lanes then fold the warps' slots of
  // a column each, in warp order, into slot (0, column).
  std::string warp_combine() const {
    const int w = one_column_ ? 1 : c_.vec;
    const int64_t warps = int64_t{c_.k_threads} * col_threads_ / 32;
    std::string s;
    s += fmt::format("#pragma unroll\n  for (unsigned o = {}u; o < 32u; o <<= 1) {{\n", col_threads_);
    s += fmt::format("#pragma unroll\n    for (int t = 0; t < {}; ++t) {{\n", w);
    for (int r : reduces_) {
      const std::vector<std::string> acc = state(r, "acc", "[t]");
      std::vector<std::string> other;
      for (size_t j = 0; j < acc.size(); ++j) {
        other.push_back(fmt::format("o{}_{}", r, j));
        s += fmt::format("      const {} {} = __shfl_xor_sync(0xffffffffu, {}, o);\n", state_type(r), other.back(),
                         acc[j]);
      }
      s += fmt::format("      {}\n", merge(r, acc, other));
    }
    s += "    }\n  }\n";
    const std::string slot = one_column_ ? "threadIdx.x / 32u" : fmt::format("threadIdx.x / 32u * {}u + ct * {}u + t",
                                                                             width_, c_.vec);
    s += fmt::format("  if (threadIdx.x % 32u < {}u) {{\n", col_threads_);
    s += store_state(slot, "    ") + "  }\n  __syncthreads();\n";
    if (warps > 1) {
      s += fmt::format("  for (unsigned c = threadIdx.x; threadIdx.x < 32u && c < {}u; c += 32u) {{\n", width_);
      for (int r : reduces_) {
        const std::vector<std::string> into = shared_state(r, "c");
        std::vector<std::string> acc;
        for (size_t j = 0; j < into.size(); ++j) {
          acc.push_back(fmt::format("f{}_{}", r, j));
          s += fmt::format("    {} {} = {};\n", state_type(r), acc.back(), into[j]);
        }
        s += fmt::format("#pragma unroll\n    for (unsigned w = 1; w < {}u; ++w) {{\n", warps);
        s += fmt::format("      {}\n", merge(r, acc, shared_state(r, fmt::format("w * {}u + c", width_))));
        s += "    }\n";
        for (size_t j = 0; j < into.size(); ++j) s += fmt::format("    {} = {};\n", into[j], acc[j]);
      }
      s += "  }\n  __syncthreads();\n";
    }
    return s;
  }

  // The first of reduction r's slots of state (in shared memory and in the partials),
  // counted among the reductions of its class (float or integer).
  int first_slot(int r) const {
    int slot = 0;
    for (int x : reduces_) {
      if (x == r) break;
      if (integer(x) == integer(r)) slot += ir::reduce_state_size(k_.body[x].op);
    }
    return slot;
  }
  // The slots of state of the integer (or the float) reductions.
  int state_slots(bool of_integers) const {
    int slots = 0;
    for (int x : reduces_)
      if (integer(x) == of_integers) slots += ir::reduce_state_size(k_.body[x].op);
    return slots;
  }

  std::string combine_threads() const { return tree("the partials", true); }

  // k_split > 1: publish this slice's partials, take a ticket; the last block of the
  // column tile reads every slice (thread kt takes slices kt, kt + k_threads, ... in
  // order) and combines them with the same tree.
  std::string combine_slices() const {
    const int w = one_column_ ? 1 : c_.vec;
    const std::string partials = scratch_name("partials"), tickets = scratch_name("tickets");
    const int64_t per_reduce = int64_t{c_.k_split} * n_count_;
    std::string s = "  // Publish this slice's partials; the last block of the column tile combines them.\n";
    s += "  if (kt == 0 && active) {\n";
    auto partial = [&](int r, int slot, const std::string& slice) {
      return fmt::format("{}[{} + ({}){} * {} + col0 + t]", integer(r) ? scratch_name("ipartials") : partials,
                         lit(slot * per_reduce), idx_, slice, lit(n_count_));
    };
    for (int r : reduces_) {
      const std::vector<std::string> res = state(r, "res", "[t]");
      for (size_t j = 0; j < res.size(); ++j)
        s += fmt::format("#pragma unroll\n    for (int t = 0; t < {}; ++t)\n      if (col0 + t < {}) {} = {};\n", w,
                         lit(n_count_), partial(r, first_slot(r) + static_cast<int>(j), "blockIdx.y"), res[j]);
    }
    // One thread takes the ticket for the block, after the barrier that orders the
    // writers' stores before it (kiln_take_ticket: release, and acquire for the last).
    s += "  }\n  __syncthreads();\n  __shared__ bool kiln_last;\n";
    s += "  if (threadIdx.x == 0) {\n";
    s += fmt::format("    kiln_last = kiln_take_ticket(&{}[blockIdx.x]) == {}u;\n", tickets, c_.k_split - 1);
    s += fmt::format("    if (kiln_last) {}[blockIdx.x] = 0u;  // ready for the next launch\n", tickets);
    s += "  }\n  __syncthreads();\n  if (!kiln_last) return;\n";
    for (int r : reduces_) {
      const std::vector<std::string> acc = state(r, "acc", "[t]"), empty = empty_state(r);
      for (size_t j = 0; j < acc.size(); ++j)
        s += fmt::format("#pragma unroll\n  for (int t = 0; t < {}; ++t) {} = {};\n", w, acc[j], empty[j]);
    }
    // Unrolled, so that a thread's loads of its slices are in flight together.
    s += fmt::format("#pragma unroll {}\n  for (unsigned slice = kt; slice < {}u; slice += {}u) {{\n", kFoldUnroll,
                     c_.k_split, c_.k_threads);
    s += fmt::format("#pragma unroll\n    for (int t = 0; t < {}; ++t) {{\n", w);
    s += fmt::format("      if (!active || col0 + t >= {}) continue;\n", lit(n_count_));
    for (int r : reduces_) {
      std::vector<std::string> loaded;
      for (int j = 0; j < ir::reduce_state_size(k_.body[r].op); ++j)
        loaded.push_back(fmt::format("__ldcg(&{})", partial(r, first_slot(r) + j, "slice")));
      s += fmt::format("      {}\n", merge(r, state(r, "acc", "[t]"), loaded));
    }
    s += "    }\n  }\n  __syncthreads();  // every thread has read kiln_part's earlier values\n";
    return s + tree("the slices", false);
  }

  std::string epilogue() const {
    std::vector<int> values, stores;
    for (size_t id = 0; id < k_.body.size(); ++id)
      if (k_.body[id].kind == ScalarKind::Store) {
        stores.push_back(static_cast<int>(id));
        values.push_back(k_.body[id].operands[0]);
      }
    const int w = one_column_ ? 1 : c_.vec;
    std::string s = "  // The epilogue and the per-column outputs.\n";
    s += one_column_ ? "  if (threadIdx.x == 0) {\n" : "  if (kt == 0 && active) {\n";
    s += fmt::format("#pragma unroll\n    for (int t = 0; t < {}; ++t) {{\n", w);
    s += fmt::format("      if (col0 + t >= {}) continue;\n", lit(n_count_));
    s += element_ops(cone(values), false, "      ");
    for (int st : stores) {
      const ir::ScalarOp& op = k_.body[st];
      s += fmt::format("      {}[col0 + t] = {};\n", param_[op.arg],
                       store_expr(op.dtype, fmt::format("e{}", op.operands[0])));
    }
    return s + "    }\n  }\n";
  }

  const Kernel& k_;
  const ir::TileConfig& c_;
  ir::CollapsedSpace space_;
  int64_t k_count_ = 1, n_count_ = 1, chunk_ = 1;
  bool one_column_ = false;
  int col_threads_ = 1;
  int64_t width_ = 1;  // columns per block
  std::string idx_, suffix_;
  std::vector<std::string> param_;
  std::map<size_t, size_t> index_slot_;  // Index op id -> its slot in CollapsedSpace::index_coeffs
  std::vector<int> reduces_;             // Reduce op ids, in body order
};

}  // namespace

LaunchDims col_reduce_launch_dims(const Kernel& k) {
  const ir::TileConfig& c = k.config;
  if (c.cols <= 0 || c.k_threads <= 0 || c.k_split <= 0 || c.vec <= 0)
    throw Error(fmt::format("kernel @{} has no col_reduce tile config", k.name));
  const int64_t n = ir::col_count(k);
  LaunchDims d;
  const bool one_column = ir::col_reads_along_reduced(k);  // a block per column
  d.grid[0] = static_cast<unsigned>(ceil_div(n, one_column ? 1 : c.cols));
  d.grid[1] = static_cast<unsigned>(c.k_split);
  d.block[0] = static_cast<unsigned>((one_column ? 1 : c.cols / c.vec) * c.k_threads);
  return d;
}

std::string emit_col_reduce(const Kernel& k) {
  ir::verify(k);
  ir::validate(k, k.config);
  return ColReduceEmitter(k).emit();
}

}  // namespace kiln::codegen
