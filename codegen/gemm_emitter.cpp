// The gemm emitter's frame (see gemm_emitter.h): the block's output tile in an
// L2-friendly order, its batch entry and K slice, the pipeline of K steps through
// `stages` shared-memory stages (one step multiplied while the next stages - 1 are in
// flight), the split-K exchange, and the epilogue calls. The schedule fills in the rest.
#include "codegen/gemm_emitter.h"

#include <fmt/format.h>

#include "codegen/gemm_common.h"

#include "codegen/gemm_epilogue.h"
#include "codegen/gemm_schedule.h"
#include "codegen/kernel_params.h"
#include "codegen/scalar_emit.h"
#include "ir/error.h"
#include "ir/tile_config.h"

namespace kiln::codegen {

namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

class GemmEmitter {
public:
  explicit GemmEmitter(const ir::Kernel& k)
      : k_(k), c_(k.config), params_(param_names(k)), schedule_(make_gemm_schedule(k, params_)),
        epilogue_(k, params_, schedule_->vec()) {
    tiles_m_ = ceil_div(k.gemm.m, c_.bm);
    tiles_n_ = ceil_div(k.gemm.n, c_.bn);
    k_slice_ = ir::gemm_k_slice(k, c_);
    split_ = c_.split_k > 1;
    padded_n_ = ceil_div(k.gemm.n, schedule_->vec()) * schedule_->vec();
  }

  std::string emit() const {
    std::string s = header();
    if (split_) s += scratch();
    s += epilogue_.functions();
    s += signature();
    s += frame();
    s += pipeline();
    s += split_ ? split_epilogue() : direct_epilogue();
    return s + "}\n";
  }

private:
  std::string scratch_name(const char* what) const { return fmt::format("kiln_{}_{}", k_.name, what); }
  int64_t batches() const { return ir::gemm_batch_count(k_.gemm); }

  std::string header() const {
    const LaunchDims d = gemm_launch_dims(k_);
    std::string s = gemm_header_title(k_);
    s += fmt::format("// Config {}:\n//   grid {} x {} x {} blocks of {} threads, {} bytes of shared memory ({} stages of "
                     "{} bytes)\n",
                     c_.str(), d.grid[0], d.grid[1], d.grid[2], d.block[0], d.shared_bytes, c_.stages,
                     schedule_->stage_bytes());
    s += schedule_->describe();
    s += fmt::format("//   output tiles {} x {} of {} x {}, walked in groups of {} tile rows\n", tiles_m_, tiles_n_,
                     c_.bm, c_.bn, c_.group);
    if (split_)
      s += fmt::format("//   K in {} slices of {}; each tile's last slice sums the fp32 partials in slice order\n",
                       c_.split_k, k_slice_);
    s += "//   epilogue: " + epilogue_.describe() + "\n";
    return s;
  }

  // Module-scope partials ([slice][batch][M][N rounded up to the vector]) and one
  // ticket per tile, zero at load; the last block of a tile resets its ticket.
  std::string scratch() const {
    return fmt::format("__device__ float {}[{}];\n__device__ int {}[{}];\n", scratch_name("partials"),
                       c_.split_k * batches() * k_.gemm.m * padded_n_, scratch_name("tickets"),
                       batches() * tiles_m_ * tiles_n_);
  }

  std::string signature() const {
    std::vector<std::string> params = gemm_pointer_params(k_, params_);
    return fmt::format("extern \"C\" __global__ void __launch_bounds__({}, 1) {}({}) {{\n", schedule_->threads(), k_.name,
                       fmt::join(params, ", "));
  }

  std::string frame() const {
    const int64_t group_tiles = int64_t{c_.group} * tiles_n_;
    std::string s = "  extern __shared__ __align__(128) unsigned char kiln_smem[];\n";
    s += "  [[maybe_unused]] const unsigned smem = (unsigned)__cvta_generic_to_shared(kiln_smem);\n";
    s += "  // The output tile: tiles go in groups of " + std::to_string(c_.group) +
         " tile rows, column by column within a group, so that the blocks running at once share rows of A and "
         "columns of B in L2.\n";
    s += "  const int tile = (int)blockIdx.x;\n";
    s += fmt::format("  const int group_first = tile / {} * {};\n", group_tiles, c_.group);
    s += fmt::format("  const int group_rows = min({} - group_first, {});\n", tiles_m_, c_.group);
    s += fmt::format("  const int tile_m = group_first + tile % {} % group_rows;\n", group_tiles);
    s += fmt::format("  const int tile_n = tile % {} / group_rows;\n", group_tiles);
    s += fmt::format("  const int m0 = tile_m * {}, n0 = tile_n * {};\n", c_.bm, c_.bn);
    s += "  const unsigned batch = blockIdx.y;\n";
    if (split_) {
      s += fmt::format("  const int k_begin = (int)blockIdx.z * {};\n", k_slice_);
      s += fmt::format("  const int k_end = min({}, k_begin + {});\n", k_.gemm.k, k_slice_);
    } else {
      s += "  const int k_begin = 0;\n";
      s += fmt::format("  [[maybe_unused]] const int k_end = {};\n", k_.gemm.k);
    }
    s += fmt::format("  const int k_steps = (k_end - k_begin + {}) / {};\n", c_.bk - 1, c_.bk);
    return s + schedule_->setup() + schedule_->accumulators();
  }

