// The row-reduce emitter. Block b holds rows [b * R, (b + 1) * R) of the collapsed
// space [rows..., N]; row_threads (T) consecutive threads share a row. Thread `lane`
// of a row handles the vectors of V elements starting at (j * T + lane) * V, so
// neighbouring threads touch neighbouring vectors (coalesced, 16-byte loads when V *
// element size is 16). The body runs in stages:
//   stage s < P   the element loop accumulates every phase-s reduction in fp32 (an
//                 integer one exactly: integer_reduce.h), then
//                 the row's threads combine their partials (warp shuffles, then shared
//                 memory when a row takes more than a warp)
//   before each   per-row values that the finished reductions make available
//   stage P       the element loop computes and stores the full-size outputs; lane 0
//                 stores the per-row outputs
// With the row in registers the row's own inputs are loaded once, kept as stored (fp16
// packed) and every stage reads the registers; a streamed row is read again from memory
// (L2) in each stage. Inputs every row shares (a norm's weight) are read where used.
// A long row may keep part of each thread's slice in shared memory (shared_elems past
// the `elems` in registers): copied there once with cp.async, read back in each stage by
// a second element loop. A block then holds twice the row or more, two blocks an SM.
// With a cluster of C blocks (sm_90) a row's T * C threads span C blocks: block `rank`
// holds lanes rank * T .. rank * T + T - 1; after its own block-level combine each block
// writes its partial into every block's shared memory (distributed shared memory), and
// after one cluster barrier each combines the C partials from its own shared memory by
// the same butterfly over C lanes, so all C blocks hold the same bits and none waits for
// another at its end.
// Two reductions keep more than one accumulator, updated once per vector of V elements:
// logsumexp a (max, sum of exp(x - max)) pair, the max of a held row taken first over
// the thread's part (so the sum needs no rescale), a streamed row's rescaled once per
// vector by the change of its max; var Welford's (count, mean, squared deviations), the vector's own
// mean and deviations merged in by Chan's formula. Both combine across threads with the
// pair / triple helpers of scalar_emit, in a fixed order.
#include "codegen/row_reduce_emitter.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
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

// log2(e) as a float literal, as the exp sum's terms multiply by it.
constexpr const char* kLog2e = "1.44269504088896341f";


class RowReduceEmitter {
public:
  explicit RowReduceEmitter(const Kernel& k)
      : k_(k), c_(k.config), space_(ir::collapse(k)), uniform_(ir::row_uniform(k)) {
    n_ = space_.dims.back();
    rows_ = ir::row_count(k);
    const bool wide = needs_wide_index(k);
    idx_ = wide ? "unsigned long long" : "unsigned int";
    suffix_ = wide ? "ull" : "u";
    param_ = param_names(k);
    ready_.assign(k.body.size(), 0);
    for (size_t id = 0; id < k.body.size(); ++id) {
      const ir::ScalarOp& op = k.body[id];
      if (op.kind == ScalarKind::Reduce) {
        ready_[id] = op.phase + 1;
        phases_ = std::max(phases_, op.phase + 1);
        if (is_integer_reduce(op)) {
          reduce_slot_[static_cast<int>(id)] = num_integer_slots_++;
          continue;
        }
        reduce_slot_[static_cast<int>(id)] = num_slots_;
        num_slots_ += accumulators(op.op);
        continue;
      }
      for (int x : op.operands) ready_[id] = std::max(ready_[id], ready_[x]);
    }
  }

  std::string emit() {
    std::string s = header();
    s += signature();
    s += prologue();
    if (c_.stream == 0) s += register_loads();
    for (int stage = 0; stage <= phases_; ++stage) {
      s += row_values(stage);
      s += stage < phases_ ? reductions(stage) : final_stores();
    }
    s += row_stores();
    return s + "}\n";
  }

private:
  std::string lit(int64_t v) const { return std::to_string(v) + suffix_; }
  std::string_view storage(int arg) const { return storage_type(k_.args[arg].type.dtype); }
  std::string vec_type(int arg) const { return fmt::format("kiln_vec<{}, {}>", storage(arg), c_.vec); }
  bool varying(int arg) const { return space_.arg_strides[arg].back() != 0; }
  int block() const { return c_.row_threads * c_.rows; }
  int cluster() const { return std::max(1, c_.cluster); }
  // The threads that share a row: a part of a warp up to a block, or a cluster's blocks.
  int64_t span() const { return int64_t{c_.row_threads} * cluster(); }

  std::string header() const {
    LaunchDims d = row_reduce_launch_dims(k_);
    std::string s = fmt::format("\n// ---- kernel {}: row_reduce over {}: {} row{} of {} element{} ----\n", k_.name,
                                shape_str(k_.space()), rows_, rows_ == 1 ? "" : "s", n_, n_ == 1 ? "" : "s");
    s += "// Fuses:\n";
    for (const std::string& line : k_.fused_nodes) s += "//   " + line + "\n";
    s += fmt::format("// Config {}: grid {} x {} threads; {} thread{} per row, {} row{} per block; ", c_.str(),
                     d.grid[0], d.block[0], c_.row_threads, c_.row_threads == 1 ? "" : "s", c_.rows,
                     c_.rows == 1 ? "" : "s");
    if (cluster() > 1) s += fmt::format("a cluster of {} blocks shares each row; ", cluster());
    s += c_.stream ? "the row is re-read in each phase" : fmt::format("{} elements per thread in registers", c_.elems);
    if (shared_steps() > 0) s += fmt::format(" and {} in shared memory", c_.shared_elems);
    return s + fmt::format("; {} reduction phase{}.\n", phases_, phases_ == 1 ? "" : "s");
  }

  std::string signature() const {
    std::vector<std::string> params;
    for (size_t i = 0; i < k_.args.size(); ++i)
      params.push_back(fmt::format("{}{}* __restrict__ {}", k_.args[i].is_output ? "" : "const ",
                                   storage(static_cast<int>(i)), param_[i]));
    std::string cluster_dims = cluster() > 1 ? fmt::format("__cluster_dims__({}, 1, 1) ", cluster()) : "";
    return fmt::format("extern \"C\" __global__ void {}__launch_bounds__({}) {}({}) {{\n", cluster_dims, block(),
                       k_.name, fmt::join(params, ", "));
  }

  // The row index, its coordinates over the collapsed row dims, each argument's row base.
  std::string prologue() const {
    std::string s = tail_decls();
    // Integer accumulators combine through 64-bit slots of their own (integer_reduce.h).
    const bool float_slots = num_slots_ > 0 || num_integer_slots_ == 0;
    if (c_.row_threads > 32 && float_slots)
      s += fmt::format("  __shared__ float kiln_slots[{}][{}];\n", std::max(1, num_slots_), block() / 32);
    if (c_.row_threads > 32 && num_integer_slots_ > 0)
      s += fmt::format("  __shared__ long long kiln_islots[{}][{}];\n", num_integer_slots_, block() / 32);
    if (cluster() > 1) {
      // Block `rank` of a cluster holds threads rank * T .. rank * T + T - 1 of the row.
      if (float_slots)
        s += fmt::format("  __shared__ float kiln_cluster_slots[{}][{}];\n", std::max(1, num_slots_), cluster());
      if (num_integer_slots_ > 0)
        s += fmt::format("  __shared__ long long kiln_cluster_islots[{}][{}];\n", num_integer_slots_, cluster());
      s += "  kiln_cluster_arrive();  // waited on before the first exchange\n";
      s += fmt::format("  const unsigned lane = blockIdx.x % {}u * {}u + threadIdx.x;\n", cluster(), c_.row_threads);
      s += fmt::format("  const {} row = ({})blockIdx.x / {};\n", idx_, idx_, lit(cluster()));
    } else {
      s += fmt::format("  const unsigned lane = threadIdx.x % {}u;\n", c_.row_threads);
      s += fmt::format("  const {} row = ({})blockIdx.x * {} + threadIdx.x / {}u;\n", idx_, idx_, lit(c_.rows),
                       c_.row_threads);
    }
    s += fmt::format("  const bool active = row < {};\n", lit(rows_));
    const size_t row_dims = space_.dims.size() - 1;
    std::vector<bool> used(row_dims, false);
    auto mark = [&](const std::vector<int64_t>& st) {
      for (size_t d = 0; d < row_dims; ++d) used[d] = used[d] || st[d] != 0;
    };
    for (const auto& st : space_.arg_strides) mark(st);
    for (const auto& st : space_.index_coeffs) mark(st);
    // An inactive row (past the end) reads row 0's addresses and stores nothing. A
    // single row (every base is 0) needs no coordinates: NVRTC warns of an unread q.
    if (std::find(used.begin(), used.end(), true) != used.end()) {
      s += fmt::format("  {} q = active ? row : {};\n", idx_, lit(0));
      for (size_t d = row_dims; d-- > 0;) {
        if (used[d]) s += fmt::format("  const {} c{} = q % {};\n", idx_, d, lit(space_.dims[d]));
        if (d > 0) s += fmt::format("  q /= {};\n", lit(space_.dims[d]));
      }
      s += "  (void)q;\n";
    }
    for (size_t i = 0; i < k_.args.size(); ++i)
      s += fmt::format("  const {} base{} = {};\n", idx_, i, row_offset(space_.arg_strides[i]));
    size_t j = 0;
    for (size_t id = 0; id < k_.body.size(); ++id)
      if (k_.body[id].kind == ScalarKind::Index)
        s += fmt::format("  const {} ibase{} = {};\n", idx_, id, row_offset(space_.index_coeffs[j++]));
    return s;
  }

  std::string row_offset(const std::vector<int64_t>& strides) const {
    std::string s;
    for (size_t d = 0; d + 1 < strides.size(); ++d) {
      if (strides[d] == 0) continue;
      s += s.empty() ? "" : " + ";
      s += strides[d] == 1 ? fmt::format("c{}", d) : fmt::format("c{} * {}", d, lit(strides[d]));
    }
    return s.empty() ? lit(0) : s;
  }

  // A vector of V elements of input `arg` at column `col` of the row, as `v<arg>`.
  std::string load_vector(const std::string& in, int arg, const std::string& col) const {
    if (shared_part_ && row_held(arg))
      return fmt::format("{}const {} v{} = *reinterpret_cast<const {}*>({});\n", in, vec_type(arg), arg, vec_type(arg),
                         tail_slot(arg));
    int64_t stride = space_.arg_strides[arg].back();
    if (stride == 1)
      return fmt::format("{}const {} v{} = *reinterpret_cast<const {}*>({} + base{} + {});\n", in, vec_type(arg), arg,
                         vec_type(arg), param_[arg], arg, col);
    // Strided along the row (validate keeps V == 1 then).
    return fmt::format("{}{} v{};\n{}v{}.v[0] = {}[base{} + ({}) * {}];\n", in, vec_type(arg), arg, in, arg,
                       param_[arg], arg, col, lit(stride));
  }