  // The pipeline. Before the loop, stages - 1 K steps are in flight. Each stage is
  // multiplied in k_steps() parts; while part kk multiplies, part kk + 1's operands
  // load from shared memory. Part 0 starts the copies of the step stages - 1 ahead
  // into the stage the last step used (after part 1's fragment loads); the last part
  // waits for the next step's stage, passes a barrier (after which no thread reads this
  // stage again) and loads the next stage's first part, so that the Tensor Cores never
  // wait on shared memory.
  std::string pipeline() const {
    const bool async = schedule_->async_copies();
    const int stages = schedule_->stages(), bytes = schedule_->stage_bytes(), parts = schedule_->k_steps();
    const std::string commit_group = async ? "kiln_copy_async_commit();\n" : "";
    const std::string wait = async ? fmt::format("kiln_copy_async_wait_group<{}>();\n", stages - 2) : "";
    std::string s = fmt::format("  // The pipeline: {} K steps in flight ahead of the one being multiplied.\n",
                                stages - 1);
    s += schedule_->preload();
    s += fmt::format("#pragma unroll\n  for (int s = 0; s < {}; ++s) {{\n    if (s < k_steps) {{\n", stages - 1);
    s += fmt::format("      const int k0 = k_begin + s * {};\n", c_.bk);
    s += schedule_->issue("      ", fmt::format("s * {}u", bytes), "k0");
    s += schedule_->commit("      ", fmt::format("s * {}u", bytes), "k0");
    s += "    }\n";
    if (async) s += "    " + commit_group;
    s += "  }\n";
    s += "  " + wait + "  __syncthreads();\n";
    const std::string first_prepare = schedule_->prepare("    ", "0u", "k_begin", false);
    if (!first_prepare.empty()) s += "  if (k_steps > 0) {\n" + first_prepare + "  }\n  __syncthreads();\n";
    s += fmt::format("  int read_stage = 0, write_stage = {};\n", stages - 1);
    // Operands loaded through registers: with three stages or more, the registers loaded
    // in one step are stored to shared memory in the next, a whole step later, so that
    // their loads have time to land; with two, at the end of the same step.
    const std::string held_commit = schedule_->commit("        ", "held_at", "held_k");
    const bool staged = !held_commit.empty(), deferred = staged && stages >= 3;
    if (deferred) s += "  bool held = false;  // registers hold a K step not yet stored\n  unsigned held_at = 0;\n  [[maybe_unused]] int held_k = 0;  // read by prologues only\n";
    s += schedule_->fragments();
    s += schedule_->load_fragments("  ", "0", "0u", "0");
    s += "  for (int step = 0; step < k_steps; ++step) {\n";
    s += fmt::format("    const int next = step + {};\n", stages - 1);
    s += fmt::format("    const int k_next = k_begin + next * {};\n", c_.bk);
    s += fmt::format("    const unsigned write_at = write_stage * {}u;\n", bytes);
    s += fmt::format("#pragma unroll\n    for (int kk = 0; kk < {}; ++kk) {{\n", parts);
    const std::string in = "      ";
    std::string issue_block = in + "if (kk == 0) {  // the step stages - 1 ahead, into the stage the last step used\n";
    if (deferred) issue_block += in + "  if (held) {\n" + held_commit + in + "  }\n";
    issue_block += in + "  if (next < k_steps) {\n" + schedule_->issue(in + "    ", "write_at", "k_next") + in + "  }\n";
    if (async) issue_block += in + "  " + commit_group;
    // A packed operand: once this thread's copies of the next step have landed, its
    // chunks of that step are dequantised while the other warps multiply.
    const std::string ahead = schedule_->prepare(
        in + "    ", fmt::format("(read_stage == {} ? 0u : (read_stage + 1) * {}u)", stages - 1, bytes),
        fmt::format("k_begin + (step + 1) * {}", c_.bk), true);
    if (!ahead.empty())
      issue_block += in + "  " + wait + in + "  if (step + 1 < k_steps) {\n" + ahead + in + "  }\n";
    if (deferred)
      issue_block += in + "  held = next < k_steps;\n" + in + "  held_at = write_at;\n" + in + "  held_k = k_next;\n";
    issue_block += in + "}\n";
    std::string next_stage = fmt::format("{}if (kk == {}) {{  // this stage is in registers: on to the next\n", in, parts - 1);
    if (staged && !deferred)
      next_stage += in + "  if (next < k_steps) {\n" + schedule_->commit(in + "    ", "write_at", "k_next") + in + "  }\n";
    next_stage += in + "  " + wait;
    next_stage += in + "  __syncthreads();\n";
    next_stage += fmt::format("{}  read_stage = read_stage == {} ? 0 : read_stage + 1;\n", in, stages - 1);
    next_stage += fmt::format("{}  write_stage = write_stage == {} ? 0 : write_stage + 1;\n", in, stages - 1);
    next_stage += schedule_->advance(in + "  ");
    next_stage += in + "}\n";
    const std::string fragment_loads = schedule_->load_fragments(in, "(kk + 1) & 1", fmt::format("read_stage * {}u", bytes),
                                                                 fmt::format("(kk + 1) % {}", parts));
    // With several parts a stage, part 1's fragment loads go ahead of the step's copies:
    // issuing the copies can stall on the load queue, and the next part's products wait
    // on those fragments (Nsight Compute: the loads behind the copies stalled the Tensor
    // Cores). Not with a K split, whose copies check the slice's end: those registers,
    // live beside both fragment buffers, spill a warp's 64 x 64 accumulators (ptxas -v).
    if (parts > 1 && !split_) s += next_stage + fragment_loads + issue_block;
    else s += issue_block + next_stage + fragment_loads;
    s += schedule_->multiply(in, "kk & 1");
    s += "    }\n  }\n";
    if (async) s += "  kiln_copy_async_wait_group<0>();\n";
    s += "  __syncthreads();  // the pipeline's shared memory is free for the epilogue\n";
    return s;
  }

  std::string direct_epilogue() const {
    std::string s = "  // The epilogue on the accumulators.\n";
    return s + schedule_->accumulator_walk([&](const std::string& in, const std::string& m, const std::string& n,
                                               const std::string& values) {
      return in + epilogue_.call(m, n, values);
    });
  }

  // Stores or loads of `vec` floats at `at`, as 16-byte (or 8-byte) vectors.
  std::string vector_moves(const std::string& in, const std::string& at, const std::string& values, bool store) const {
    const int v = schedule_->vec();
    const int width = v >= 4 ? 4 : v;
    const std::string type = width == 4 ? "float4" : "float2";
    static const char* kLanes[] = {"x", "y", "z", "w"};
    std::string s;
    for (int part = 0; part < v / width; ++part) {
      if (store) {
        std::vector<std::string> items;
        for (int e = 0; e < width; ++e) items.push_back(fmt::format("{}[{}]", values, part * width + e));
        s += fmt::format("{}*reinterpret_cast<{}*>({} + {}) = make_{}({});\n", in, type, at, part * width, type,
                         fmt::join(items, ", "));
      } else {
        s += fmt::format("{}{{ const {} q = __ldcg(reinterpret_cast<const {}*>({} + {}));\n", in, type, type, at,
                         part * width);
        for (int e = 0; e < width; ++e)
          s += fmt::format("{}  {}[{}] += q.{};\n", in, values, part * width + e, kLanes[e]);
        s += in + "}\n";
      }
    }
    return s;
  }