  // Where vector j (of the shared part: j >= register_steps()) of input `arg` sits in
  // this thread's part of the row in shared memory; 16-byte vectors of neighbouring
  // threads are neighbours, so a warp's accesses are free of bank conflicts.
  std::string tail_slot(int arg) const {
    return fmt::format("tail{} + ((j - {}) * {} + threadIdx.x) * {}", arg, register_steps(), block(), c_.vec);
  }

  // The shared part of the row: per row-held input, elements past `elems` of each thread.
  std::string tail_decls() const {
    if (shared_steps() == 0) return "";
    std::string s = "  extern __shared__ __align__(16) unsigned char kiln_row_tail[];  // the row past the registers\n";
    int64_t offset = 0;
    for (int a : register_arrays()) {
      s += fmt::format("  {}* const tail{} = reinterpret_cast<{}*>(kiln_row_tail + {});\n", storage(a), a, storage(a),
                       offset);
      offset += int64_t{block()} * c_.shared_elems * dtype_bytes(k_.args[a].type.dtype);
    }
    return s;
  }

  // The row's own inputs, loaded once and kept in registers as stored (fp16 stays
  // packed, half the registers of fp32), converted where each stage uses them.
  std::string register_loads() const {
    std::string s = "  // The row's inputs, kept in registers for every phase.\n";
    std::vector<int> arrays = register_arrays();
    if (arrays.empty()) return "";
    for (int a : arrays) s += fmt::format("  {} a{}[{}];\n", storage(a), a, c_.elems);
    s += vector_loop_open(0, register_steps());
    for (int a : arrays) {
      s += load_vector("      ", a, "col");
      s += fmt::format("#pragma unroll\n      for (int t = 0; t < {}; ++t) a{}[j * {} + t] = v{}.v[t];\n", c_.vec, a,
                       c_.vec, a);
    }
    s += "    } else {\n";
    // A zero of the storage type: a value-initialised kiln_vec, since `T()` is no valid
    // expression for a type of two words (i1 is stored as unsigned char).
    for (int a : arrays)
      s += fmt::format("#pragma unroll\n      for (int t = 0; t < {}; ++t) a{}[j * {} + t] = kiln_vec<{}, 1>{{}}.v[0];\n",
                       c_.vec, a, c_.vec, storage(a));
    s += "    }\n  }\n";
    if (shared_steps() == 0) return s;
    // The rest of the thread's slice is copied to shared memory with no register on the
    // way (cp.async); only this thread reads it back, once its copies have landed.
    s += vector_loop_open(register_steps(), register_steps() + shared_steps());
    for (int a : arrays)
      s += fmt::format("      kiln_copy_async16({}, {} + base{} + col);\n", tail_slot(a), param_[a], a);
    return s + "    }\n  }\n  kiln_copy_async_wait();\n";
  }

  std::vector<int> register_arrays() const {
    std::vector<int> arrays;
    for (size_t i = 0; i < k_.args.size(); ++i)
      if (in_registers(static_cast<int>(i))) arrays.push_back(static_cast<int>(i));
    return arrays;
  }

  // Inputs kept in registers: with the row in registers, those that move along the row
  // and belong to it. An input every row shares (a norm's weight) is read where it is
  // used instead: it stays in L1 and would cost as many registers as the row.
  bool in_registers(int arg) const { return row_held(arg) && !shared_part_; }
  // The row's own inputs when the row is held (in registers, and past `elems` per thread
  // in shared memory); the element loops over the shared part read them from there.
  bool row_held(int arg) const { return c_.stream == 0 && ir::belongs_to_row(k_, space_, arg); }
  int register_steps() const { return c_.elems / c_.vec; }
  int shared_steps() const { return c_.shared_elems / c_.vec; }  // validate: 0 for a streamed row

  // Element `t` of this thread's current vector of input `arg`, as stored: in its register
  // array, else in the vector v<arg> that load_vector read.
  std::string vector_element(int arg, const std::string& t) const {
    return in_registers(arg) ? fmt::format("a{}[j * {} + {}]", arg, c_.vec, t) : fmt::format("v{}.v[{}]", arg, t);
  }

  // The expression of op `id` with operands named r<x> (per row) or e<x> (per element).
  std::string value_expr(size_t id) const {
    const ir::ScalarOp& op = k_.body[id];
    auto name = [&](int x) { return fmt::format("{}{}", uniform_[x] ? "r" : "e", x); };
    switch (op.kind) {
      case ScalarKind::Load: {
        if (uniform_[id]) return load_expr(op.dtype, fmt::format("{}[base{}]", param_[op.arg], op.arg));
        return load_expr(op.dtype, vector_element(op.arg, "t"));
      }
      case ScalarKind::Const: return const_expr(op.dtype, op.value);
      case ScalarKind::Index: {
        int64_t along = op.coeffs.back() == 0 ? 0 : space_index_coeff(id);
        std::string at = along == 0 ? fmt::format("ibase{}", id)
                                    : fmt::format("ibase{} + (col + ({})t) * {}", id, idx_, lit(along));
        return index_expr(op.dtype, at);
      }
      case ScalarKind::Op: {
        // A per-element value divided by a per-row value: multiply by the row's
        // reciprocal, computed once (row_values); a division costs ten instructions
        // per element, which a softmax at full bandwidth cannot afford.
        if (divides_by_row_value(id)) return fmt::format("({} * rinv{})", name(op.operands[0]), op.operands[1]);
        // A loaded fp16 / bf16 value widened to f32 is exact already: no rounding first
        // (online-softmax widens the row so; the rounding would cost two conversions).
        if (op.op == ir::OpKind::Cast && op.dtype == DType::f32 && k_.body[op.operands[0]].kind == ScalarKind::Load)
          return name(op.operands[0]);
        // x - logsumexp: subtract the row's max and the log of its sum apart. x - max is
        // exact near the max, so no precision goes to rounding max + log(sum) to one
        // float (at |x| ~ 1000 that alone would cost 3e-5 of every softmax output).
        if (subtracts_log_sum_exp(id)) {
          const int l = op.operands[1];
          return fmt::format("(({} - lse_max{}) - lse_log{})", name(op.operands[0]), l, l);
        }
        // softmax's exp(x - logsumexp) as 2^((x - max) * log2(e) - log2(sum)): a
        // subtraction, a fused multiply-add and one MUFU.EX2 per element.
        if (op.op == ir::OpKind::Exp && subtracts_log_sum_exp(op.operands[0])) {
          const ir::ScalarOp& sub = k_.body[op.operands[0]];
          const int l = sub.operands[1];
          return fmt::format("kiln_ex2(fmaf({} - lse_max{}, 1.44269504f, lse_nlog2_{}))", name(sub.operands[0]), l, l);
        }
        std::vector<DType> types;
        std::vector<std::string> names;
        for (int x : op.operands) {
          types.push_back(k_.body[x].dtype);
          names.push_back(name(x));
        }
        return op_expr(op.op, op.attrs, op.dtype, types, names);
      }
      case ScalarKind::Store:
      case ScalarKind::Reduce:
      case ScalarKind::Acc: break;
    }
    throw Error(fmt::format("kernel @{}: op %{} has no value expression", k_.name, id));
  }

  int64_t space_index_coeff(size_t id) const {
    size_t j = 0;
    for (size_t i = 0; i < id; ++i) j += k_.body[i].kind == ScalarKind::Index;
    return space_.index_coeffs[j].back();
  }

  // True when op `id` is a floating-point division of a per-element value by a per-row one.
  bool divides_by_row_value(size_t id) const {
    const ir::ScalarOp& op = k_.body[id];
    return op.kind == ScalarKind::Op && op.op == ir::OpKind::Div && is_float(op.dtype) && !uniform_[id] &&
           uniform_[op.operands[1]];
  }

  // True when op `id` is a floating-point x - logsumexp(...) of this kernel.
  bool subtracts_log_sum_exp(size_t id) const {
    const ir::ScalarOp& op = k_.body[id];
    if (op.kind != ScalarKind::Op || op.op != ir::OpKind::Sub || !is_float(op.dtype)) return false;
    const ir::ScalarOp& l = k_.body[op.operands[1]];
    return l.kind == ScalarKind::Reduce && l.op == ir::OpKind::ReduceLogSumExp;
  }

  // True when x - logsumexp `id` is used only by exps, which read its operands instead
  // (value_expr): it needs no register of its own.
  bool folded_into_exp(size_t id) const {
    if (!subtracts_log_sum_exp(id)) return false;
    for (const ir::ScalarOp& user : k_.body)
      for (int x : user.operands)
        if (static_cast<size_t>(x) == id && (user.kind != ScalarKind::Op || user.op != ir::OpKind::Exp)) return false;
    return true;
  }

  // The per-row values used as divisors by per-element ops.
  bool is_row_divisor(size_t x) const {
    for (size_t id = 0; id < k_.body.size(); ++id)
      if (divides_by_row_value(id) && static_cast<size_t>(k_.body[id].operands[1]) == x) return true;
    return false;
  }

  std::string reciprocal_of(size_t x) const {
    return is_row_divisor(x) ? fmt::format("  const float rinv{} = 1.0f / (float)r{};\n", x, x) : "";
  }

  // Per-row values that become available at `stage` (loads of per-row inputs, constants,
  // ops on reductions that have finished).
  std::string row_values(int stage) const {
    std::string s;
    for (size_t id = 0; id < k_.body.size(); ++id) {
      const ir::ScalarOp& op = k_.body[id];
      if (!uniform_[id] || ready_[id] != stage || op.kind == ScalarKind::Store || op.kind == ScalarKind::Reduce ||
          folded_into_exp(id))
        continue;
      s += fmt::format("  const {} r{} = {};\n", register_type(op.dtype), id, value_expr(id));
      s += reciprocal_of(id);
    }
    return s;
  }

  // The per-element ops that `roots` need, in body order.
  std::vector<size_t> element_cone(const std::vector<int>& roots) const {
    std::vector<bool> need(k_.body.size(), false);
    std::vector<int> stack = roots;
    while (!stack.empty()) {
      int x = stack.back();
      stack.pop_back();
      if (need[x] || uniform_[x]) continue;
      need[x] = true;
      stack.insert(stack.end(), k_.body[x].operands.begin(), k_.body[x].operands.end());
    }
    std::vector<size_t> out;
    for (size_t id = 0; id < need.size(); ++id)
      if (need[id]) out.push_back(id);
    return out;
  }

  // The opening of an unrolled loop over this thread's vectors j in [from, to) of a held
  // row, up to the guard that skips a vector past the row's end (or an inactive row).
  std::string vector_loop_open(int from, int to) const {
    std::string s = from == 0 ? fmt::format("#pragma unroll\n  for (int j = 0; j < {}; ++j) {{\n", to)
                              : fmt::format("#pragma unroll\n  for (int j = {}; j < {}; ++j) {{\n", from, to);
    // Vectors j < whole lie inside the row for every lane: only those past it need the
    // end-of-row test, and the unrolled loop drops it from the others (a loop over the
    // shared part may then not read `col` at all).
    const int64_t whole = n_ / (span() * c_.vec);
    s += fmt::format("    {}const {} col = (({})j * {} + lane) * {};\n", whole >= to ? "[[maybe_unused]] " : "", idx_,
                     idx_, lit(span()), lit(c_.vec));
    if (whole >= to) return s + "    if (active) {\n";
    if (whole <= from) return s + fmt::format("    if (active && col < {}) {{\n", lit(n_));
    return s + fmt::format("    if (active && (j < {} || col < {})) {{\n", whole, lit(n_));
  }