  std::string split_epilogue() const {
    const int64_t matrix = k_.gemm.m * padded_n_, slice = batches() * matrix;
    const int v = schedule_->vec();
    std::string s = "  // This slice's partial sums, then a ticket: the tile's last slice sums them all.\n";
    s += fmt::format("  float* partials = {} + ((long long)blockIdx.z * {}ll + batch) * {}ll;\n",
                     scratch_name("partials"), batches(), matrix);
    s += schedule_->accumulator_walk([&](const std::string& in, const std::string& m, const std::string& n,
                                         const std::string& values) {
      std::string b = fmt::format("{}if ({} < {} && {} < {}) {{\n", in, m, k_.gemm.m, n, padded_n_);
      b += vector_moves(in + "  ", fmt::format("partials + (long long)({}) * {} + ({})", m, padded_n_, n), values, true);
      return b + in + "}\n";
    });
    s += "  __syncthreads();  // the partials are written before the ticket is taken\n";
    s += "  __shared__ bool last_slice;\n";
    s += "  if (threadIdx.x == 0) {\n";
    s += fmt::format("    const int ticket = (int)batch * {} + tile;\n", tiles_m_ * tiles_n_);
    s += fmt::format("    last_slice = kiln_take_ticket(&{}[ticket]) == {}u;\n", scratch_name("tickets"), c_.split_k - 1);
    s += fmt::format("    if (last_slice) {}[ticket] = 0;  // the next launch starts from zero\n",
                     scratch_name("tickets"));
    s += "  }\n  __syncthreads();\n  if (!last_slice) return;\n";
    s += fmt::format("  const float* slices = {} + (long long)batch * {}ll;\n", scratch_name("partials"), matrix);
    s += schedule_->position_walk([&](const std::string& in, const std::string& m, const std::string& n,
                                      const std::string&) {
      std::string b = fmt::format("{}if ({} < {} && {} < {}) {{\n", in, m, k_.gemm.m, n, padded_n_);
      const std::string inner = in + "  ";
      b += fmt::format("{}float sum[{}] = {{}};\n", inner, v);
      b += fmt::format("{}#pragma unroll\n{}for (int z = 0; z < {}; ++z) {{  // in slice order: the same bits every run\n",
                       inner, inner, c_.split_k);
      b += fmt::format("{}  const float* at = slices + (long long)z * {}ll + (long long)({}) * {} + ({});\n", inner,
                       slice, m, padded_n_, n);
      b += vector_moves(inner + "  ", "at", "sum", false);
      b += inner + "}\n";
      b += inner + epilogue_.call(m, n, "sum");
      return b + in + "}\n";
    });
    return s;
  }

  const ir::Kernel& k_;
  const ir::TileConfig& c_;
  std::vector<std::string> params_;
  std::unique_ptr<GemmSchedule> schedule_;
  GemmEpilogue epilogue_;
  int64_t tiles_m_ = 0, tiles_n_ = 0, k_slice_ = 0, padded_n_ = 0;
  bool split_ = false;
};

}  // namespace

std::unique_ptr<GemmSchedule> make_gemm_schedule(const ir::Kernel& k, const std::vector<std::string>& params) {
  if (k.config.schedule == ir::kSimt) return make_simt_schedule(k, params);
  return make_mma_schedule(k, params);
}

LaunchDims gemm_launch_dims(const ir::Kernel& k) {
  const ir::TileConfig& c = k.config;
  if (c.bm <= 0 || c.bn <= 0) throw Error(fmt::format("kernel @{} has no gemm tile config", k.name));
  if (c.schedule == ir::kWgmma) return gemm_wgmma_launch_dims(k);
  if (c.schedule == ir::kGemv) return gemm_gemv_launch_dims(k);
  if (c.schedule == ir::kDequantWgmma || c.schedule == ir::kDequantMma) return gemm_dequant_wgmma_launch_dims(k);
  LaunchDims d;
  d.grid[0] = static_cast<unsigned>(ceil_div(k.gemm.m, c.bm) * ceil_div(k.gemm.n, c.bn));
  d.grid[1] = static_cast<unsigned>(ir::gemm_batch_count(k.gemm));
  d.grid[2] = static_cast<unsigned>(std::max(1, c.split_k));
  d.block[0] = static_cast<unsigned>(ir::gemm_threads(c));
  d.shared_bytes = static_cast<unsigned>(ir::gemm_shared_bytes(k, c));
  return d;
}

std::string emit_gemm(const ir::Kernel& k) {
  ir::verify(k);
  ir::validate(k, k.config);
  if (!is_c_identifier(k.name))
    throw Error(fmt::format("kernel @{}: its name must be a C identifier to name a CUDA function", k.name));
  if (k.config.schedule == ir::kWgmma) return emit_gemm_wgmma(k);
  if (k.config.schedule == ir::kGemv) return emit_gemm_gemv(k);
  if (k.config.schedule == ir::kDequantWgmma || k.config.schedule == ir::kDequantMma) return emit_gemm_dequant_wgmma(k);
  return GemmEmitter(k).emit();
}

}  // namespace kiln::codegen