  // The loop over this thread's vectors of the row; `body` runs per vector with `col`.
  // A row held in registers and shared memory takes two loops, the body written for each.
  std::string element_loop(const std::function<std::string()>& body) const {
    if (c_.stream != 0) {
      std::string s = "  if (active) {\n";
      s += fmt::format("    for ({} col = ({})lane * {}; col < {}; col += {}) {{\n", idx_, idx_, lit(c_.vec), lit(n_),
                       lit(span() * c_.vec));
      return s + body() + "    }\n  }\n";
    }
    auto loop = [&](int from, int to) { return vector_loop_open(from, to) + body() + "    }\n  }\n"; };
    std::string s = loop(0, register_steps());
    if (shared_steps() == 0) return s;
    shared_part_ = true;
    s += loop(register_steps(), register_steps() + shared_steps());
    shared_part_ = false;
    return s;
  }

  // Loads (streamed rows) and the per-element ops of `cone`, inside the loop over t.
  std::string element_ops(const std::vector<size_t>& cone, const std::string& in) const {
    std::string s;
    for (size_t id : cone) {
      if (k_.body[id].kind == ScalarKind::Store || folded_into_exp(id)) continue;
      s += fmt::format("{}const {} e{} = {};\n", in, register_type(k_.body[id].dtype), id, value_expr(id));
    }
    return s;
  }

  // The vectors of the inputs that `cone` reads and registers do not hold.
  std::string stream_loads(const std::vector<size_t>& cone, const std::string& in) const {
    std::set<int> args;
    for (size_t id : cone)
      if (k_.body[id].kind == ScalarKind::Load && !in_registers(k_.body[id].arg)) args.insert(k_.body[id].arg);
    std::string s;
    for (int a : args) s += load_vector(in, a, "col");
    return s;
  }

  // Reductions whose accumulators are updated once per vector (see the top of the file).
  static bool per_vector(ir::OpKind op) { return op == ir::OpKind::ReduceLogSumExp || op == ir::OpKind::ReduceVar; }
  static int accumulators(ir::OpKind op) {
    return op == ir::OpKind::ReduceLogSumExp ? 2 : op == ir::OpKind::ReduceVar ? 3 : 1;
  }

  static std::string identity(ir::OpKind op) {
    if (op == ir::OpKind::ReduceMax) return "__int_as_float(0xff800000)";  // -inf
    if (op == ir::OpKind::ReduceMin) return "__int_as_float(0x7f800000)";  // +inf
    return "0.0f";
  }
  static std::string combiner(ir::OpKind op) {
    return op == ir::OpKind::ReduceMax ? "max" : op == ir::OpKind::ReduceMin ? "min" : "sum";
  }
  static std::string combine(ir::OpKind op, const std::string& acc, const std::string& v) {
    if (op == ir::OpKind::ReduceMax) return fmt::format("kiln_max({}, {})", acc, v);
    if (op == ir::OpKind::ReduceMin) return fmt::format("kiln_min({}, {})", acc, v);
    return fmt::format("{} + {}", acc, v);
  }

  // The accumulators of reduction `r`, before the element loop.
  std::string declare_accumulators(int r) const {
    if (is_integer_reduce(k_.body[r]))
      return fmt::format("  {} acc{} = {};\n", integer_accumulator(k_.body[r].op), r, integer_identity(k_.body[r].op));
    switch (k_.body[r].op) {
      case ir::OpKind::ReduceLogSumExp:
        return fmt::format("  float lse_max{} = __int_as_float(0xff800000), lse_sum{} = 0.0f;  // running max, "
                           "sum of exp(x - max)\n", r, r);
      case ir::OpKind::ReduceVar:
        return fmt::format("  float w_n{} = 0.0f, w_mean{} = 0.0f, w_m2{} = 0.0f;  // count, mean, squared "
                           "deviations\n", r, r, r);
      default: return fmt::format("  float acc{} = {};\n", r, identity(k_.body[r].op));
    }
  }

  // After the loop over a vector's V values xs<r>[t]: fold them into the accumulators.
  std::string vector_update(int r, const std::string& in) const {
    const int v = c_.vec;
    std::string s;
    if (max_first(r)) {
      auto term = [&](const std::string& t) {
        return one_fma_exp(r) ? fmt::format("kiln_ex2(fmaf(xs{}[{}], {}, -hi{}))", r, t, kLog2e, r)
                              : fmt::format("kiln_lse_exp(xs{}[{}], shift{})", r, t, r);
      };
      s += fmt::format("{}float part{} = {};\n", in, r, term("0"));
      s += fmt::format("#pragma unroll\n{}for (int t = 1; t < {}; ++t) part{} += {};\n", in, v, r, term("t"));
      return s + fmt::format("{}lse_sum{} += part{};\n", in, r, r);
    }
    if (k_.body[r].op == ir::OpKind::ReduceLogSumExp) {
      // The vector's max first, so the running sum is rescaled once, not once per element.
      s += fmt::format("{}float top{} = lse_max{};\n", in, r, r);
      s += fmt::format("#pragma unroll\n{}for (int t = 0; t < {}; ++t) top{} = kiln_max(top{}, xs{}[t]);\n", in, v,
                       r, r, r);
      s += fmt::format("{}const float shift{} = kiln_lse_base(top{});\n", in, r, r);
      s += fmt::format("{}float part{} = kiln_lse_exp(xs{}[0], shift{});\n", in, r, r, r);
      s += fmt::format("#pragma unroll\n{}for (int t = 1; t < {}; ++t) part{} += kiln_lse_exp(xs{}[t], shift{});\n", in,
                       v, r, r, r);
      s += fmt::format("{}lse_sum{} = lse_sum{} * kiln_lse_exp(lse_max{}, shift{}) + part{};\n", in, r, r, r, r, r);
      return s + fmt::format("{}lse_max{} = top{};\n", in, r, r);
    }
    // Welford by vectors: the vector's mean and squared deviations (exact two-pass on
    // registers), merged into the thread's running triple.
    s += fmt::format("{}float vsum{} = 0.0f;\n", in, r);
    s += fmt::format("#pragma unroll\n{}for (int t = 0; t < {}; ++t) vsum{} += xs{}[t];\n", in, v, r, r);
    s += fmt::format("{}const float vmean{} = vsum{} * {};\n", in, r, r, const_expr(DType::f32, 1.0 / v));
    s += fmt::format("{}float vm2{} = 0.0f;\n", in, r);
    s += fmt::format("#pragma unroll\n{}for (int t = 0; t < {}; ++t) vm2{} = fmaf(xs{}[t] - vmean{}, "
                     "xs{}[t] - vmean{}, vm2{});\n", in, v, r, r, r, r, r, r);
    return s + fmt::format("{}kiln_welford_add(w_n{}, w_mean{}, w_m2{}, {}, vmean{}, vm2{});\n", in, r, r, r,
                           const_expr(DType::f32, v), r, r);
  }

  // The held load whose values logsumexp `r` reduces, widened exactly to f32 (softmax's
  // cast of its fp16 / bf16 row, or an f32 row as it is), or -1.
  int held_operand(int r) const {
    int x = k_.body[r].operands[0];
    const ir::ScalarOp* op = &k_.body[x];
    if (op->kind == ScalarKind::Op && op->op == ir::OpKind::Cast && op->dtype == DType::f32) {
      x = op->operands[0];
      op = &k_.body[x];
    }
    const bool exact = op->dtype == DType::f32 || op->dtype == DType::f16 || op->dtype == DType::bf16;
    const bool held = op->kind == ScalarKind::Load && !uniform_[x] && row_held(op->arg) && varying(op->arg);
    return exact && held ? x : -1;
  }

  // A logsumexp over a held row takes the thread's max over its part of the row before
  // the exp sum, so no vector pays a rescale (an exp, a compare and a select): the max
  // runs on the values as stored, two fp16 / bf16 values an instruction.
  bool max_first(int r) const { return k_.body[r].op == ir::OpKind::ReduceLogSumExp && held_operand(r) >= 0; }

  // With the shift known before the sum, an fp16 row's terms take one FFMA each:
  // 2^(x * log2(e) - hi), hi = shift * log2(e) rounded. Every term is then off by the
  // same factor 2^lo (lo = shift * log2(e) - hi, exact by an FMA), taken out of the
  // thread's sum once. fp16 only: |x| * log2(e) < 94548 never overflows, where a bf16
  // or f32 max could.
  bool one_fma_exp(int r) const { return max_first(r) && k_.body[held_operand(r)].dtype == DType::f16; }

  // The loop that sets lse_max<r> to the max of this thread's held values of the row,
  // and the shift that the exp sum then subtracts.
  std::string thread_max(int r) const {
    const int x = held_operand(r), a = k_.body[x].arg;
    const DType t = k_.body[x].dtype;
    const bool packed = (t == DType::f16 || t == DType::bf16) && c_.vec % 2 == 0;
    const bool f16 = t == DType::f16;
    // Read inside the loop: the shared part's loop reads the vector from shared memory.
    auto update = [&] {
      if (!packed) return fmt::format("lse_max{} = kiln_max(lse_max{}, {})", r, r, value_expr(x));
      return fmt::format("top{} = __hmax2_nan(top{}, {}({}, {}))", r, r, f16 ? "__halves2half2" : "__halves2bfloat162",
                         vector_element(a, "t"), vector_element(a, "t + 1"));
    };
    const std::string in = "      ";
    std::string s = "  // The thread's max first, so that the exp sum needs no rescale.\n";
    if (packed)
      s += fmt::format("  {} top{} = {}(__int_as_float(0xff800000));\n", f16 ? "__half2" : "__nv_bfloat162", r,
                       f16 ? "__float2half2_rn" : "__float2bfloat162_rn");
    s += element_loop([&] {
      return stream_loads({static_cast<size_t>(x)}, in) +
             fmt::format("#pragma unroll\n{}for (int t = 0; t < {}; t += {}) {};\n", in, c_.vec, packed ? 2 : 1,
                         update());
    });
    if (packed) s += fmt::format("  lse_max{} = kiln_max(__low2float(top{}), __high2float(top{}));\n", r, r, r);
    s += fmt::format("  const float shift{} = kiln_lse_base(lse_max{});\n", r, r);
    if (!one_fma_exp(r)) return s;
    s += fmt::format("  const float hi{} = shift{} * {};\n", r, r, kLog2e);
    return s + fmt::format("  const float lo{} = fmaf(shift{}, {}, -hi{});\n", r, r, kLog2e, r);
  }

  // Combines the row's threads' accumulators of reduction `r` and defines its value r<r>.
  std::string finish_reduction(int r) const {
    const ir::OpKind op = k_.body[r].op;
    const int slot = reduce_slot_.at(r), t = c_.row_threads;
    std::string s;
    if (op == ir::OpKind::ReduceLogSumExp) {
      if (t > 32)
        s += fmt::format("  kiln_block_lse<{}>(lse_max{}, lse_sum{}, kiln_slots[{}], kiln_slots[{}]);\n", t, r, r, slot,
                         slot + 1);
      else if (t > 1)
        s += fmt::format("  kiln_warp_lse<{}>(lse_max{}, lse_sum{});\n", t, r, r);
      if (cluster() > 1)
        s += fmt::format("  kiln_cluster_lse<{}>(lse_max{}, lse_sum{}, kiln_cluster_slots[{}], "
                         "kiln_cluster_slots[{}]);\n", cluster(), r, r, slot, slot + 1);
      // An infinite max is logsumexp's answer itself (kiln_lse_result): x - lse is then x
      // - max alone, so a +inf beside finite values leaves them -inf (softmax 0), where the
      // sum's NaN (from inf - inf) would make every element NaN.
      s += fmt::format("  const bool lse_inf{} = fabsf(lse_max{}) == __int_as_float(0x7f800000);\n", r, r);
      s += fmt::format("  const float lse_log{} = lse_inf{} ? 0.0f : logf(lse_sum{});\n", r, r, r);
      s += fmt::format("  const float lse_nlog2_{} = lse_inf{} ? 0.0f : -log2f(lse_sum{});\n", r, r, r);
      return s + fmt::format("  const float r{} = kiln_lse_result(lse_max{}, lse_sum{});\n", r, r, r);
    }
    if (op == ir::OpKind::ReduceVar) {
      if (t > 32)
        s += fmt::format("  kiln_block_welford<{}>(w_n{}, w_mean{}, w_m2{}, kiln_slots[{}], kiln_slots[{}], "
                         "kiln_slots[{}]);\n", t, r, r, r, slot, slot + 1, slot + 2);
      else if (t > 1)
        s += fmt::format("  kiln_warp_welford<{}>(w_n{}, w_mean{}, w_m2{});\n", t, r, r, r);
      if (cluster() > 1)
        s += fmt::format("  kiln_cluster_welford<{}>(w_n{}, w_mean{}, w_m2{}, kiln_cluster_slots[{}], "
                         "kiln_cluster_slots[{}], kiln_cluster_slots[{}]);\n", cluster(), r, r, r, slot, slot + 1,
                         slot + 2);
      return s + fmt::format("  const float r{} = w_m2{} / {};\n", r, r, const_expr(DType::f32, n_));
    }
    if (is_integer_reduce(k_.body[r])) return finish_integer_reduction(r);
    const std::string comb = combiner(op);
    if (t > 32)
      s += fmt::format("  acc{} = kiln_block_{}<{}>(acc{}, kiln_slots[{}]);\n", r, comb, t, r, slot);
    else if (t > 1)
      s += fmt::format("  acc{} = kiln_warp_{}<{}>(acc{});\n", r, comb, t, r);
    if (cluster() > 1)
      s += fmt::format("  acc{} = kiln_cluster_{}<{}>(acc{}, kiln_cluster_slots[{}]);\n", r, comb, cluster(), r, slot);
    std::string value = fmt::format("acc{}", r);
    if (op == ir::OpKind::ReduceMean) value = fmt::format("acc{} / {}", r, const_expr(DType::f32, n_));
    return s + fmt::format("  const float r{} = {};\n", r, value);
  }

  // finish_reduction for an integer accumulator: the same steps on 64-bit slots.
  std::string finish_integer_reduction(int r) const {
    const ir::OpKind op = k_.body[r].op;
    const int slot = reduce_slot_.at(r), t = c_.row_threads;
    const std::string comb = integer_combiner(op);
    std::string s;
    if (t > 32)
      s += fmt::format("  acc{} = kiln_block_{}<{}>(acc{}, kiln_islots[{}]);\n", r, comb, t, r, slot);
    else if (t > 1)
      s += fmt::format("  acc{} = kiln_warp_{}<{}>(acc{});\n", r, comb, t, r);
    if (cluster() > 1)
      s += fmt::format("  acc{} = kiln_cluster_{}<{}>(acc{}, kiln_cluster_islots[{}]);\n", r, comb, cluster(), r,
                       slot);
    return s + fmt::format("  const int r{} = {};\n", r, integer_result(op, fmt::format("acc{}", r)));
  }

  std::string reductions(int phase) const {
    std::vector<int> reduces, operands;
    for (size_t id = 0; id < k_.body.size(); ++id)
      if (k_.body[id].kind == ScalarKind::Reduce && k_.body[id].phase == phase) {
        reduces.push_back(static_cast<int>(id));
        operands.push_back(k_.body[id].operands[0]);
      }
    std::string s = fmt::format("  // Phase {}: accumulate in fp32, then across the row's threads.\n", phase);
    for (int r : reduces) s += declare_accumulators(r);
    for (int r : reduces)
      if (max_first(r)) s += thread_max(r);
    std::vector<size_t> cone = element_cone(operands);
    const std::string in = "        ";
    auto make_body = [&] {
      std::string body = stream_loads(cone, "      ");
      for (int r : reduces)
        if (per_vector(k_.body[r].op)) body += fmt::format("      float xs{}[{}];\n", r, c_.vec);
      body += fmt::format("#pragma unroll\n      for (int t = 0; t < {}; ++t) {{\n", c_.vec);
      body += element_ops(cone, in);
      for (int r : reduces) {
        int x = k_.body[r].operands[0];
        std::string v = fmt::format("{}{}", uniform_[x] ? "r" : "e", x);
        if (per_vector(k_.body[r].op)) body += fmt::format("{}xs{}[t] = {};\n", in, r, v);
        else if (is_integer_reduce(k_.body[r]))
          body += fmt::format("{}acc{} = {};\n", in, r, integer_combine(k_.body[r].op, fmt::format("acc{}", r), v));
        else body += fmt::format("{}acc{} = {};\n", in, r, combine(k_.body[r].op, fmt::format("acc{}", r), v));
      }
      body += "      }\n";
      for (int r : reduces)
        if (per_vector(k_.body[r].op)) body += vector_update(r, "      ");
      return body;
    };
    s += element_loop(make_body);
    for (int r : reduces)
      if (one_fma_exp(r)) s += fmt::format("  lse_sum{} *= kiln_ex2(-lo{});  // every term was 2^lo too large\n", r, r);
    if (phase == 0 && cluster() > 1) s += "  kiln_cluster_wait();  // every block of the cluster has started\n";
    for (int r : reduces) {
      s += finish_reduction(r);
      s += reciprocal_of(static_cast<size_t>(r));
    }
    return s;
  }

  std::string final_stores() const {
    std::vector<int> stores, values;
    for (size_t id = 0; id < k_.body.size(); ++id) {
      const ir::ScalarOp& op = k_.body[id];
      if (op.kind == ScalarKind::Store && k_.args[op.arg].type.shape == k_.space()) {
        stores.push_back(static_cast<int>(id));
        values.push_back(op.operands[0]);
      }
    }
    if (stores.empty()) return "";
    std::vector<size_t> cone = element_cone(values);
    const std::string in = "        ";
    auto make_body = [&] {
      std::string body = stream_loads(cone, "      ");
      for (int st : stores) body += fmt::format("      {} w{};\n", vec_type(k_.body[st].arg), st);
      body += fmt::format("#pragma unroll\n      for (int t = 0; t < {}; ++t) {{\n", c_.vec);
      body += element_ops(cone, in);
      for (int st : stores) {
        const ir::ScalarOp& op = k_.body[st];
        int x = op.operands[0];
        // Storing rounds to the output's dtype: a cast from f32 to that dtype just before
        // the store would round twice (the same bits, two more conversions).
        const ir::ScalarOp& v = k_.body[x];
        if (v.kind == ScalarKind::Op && v.op == ir::OpKind::Cast && v.dtype == op.dtype && is_float(op.dtype) &&
            k_.body[v.operands[0]].dtype == DType::f32 && !uniform_[v.operands[0]])
          x = v.operands[0];
        body += fmt::format("{}w{}.v[t] = {};\n", in, st,
                            store_expr(op.dtype, fmt::format("{}{}", uniform_[x] ? "r" : "e", x)));
      }
      body += "      }\n";
      for (int st : stores) {
        int a = k_.body[st].arg;
        body += fmt::format("      *reinterpret_cast<{}*>({} + base{} + col) = w{};\n", vec_type(a), param_[a], a, st);
      }
      return body;
    };
    return "  // The full-size outputs.\n" + element_loop(make_body);
  }

  std::string row_stores() const {
    std::string s;
    for (size_t id = 0; id < k_.body.size(); ++id) {
      const ir::ScalarOp& op = k_.body[id];
      if (op.kind != ScalarKind::Store || k_.args[op.arg].type.shape == k_.space()) continue;
      s += fmt::format("    {}[base{}] = {};\n", param_[op.arg], op.arg,
                       store_expr(op.dtype, fmt::format("r{}", op.operands[0])));
    }
    return s.empty() ? "" : "  if (active && lane == 0) {\n" + s + "  }\n";
  }

  const Kernel& k_;
  const ir::TileConfig& c_;
  ir::CollapsedSpace space_;
  std::vector<bool> uniform_;
  std::vector<int> ready_;  // per op: the stage from which its value exists
  std::map<int, int> reduce_slot_;
  int num_slots_ = 0;  // shared-memory slots: one per accumulator of every float reduction
  int num_integer_slots_ = 0;  // 64-bit slots: one per integer reduction
  // While element_loop writes the loop over the shared part of the row: its row-held
  // inputs are read from shared memory (load_vector), not from registers.
  mutable bool shared_part_ = false;
  int phases_ = 0;
  int64_t n_ = 0, rows_ = 0;
  std::string idx_, suffix_;
  std::vector<std::string> param_;
};

}  // namespace

LaunchDims row_reduce_launch_dims(const Kernel& k) {
  const ir::TileConfig& c = k.config;
  if (c.row_threads <= 0 || c.rows <= 0) throw Error(fmt::format("kernel @{} has no row tile config", k.name));
  LaunchDims d;
  d.grid[0] = static_cast<unsigned>((ir::row_count(k) + c.rows - 1) / c.rows * std::max(1, c.cluster));
  d.block[0] = static_cast<unsigned>(c.row_threads * c.rows);
  d.shared_bytes = static_cast<unsigned>(ir::row_shared_bytes(k, c));
  return d;
}

std::string emit_row_reduce(const Kernel& k) {
  ir::verify(k);
  ir::validate(k, k.config);
  return RowReduceEmitter(k).emit();
}

}  // namespace kiln::codegen
