// The wgmma schedule of the gemm kind (sm_90a): a warp-specialised, persistent kernel.
//
//   warpgroup 0 (producer): gives back most of its registers; its first thread walks
//     the block's output tiles and, for each K step, waits for a free stage (its
//     `empty` mbarrier), then has the copy engine load the A and B tiles into it; the
//     stage's `full` mbarrier completes when their bytes have landed.
//   warpgroups 1.. (consumers): take the registers; each waits for a full stage,
//     issues wgmma products of its rows of A against all of B straight from shared
//     memory, keeps one K step of products in flight, frees the stage the step before
//     used, and after the last K step runs the fused epilogue on its accumulators in
//     registers, while the producer already loads the next tile's first stages.
//     Consumers either split each tile along M (warps_m of them) or take the block's
//     tiles in turns (warps_n = 2, ping-pong: one's epilogue overlaps the other's
//     products, since the stages fill in tile order).
//   the hand-off (`handoff = 1`): the consumers round a tile's products to their 16-bit
//     dtype into one tile of shared memory and go on to the next tile; the producer
//     warpgroup's other three warps read it back by rows and run the epilogue there, so
//     that the Tensor Cores keep multiplying through it. Two mbarriers pass the tile:
//     `staged` (the consumers' warps have written it) and `drained` (the epilogue's warps
//     have read it).
//   clusters of 2 (`cluster = 2`): the two blocks take two tiles one above the other,
//     which read the same columns of B; each producer loads its own A tile and half of
//     the B tile, multicast into the shared memory of both blocks, so B crosses from L2
//     once for the pair. A stage is free once the consumers of both blocks are done
//     with it: they arrive on the `empty` barriers of both.
//
// Tiles go in groups of `group` tile rows, column by column within a group, so that
// the tiles running at once share rows of A and columns of B in L2; block b takes
// tiles b, b + grid, b + 2 grid, ...
#include <fmt/format.h>

#include <functional>

#include "codegen/gemm_common.h"
#include "codegen/gemm_emitter.h"
#include "codegen/gemm_epilogue.h"
#include "codegen/gemm_tma_operand.h"
#include "codegen/kernel_params.h"
#include "codegen/scalar_emit.h"
#include "ir/error.h"
#include "ir/tile_config.h"

namespace kiln::codegen {

namespace {

constexpr int kWarpgroup = 128;
constexpr int kProducerRegisters = 40;
constexpr int kHandoffProducerRegisters = 56;  // the epilogue warps: the body on 8 values; consumers get 224
constexpr int kEpilogueThreads = kWarpgroup - 32;  // the producer warpgroup's three warps past the loading one
constexpr int kMaxRegisters = 240;  // a consumer's claim: the file has 64 K registers an SM
constexpr int kStripVec = 8;        // columns per epilogue call, read back from a strip or the partials

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

class WgmmaEmitter {
public:
  explicit WgmmaEmitter(const ir::Kernel& k)
      : k_(k), c_(k.config), params_(param_names(k)),
        epilogue_(k, params_, kStripVec), column_epilogue_(k, params_, 1), a_(k, true, c_.bm, c_.bk),
        b_(k, false, c_.bn, c_.bk), b_part_(k, false, c_.bn / std::max(1, c_.cluster), c_.bk) {
    cluster_ = std::max(1, c_.cluster);
    consumers_ = c_.warps_m * c_.warps_n;
    rows_ = c_.bm / c_.warps_m;
    frags_ = rows_ / 64;
    tiles_m_ = ceil_div(k.gemm.m, c_.bm);
    cluster_rows_ = ceil_div(tiles_m_, cluster_);
    tiles_n_ = ceil_div(k.gemm.n, c_.bn);
    k_steps_ = ceil_div(k.gemm.k, c_.bk);
    split_ = std::max(1, c_.split_k);
    slice_steps_ = ceil_div(k_steps_, split_);
    stage_bytes_ = a_.tile_bytes() + b_.tile_bytes();
    fp8_ = ir::gemm_fp8_products(k);
    slice_k_ = fp8_ ? 32 : 16;  // one product reads 32 bytes of each row of K
    if (c_.handoff) handoff_dtype_ = ir::wgmma_handoff_dtype(k).value_or(DType::f16);
  }

  std::string emit() const {
    return header() + scratch() + "#ifndef KILN_TENSOR_MAP\n#define KILN_TENSOR_MAP\n"
           "// A tensor map as the driver encodes it (opaque, 128 bytes, 64-byte aligned).\n"
           "struct __align__(64) kiln_tensor_map { unsigned long long words[16]; };\n#endif\n" +
           strip_epilogue().functions() + product_function() + signature() + setup() +
           producer() + consumer() + "}\n";
  }

private:
  // Outputs whose rows are not 16-byte multiples go element by element. Read back from
  // the strip a row at a time, a warp's 32 threads on 32 consecutive columns, each store
  // covers 64 contiguous bytes, where the 8-column readout's wrote 2 bytes in every 16 of
  // 8 rows (8 times the sectors).
  bool column_readout() const { return split_ <= 1 && !c_.handoff && !epilogue_.vector_stores(); }
  const GemmEpilogue& strip_epilogue() const { return column_readout() ? column_epilogue_ : epilogue_; }

  int64_t total_tiles() const { return tiles_m_ * tiles_n_ * ir::gemm_batch_count(k_.gemm); }
  // A unit of work is one tile's K slice (the whole of K without a split); a cluster's
  // unit is its blocks' tiles, one above the other.
  int64_t total_units() const { return cluster_rows_ * tiles_n_ * ir::gemm_batch_count(k_.gemm) * split_; }
  // The index of this block's (or cluster's) first unit, and the stride between its units.
  std::string first_unit() const { return cluster_ > 1 ? fmt::format("blockIdx.x / {}u", cluster_) : "blockIdx.x"; }
  std::string unit_stride() const { return cluster_ > 1 ? fmt::format("(gridDim.x / {}u)", cluster_) : "gridDim.x"; }
  // Where a thread of the block stops: in a cluster, only once the other block is done
  // with this one's shared memory and barriers.
  std::string leave() const { return cluster_ > 1 ? "{\n      kiln_cluster_leave();\n      return;\n    }" : "return;"; }
  std::string scratch_name(const char* what) const { return fmt::format("kiln_{}_{}", k_.name, what); }

  std::string header() const {
    const LaunchDims d = gemm_wgmma_launch_dims(k_);
    std::string s = gemm_header_title(k_);
    s += fmt::format("// Config {}:\n", c_.str());
    s += fmt::format("//   {} persistent blocks of {} threads (a producer warpgroup, {} consumer warpgroups), {} bytes "
                     "of shared memory ({} stages of {} bytes)\n",
                     d.grid[0], d.block[0], consumers_, d.shared_bytes, c_.stages, stage_bytes_);
    s += fmt::format("//   each consumer: {} x {} of {} as {} wgmma m64n{}k{} products a {}-deep slice of K{}\n",
                     rows_, c_.bn, c_.warps_n > 1 ? "every other tile (ping-pong)" : "each tile", frags_, c_.bn,
                     slice_k_, slice_k_, fp8_ ? " (fp8 products of the stored bytes)" : "");
    s += "//   " + a_.describe() + "\n//   " + b_.describe() + "\n";
    s += fmt::format("//   {} output tiles ({} x {} a matrix) of {} x {}, walked in groups of {} tile rows\n",
                     total_tiles(), tiles_m_, tiles_n_, c_.bm, c_.bn, c_.group);
    if (split_ > 1)
      s += fmt::format("//   K in {} slices of {} steps; each tile's last slice sums the fp32 partials in slice order\n",
                       split_, slice_steps_);
    if (cluster_ > 1)
      s += fmt::format("//   clusters of {} blocks on tiles one above the other: each loads its A tile and {} columns of "
                       "B, multicast to both\n",
                       cluster_, c_.bn / cluster_);
    if (c_.handoff)
      s += fmt::format("//   the consumers hand each tile to the producer warpgroup's other 3 warps as {} in shared "
                       "memory (rows of {} bytes); those run the epilogue\n",
                       dtype_name(handoff_dtype_), ir::wgmma_handoff_row_bytes(c_));
    s += "//   epilogue: " + strip_epilogue().describe() +
         (column_readout() ? ", a warp on 32 consecutive columns of a row" : "") + "\n";
    return s;
  }

  // The PTX type of an operand's elements in shared memory.
  std::string ptx_type(bool operand_a) const {
    if (fp8_) return ir::gemm_fp8_operand(k_, operand_a) == DType::f8e5m2 ? "e5m2" : "e4m3";
    return k_.gemm.operand_dtype == DType::bf16 ? "bf16" : "f16";
  }

  // acc += A B for one m64 x bn x k16 slice (k32 for fp8): A and B from shared memory
  // (descriptors), the accumulators in bn / 2 registers a thread.
  std::string product_function() const {
    const int regs = c_.bn / 2;
    std::vector<std::string> dregs, outs;
    for (int i = 0; i < regs; ++i) {
      dregs.push_back(fmt::format("%{}", i));
      outs.push_back(fmt::format("\"+f\"(acc[{}])", i));
    }
    std::string s = fmt::format(
        "// acc (+)= A B on the Tensor Cores of the warpgroup: a 64 x {} slice of A against a {} x {} slice of B\n"
        "// ({}); `accumulate` 0 starts the sums from zero.\n",
        slice_k_, slice_k_, c_.bn,
        fp8_ ? "both K-major, fp8 has no transpose bits"
             : fmt::format("transpose bits: A {}, B {}", a_.k_contiguous() ? "K-major" : "M-major",
                           b_.k_contiguous() ? "K-major" : "N-major"));
    s += fmt::format("static __device__ __forceinline__ void {}_product(float (&acc)[{}], unsigned long long a, "
                     "unsigned long long b, int accumulate) {{\n",
                     k_.name, regs);
    s += fmt::format("  asm volatile(\"{{ .reg .pred p; setp.ne.b32 p, %{}, 0;\\n\"\n", regs + 2);
    // fp8 products take no transpose immediates (their tiles are K-major).
    const std::string transposes =
        fp8_ ? "" : fmt::format(", {}, {}", a_.k_contiguous() ? 0 : 1, b_.k_contiguous() ? 0 : 1);
    s += fmt::format("               \"wgmma.mma_async.sync.aligned.m64n{}k{}.f32.{}.{} {{{}}}, %{}, %{}, p, 1, 1{};"
                     "\\n}}\"\n",
                     c_.bn, slice_k_, ptx_type(true), ptx_type(false), fmt::join(dregs, ", "), regs, regs + 1,
                     transposes);
    s += fmt::format("               : {}\n", fmt::join(outs, ", "));
    s += "               : \"l\"(a), \"l\"(b), \"r\"(accumulate) : \"memory\");\n}\n";
    return s;
  }

  std::string signature() const {
    std::vector<std::string> params = gemm_pointer_params(k_, params_);
    params.push_back("const __grid_constant__ kiln_tensor_map map_a");
    params.push_back("const __grid_constant__ kiln_tensor_map map_b");
    const std::string cluster = cluster_ > 1 ? fmt::format("__cluster_dims__({}, 1, 1) ", cluster_) : "";
    return fmt::format("extern \"C\" __global__ void {}__launch_bounds__({}, 1) {}({}) {{\n", cluster,
                       ir::gemm_threads(c_), k_.name, fmt::join(params, ", "));
  }

  std::string setup() const {
    std::string s = "  extern __shared__ __align__(1024) unsigned char kiln_smem[];\n";
    s += "  // Stages start 1024-byte aligned (the 128-byte swizzle repeats every 8 rows); the barriers follow them.\n";
    s += "  const unsigned smem = ((unsigned)__cvta_generic_to_shared(kiln_smem) + 1023u) & ~1023u;\n";
    s += fmt::format("  const unsigned full = smem + {}u, empty = full + {}u;  // one 8-byte mbarrier a stage each\n",
                     c_.stages * stage_bytes_, 8 * c_.stages);
    if (c_.handoff) {
      s += fmt::format("  // The hand-off's two mbarriers, then its tile of {} rows of {} bytes.\n", c_.bm,
                       ir::wgmma_handoff_row_bytes(c_));
      s += fmt::format("  const unsigned staged = empty + {}u, drained = staged + 8u;\n", 8 * c_.stages);
      s += "  unsigned char* const handoff = kiln_smem + (drained + 8u - (unsigned)__cvta_generic_to_shared(kiln_smem));\n";
    }
    s += "  if (threadIdx.x == 0) {\n";
    s += fmt::format("    for (int s = 0; s < {}; ++s) {{\n", c_.stages);
    s += "      kiln_mbarrier_init(full + 8u * s, 1u);  // the producer's arrival, then the bytes\n";
    s += fmt::format("      kiln_mbarrier_init(empty + 8u * s, {}u);  // one arrival per warp of the consumers of a tile{}\n",
                     4 * c_.warps_m * cluster_, cluster_ > 1 ? " in each block" : "");
    s += "    }\n";
    if (c_.handoff) {
      s += fmt::format("    kiln_mbarrier_init(staged, {}u);  // one arrival per consumer warp: the tile is written\n",
                       4 * c_.warps_m);
      s += fmt::format("    kiln_mbarrier_init(drained, {}u);  // one per epilogue warp: the tile is read\n",
                       kEpilogueThreads / 32);
    }
    s += "    kiln_mbarrier_init_fence();\n  }\n";
    if (cluster_ > 1) {
      s += "  kiln_cluster_sync();  // the other block's barriers are ready before anything lands in them\n";
      s += "  const unsigned rank = kiln_cluster_rank();  // which tile of the cluster's pair, which half of B\n";
    } else {
      s += "  __syncthreads();\n";
    }
    s += "  const int warpgroup = (int)threadIdx.x / " + std::to_string(kWarpgroup) + ";\n";
    return s;
  }

  // The coordinates of work unit `unit`: its tile (batch, m0, n0), its K slice and the
  // slice's K steps [first_step, first_step + steps).
  std::string tile_coordinates(const std::string& in) const {
    const int64_t per_matrix = cluster_rows_ * tiles_n_, group_tiles = int64_t{c_.group} * tiles_n_;
    std::string s;
    if (split_ > 1) {
      s += fmt::format("{}const long long tile = unit / {};\n", in, split_);
      s += fmt::format("{}const int slice = (int)(unit % {});\n", in, split_);
      s += fmt::format("{}const int first_step = slice * {};\n", in, slice_steps_);
      s += fmt::format("{}const int steps = min({}, {} - first_step);\n", in, slice_steps_, k_steps_);
    } else {
      s += in + "const long long tile = unit;\n";
      s += fmt::format("{}[[maybe_unused]] constexpr int first_step = 0, steps = {};\n", in, k_steps_);
    }
    s += fmt::format("{}const unsigned batch = (unsigned)(tile / {});\n", in, per_matrix);
    s += fmt::format("{}const int t = (int)(tile % {});\n", in, per_matrix);
    s += fmt::format("{}const int group_first = t / {} * {};\n", in, group_tiles, c_.group);
    s += fmt::format("{}const int group_rows = min({} - group_first, {});\n", in, cluster_rows_, c_.group);
    if (cluster_ > 1)
      s += fmt::format("{}const int m0 = (group_first + t % {} % group_rows) * {} + (int)rank * {};\n", in, group_tiles,
                       c_.bm * cluster_, c_.bm);
    else
      s += fmt::format("{}const int m0 = (group_first + t % {} % group_rows) * {};\n", in, group_tiles, c_.bm);
    s += fmt::format("{}const int n0 = (t % {} / group_rows) * {};\n", in, group_tiles, c_.bn);
    return s;
  }

  std::string tile_loop(const std::string& in) const {
    return fmt::format("{}for (long long unit = {}; unit < {}ll; unit += {}) {{\n", in, first_unit(), total_units(),
                       unit_stride());
  }

  std::string producer() const {
    std::string s = "  if (warpgroup == 0) {  // the producer\n";
    s += fmt::format("    kiln_registers_release<{}>();\n", producer_registers());
    // In a cluster the whole first warp walks the stages (its first thread issues the
    // loads), so that no thread of it waits at the cluster barrier while another works.
    if (c_.handoff) s += handoff_epilogue() + "    if (threadIdx.x != 0) return;\n";
    else if (cluster_ > 1) s += "    if (threadIdx.x >= 32) " + leave() + "\n";
    else s += "    if (threadIdx.x != 0) return;\n";
    s += "    int stage = 0;\n    unsigned phase = 0;\n";
    s += tile_loop("    ");
    s += tile_coordinates("      ");
    s += "      (void)batch;\n";
    s += "      for (int step = first_step; step < first_step + steps; ++step) {\n";
    const std::string in = "        ";
    s += in + "kiln_mbarrier_wait(empty + 8u * stage, phase ^ 1u);  // the consumers are done with it\n";
    s += in + "const unsigned at = smem + stage * " + std::to_string(stage_bytes_) + "u, bar = full + 8u * stage;\n";
    if (cluster_ > 1) s += in + "if (threadIdx.x == 0) {\n" + stage_loads(in + "  ") + in + "}\n" + in + "__syncwarp();\n";
    else s += stage_loads(in);
    s += fmt::format("{}if (++stage == {}) {{\n{}  stage = 0;\n{}  phase ^= 1u;\n{}}}\n", in, c_.stages, in, in, in);
    s += "      }\n    }\n    " + leave() + "\n  }\n";
    return s;
  }

  // The loads of one K step into stage `at`, completing on `bar`: the A tile, and B (in a
  // cluster, this block's half of its columns, multicast to every block).
  std::string stage_loads(const std::string& in) const {
    std::string s = in + fmt::format("kiln_mbarrier_expect_bytes(bar, {}u);\n", stage_bytes_);
    s += in + "const int k0 = step * " + std::to_string(c_.bk) + ";\n";
    s += a_.issue(in, "map_a", "at", "m0", "k0", "bar");
    const std::string b_at = fmt::format("at + {}u", a_.tile_bytes());
    if (cluster_ == 1) return s + b_part_.issue(in, "map_b", b_at, "n0", "k0", "bar");
    return s + b_part_.issue(in, "map_b", fmt::format("{} + rank * {}u", b_at, b_part_.tile_bytes()),
                             fmt::format("n0 + (int)rank * {}", c_.bn / cluster_), "k0", "bar",
                             fmt::format("(unsigned short){}", (1 << cluster_) - 1));
  }

  int producer_registers() const { return c_.handoff ? kHandoffProducerRegisters : kProducerRegisters; }

  // A thread's registers at launch (ptxas gives each the 64 K file over the block's
  // threads, in 8s, at most 255), plus the consumers' share of what the producer warpgroup
  // gives back. setmaxnreg.inc waits until the block's pool holds the claim, so a claim
  // past it (the file's 64 K rather than the 168 x 384 the block holds) hangs the block.
  int consumer_registers() const {
    const int launch = std::min(255, 65536 / (kWarpgroup * (consumers_ + 1))) / 8 * 8;
    const int claim = launch + (launch - producer_registers()) / consumers_;
    return std::min(kMaxRegisters, claim / 8 * 8);
  }

  std::string consumer() const {
    const int regs = c_.bn / 2;
    std::string s = fmt::format("  // A consumer: rows [part * {}, +{}) of {}.\n", rows_, rows_,
                                c_.warps_n > 1 ? "every other tile of the block (the consumers take turns: one's "
                                                 "epilogue runs while the other multiplies)"
                                               : "each tile of the block");
    s += fmt::format("  kiln_registers_claim<{}>();\n", consumer_registers());
    s += fmt::format("  const int consumer = warpgroup - 1, part = consumer % {}, turn = consumer / {};\n", c_.warps_m,
                     c_.warps_m);
    s += "  (void)part;\n  (void)turn;\n";
    s += "  const int warp = (int)threadIdx.x / 32 % 4, lane = (int)threadIdx.x % 32;\n";
    s += fmt::format("  float acc[{}][{}];\n", frags_, regs);
    if (c_.handoff) s += "  unsigned handed = 0;  // tiles handed to the epilogue warps so far\n";
    if (split_ <= 1 && !c_.handoff) {
      s += "  // This warp's epilogue strip, past the stages and their barriers.\n";
      s += fmt::format("  float* const strip = reinterpret_cast<float*>(kiln_smem + (empty + {}u - "
                       "(unsigned)__cvta_generic_to_shared(kiln_smem))) + (consumer * 4 + warp) * {};\n",
                       8 * c_.stages, 16 * ir::kWgmmaStripStride);
    }
    if (c_.warps_n == 1) s += "  unsigned long long step_of_block = 0;  // K steps of the block's units so far\n";
    s += fmt::format("  for (long long unit = {} + turn * {}; unit < {}ll; unit += {} * {}) {{\n", first_unit(),
                     unit_stride(), total_units(), c_.warps_n, unit_stride());
    s += tile_coordinates("    ");
    if (c_.warps_n > 1) {  // the units before this one, every one K steps long (no split)
      s += fmt::format("    // The block's tiles pass through the stages in order, {} K steps each.\n", k_steps_);
      s += fmt::format("    unsigned long long step_of_block = (unsigned long long)((unit - blockIdx.x) / gridDim.x) * "
                       "{}ull;\n",
                       k_steps_);
    }
    if (c_.warps_n > 1) {
      // Turns: a consumer starts a tile's products only once the other has issued all of
      // its own, so that it never waits on a stage two uses ahead (an mbarrier's parity
      // tells one phase from the next, not from the one after).
      s += "    if (unit != blockIdx.x) kiln_named_barrier_sync(2 + turn, 256);\n";
    }
    s += "    int previous = -1;  // the stage whose products may still run\n";
    s += "    for (int step = 0; step < steps; ++step, ++step_of_block) {\n";
    const std::string in = "      ";
    s += fmt::format("{}const int stage = (int)(step_of_block % {}u);\n", in, c_.stages);
    s += fmt::format("{}const unsigned phase = (unsigned)(step_of_block / {}u) & 1u;\n", in, c_.stages);
    s += in + "kiln_mbarrier_wait(full + 8u * stage, phase);  // its tiles have landed\n";
    s += in + "const unsigned at = smem + stage * " + std::to_string(stage_bytes_) + "u;\n";
    s += in + "kiln_wgmma_fence();\n";
    s += fmt::format("#pragma unroll\n{}for (int kk = 0; kk < {}; ++kk) {{\n", in, c_.bk / slice_k_);
    s += fmt::format("{}  const unsigned long long b = {};\n", in,
                     b_.descriptor("at + " + std::to_string(a_.tile_bytes()) + "u", 0, "kk"));
    // A part's rows start part * rows tile rows in (K-major: rows of 128 bytes; MN-major:
    // boxes of 64 rows, bk rows of 128 bytes each: the same bytes a row).
    const std::string a_tile = fmt::format("at + (unsigned)part * {}u", rows_ * 128);
    for (int f = 0; f < frags_; ++f)
      s += fmt::format("{}  {}_product(acc[{}], {}, b, step > 0 || kk > 0);\n", in, k_.name, f,
                       a_.descriptor(a_tile, f * 64, "kk"));
    s += in + "}\n";
    s += in + "kiln_wgmma_commit();\n";
    s += in + "kiln_wgmma_wait<1>();  // the step before has finished: its stage is free\n";
    s += in + "if (previous >= 0 && lane == 0) " + release_stage("previous") + "\n";
    s += in + "previous = stage;\n";
    s += "    }\n";
    if (c_.warps_n > 1) s += "    kiln_named_barrier_arrive(3 - turn, 256);  // the other consumer's turn\n";
    s += "    kiln_wgmma_wait<0>();\n";
    s += "    if (lane == 0) " + release_stage("previous") + "\n";
    s += split_ > 1 ? split_epilogue() : c_.handoff ? hand_off() : epilogue();
    s += "  }\n";
    if (cluster_ > 1) s += "  kiln_cluster_leave();\n";
    return s;
  }

  // A consumer warp's arrival on a stage's `empty` barrier (of every block of the cluster).
  std::string release_stage(const std::string& stage) const {
    if (cluster_ > 1) return fmt::format("kiln_mbarrier_arrive_cluster<{}>(empty + 8u * {});", cluster_, stage);
    return fmt::format("kiln_mbarrier_arrive(empty + 8u * {});", stage);
  }

  // A thread's accumulators with their positions: `visit(row, col, first)` for each
  // pair acc[f][first], acc[f][first + 1] at (row, col), col + 1.
  std::string accumulator_loop(const std::function<std::string(const std::string&, const std::string&,
                                                               const std::string&)>& visit) const {
    std::string s = fmt::format("#pragma unroll\n    for (int f = 0; f < {}; ++f) {{\n", frags_);
    s += fmt::format("      const int row = m0 + part * {} + f * 64 + warp * 16 + lane / 4;\n", rows_);
    s += fmt::format("#pragma unroll\n      for (int j = 0; j < {}; ++j) {{\n", c_.bn / 8);
    s += "        const int col = n0 + j * 8 + (lane % 4) * 2;\n";
    s += visit("row", "col", "4 * j") + visit("row + 8", "col", "4 * j + 2");
    return s + "      }\n    }\n";
  }

  // The consumers' side of the hand-off: once the epilogue warps have read the last tile,
  // each thread writes its products as 16-bit pairs (a warp's 8 rows of a pair of columns
  // fall in distinct banks: rows are padded by 16 bytes), and each warp arrives once.
  std::string hand_off() const {
    const int64_t row_bytes = ir::wgmma_handoff_row_bytes(c_);
    const bool bf16 = handoff_dtype_ == DType::bf16;
    std::string s = "    (void)batch;  // the epilogue warps store the tile\n";
    s += "    // Hand the tile to the epilogue warps, rounded to the product's dtype (the one\n";
    s += "    // rounding the hand-off adds: the other epilogues read the fp32 sums).\n";
    s += "    if (handed > 0) kiln_mbarrier_wait(drained, (handed - 1u) & 1u);  // they have read the last one\n";
    auto bits = [&](const std::string& value) {
      return bf16 ? "(unsigned)__bfloat16_as_ushort(__float2bfloat16_rn(" + value + "))"
                  : "(unsigned)__half_as_ushort(__float2half_rn(" + value + "))";
    };
    s += accumulator_loop([&](const std::string& row, const std::string& col, const std::string& first) {
      return fmt::format("        *reinterpret_cast<unsigned*>(handoff + ({} - m0) * {} + ({} - n0) * 2) = {} | ({} << 16);\n",
                         row, row_bytes, col, bits("acc[f][" + first + "]"), bits("acc[f][" + first + " + 1]"));
    });
    s += "    __syncwarp();\n";
    s += "    if (lane == 0) kiln_mbarrier_arrive(staged);\n";
    s += "    ++handed;\n";
    return s;
  }

  // The epilogue warps (threads 32.. of the producer warpgroup): for each of the block's
  // tiles, wait for it, read it by 8 consecutive columns a thread (a warp reads whole rows),
  // run the epilogue on them, and give the tile back.
  std::string handoff_epilogue() const {
    const int64_t row_bytes = ir::wgmma_handoff_row_bytes(c_);
    const int per_row = c_.bn / kStripVec, vectors = c_.bm * per_row;
    const bool bf16 = handoff_dtype_ == DType::bf16;
    std::string s = "    if (threadIdx.x >= 32) {  // the epilogue warps\n";
    s += "      const int lane = (int)threadIdx.x % 32;\n";
    s += "      unsigned handed = 0;\n";
    s += tile_loop("      ");
    s += tile_coordinates("        ");
    s += "        kiln_mbarrier_wait(staged, handed & 1u);  // the consumers have written it\n";
    s += fmt::format("#pragma unroll 4\n        for (int v = (int)threadIdx.x - 32; v < {}; v += {}) {{\n", vectors,
                     kEpilogueThreads);
    s += fmt::format("          const int r = v / {}, q = v % {};\n", per_row, per_row);
    s += fmt::format("          const uint4 w = *reinterpret_cast<const uint4*>(handoff + r * {} + q * 16);\n",
                     row_bytes);
    s += "          float values[8];\n";
    s += "          const unsigned words[4] = {w.x, w.y, w.z, w.w};\n";
    s += "#pragma unroll\n          for (int i = 0; i < 4; ++i) {\n";
    if (bf16) {
      s += "            values[2 * i] = __uint_as_float(words[i] << 16);\n";
      s += "            values[2 * i + 1] = __uint_as_float(words[i] & 0xffff0000u);\n";
    } else {
      s += "            values[2 * i] = __half2float(__ushort_as_half((unsigned short)(words[i] & 0xffffu)));\n";
      s += "            values[2 * i + 1] = __half2float(__ushort_as_half((unsigned short)(words[i] >> 16)));\n";
    }
    s += "          }\n";
    s += "          " + epilogue_.call("m0 + r", fmt::format("n0 + q * {}", kStripVec), "values");
    s += "        }\n";
    s += "        __syncwarp();\n";
    s += "        if (lane == 0) kiln_mbarrier_arrive(drained);  // this warp has read the tile\n";
    s += "        ++handed;\n";
    s += "      }\n      return;\n    }\n";
    return s;
  }

  // Split K: each unit stores its fp32 partial sums, then takes its tile's ticket; the
  // tile's last unit adds every slice's partials in slice order (the same bits every
  // run) and runs the epilogue on them.
  std::string split_epilogue() const {
    const int64_t matrix = k_.gemm.m * padded_n(), slice = ir::gemm_batch_count(k_.gemm) * matrix;
    const int tile_threads = kWarpgroup * c_.warps_m;
    std::string s = "    // This slice's partial sums, then the tile's ticket.\n";
    s += fmt::format("    float* partials = {} + (long long)slice * {}ll + (long long)batch * {}ll;\n",
                     scratch_name("partials"), slice, matrix);
    s += accumulator_loop([&](const std::string& row, const std::string& col, const std::string& first) {
      return fmt::format("        if ({} < {} && {} < {}) *reinterpret_cast<float2*>(partials + (long long)({}) * {} + {}) "
                         "= make_float2(acc[f][{}], acc[f][{} + 1]);\n",
                         row, k_.gemm.m, col, padded_n(), row, padded_n(), col, first, first);
    });
    s += fmt::format("    kiln_named_barrier(1, {});  // the partials are written before the ticket is taken\n",
                     tile_threads);
    s += "    __shared__ int last_slice;\n";
    s += fmt::format("    if (threadIdx.x == {}) {{\n", kWarpgroup);
    s += fmt::format("      last_slice = kiln_take_ticket(&{}[tile]) == {}u;\n", scratch_name("tickets"), split_ - 1);
    s += fmt::format("      if (last_slice) {}[tile] = 0;  // the next launch starts from zero\n", scratch_name("tickets"));
    s += "    }\n";
    s += fmt::format("    kiln_named_barrier(1, {});\n", tile_threads);
    s += "    if (last_slice) {\n";
    s += fmt::format("      const float* slices = {} + (long long)batch * {}ll;\n", scratch_name("partials"), matrix);
    // The sums go by 8 consecutive columns a thread, so that a warp reads whole rows of
    // the tile and every slice's loads of a vector issue together (the accumulators'
    // layout, pairs of columns 8 rows apart, left each load waiting alone).
    const int per_row = c_.bn / kStripVec, vectors = c_.bm * per_row;
    s += "      // The tile's vectors of 8 columns, summed over the slices in slice order.\n";
    s += fmt::format("#pragma unroll 2\n      for (int v = (int)threadIdx.x - {}; v < {}; v += {}) {{\n", kWarpgroup, vectors,
                     tile_threads);
    s += fmt::format("        const int row = m0 + v / {}, col = n0 + v % {} * {};\n", per_row, per_row, kStripVec);
    s += "        float sum[8] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};\n";
    s += fmt::format("        if (row < {} && col < {}) {{\n", k_.gemm.m, padded_n());
    s += fmt::format("#pragma unroll\n          for (int z = 0; z < {}; ++z) {{\n", split_);
    s += fmt::format("            const float4* at = reinterpret_cast<const float4*>(slices + (long long)z * {}ll + "
                     "(long long)row * {} + col);\n",
                     slice, padded_n());
    s += "            const float4 lo = __ldcg(at), hi = __ldcg(at + 1);\n";
    s += "            sum[0] += lo.x;\n            sum[1] += lo.y;\n            sum[2] += lo.z;\n            sum[3] += lo.w;\n";
    s += "            sum[4] += hi.x;\n            sum[5] += hi.y;\n            sum[6] += hi.z;\n            sum[7] += hi.w;\n";
    s += "          }\n        }\n";
    s += "        " + epilogue_.call("row", "col", "sum");
    s += "      }\n";
    s += "    }\n";
    s += fmt::format("    kiln_named_barrier(1, {});  // last_slice is read before the next unit writes it\n",
                     tile_threads);
    return s;
  }

  // Partial rows are padded to whole vectors of the read-back (16-byte aligned rows).
  int64_t padded_n() const { return ceil_div(k_.gemm.n, kStripVec) * kStripVec; }

  // Module-scope partials ([slice][batch][M][N rounded up to 8], read back as 16-byte
  // vectors) and one ticket per tile, zero at load; the last unit of a tile resets its
  // ticket.
  std::string scratch() const {
    if (split_ <= 1) return "";
    return fmt::format("__device__ __align__(16) float {}[{}];\n__device__ int {}[{}];\n", scratch_name("partials"),
                       split_ * ir::gemm_batch_count(k_.gemm) * k_.gemm.m * padded_n(), scratch_name("tickets"),
                       total_tiles());
  }

  // Thread l of warp w holds, for each 8-column group j of an m64 product, rows
  // 16 w + l / 4 and that + 8, columns 8 j + 2 (l % 4) and the next. Stored as they
  // are, a warp's store covers 8 rows of 16 bytes, and the stores' queue stalled the
  // consumers (Nsight Compute: 13% of their time in the epilogue, behind its stores).
  // So each warp writes 32 columns of its 16 rows into a strip of shared memory and
  // reads them back as 8 consecutive columns a thread: one call of the epilogue on 16
  // bytes of output, and a warp's store covers 8 rows of 64 bytes.
  //   Strip rows are kWgmmaStripStride floats (8 of padding): the pairs written by a
  //   half-warp fall in distinct banks; odd rows read their upper 4 columns first, so
  //   that the two rows one load phase (8 threads) reads also do.
  std::string epilogue() const {
    const int stride = ir::kWgmmaStripStride, strips = c_.bn / ir::kWgmmaStripColumns;
    const int groups = ir::kWgmmaStripColumns / kStripVec;  // 8-column groups of a strip
    const std::vector<int> ahead = column_readout() ? std::vector<int>{} : epilogue_.preloadable();
    // A thread reads back the same 8 columns of a strip in both its row passes: inputs
    // constant along M (a bias) load once a strip, one strip ahead, so that their latency
    // hides behind the strip before instead of standing before the math.
    auto column = [&](const std::string& c) {
      return fmt::format("n0 + ({}) * {} + lane % {} * {}", c, ir::kWgmmaStripColumns, groups, kStripVec);
    };
    std::string s = "    // The epilogue, through this warp's strip of shared memory.\n";
    s += fmt::format("#pragma unroll\n    for (int f = 0; f < {}; ++f) {{\n", frags_);
    for (int a : ahead)
      s += fmt::format("      {} next{} = {};  // strip 0's\n", epilogue_.preloaded_type(a), a, epilogue_.preload(a, column("0")));
    s += fmt::format("#pragma unroll\n      for (int c = 0; c < {}; ++c) {{\n", strips);
    for (int a : ahead) {
      s += fmt::format("        const {} ahead{} = next{};\n", epilogue_.preloaded_type(a), a, a);
      s += fmt::format("        if (c + 1 < {}) next{} = {};\n", strips, a, epilogue_.preload(a, column("c + 1")));
    }
    s += fmt::format("#pragma unroll\n        for (int g = 0; g < {}; ++g) {{\n", groups);
    s += fmt::format("          const int first = 4 * (c * {} + g);  // this group's accumulators\n", groups);
    s += fmt::format("          float* at = strip + (lane / 4) * {} + g * 8 + (lane % 4) * 2;\n", stride);
    s += "          *reinterpret_cast<float2*>(at) = make_float2(acc[f][first], acc[f][first + 1]);\n";
    s += fmt::format("          *reinterpret_cast<float2*>(at + {}) = make_float2(acc[f][first + 2], acc[f][first + 3]);\n",
                     8 * stride);
    s += "        }\n        __syncwarp();\n";
    if (column_readout()) {
      s += "#pragma unroll\n        for (int r = 0; r < 16; ++r) {\n";
      s += fmt::format("          const float values[1] = {{strip[r * {} + lane]}};\n", stride);
      s += "          " + column_epilogue_.call(fmt::format("m0 + part * {} + f * 64 + warp * 16 + r", rows_),
                                                fmt::format("n0 + c * {} + lane", ir::kWgmmaStripColumns), "values");
      s += "        }\n        __syncwarp();\n      }\n    }\n";
      return s;
    }
    s += fmt::format("#pragma unroll\n        for (int h = 0; h < {}; ++h) {{\n", 16 * groups / 32);
    s += fmt::format("          const int r = h * {} + lane / {}, q = lane % {};  // strip row, 8-column group\n",
                     32 / groups, groups, groups);
    s += fmt::format("          const float* from = strip + r * {} + q * {};\n", stride, kStripVec);
    s += "          const int swap = (r & 1) * 4;\n";
    s += "          const float4 first = *reinterpret_cast<const float4*>(from + swap);\n";
    s += "          const float4 second = *reinterpret_cast<const float4*>(from + 4 - swap);\n";
    s += "          const float4 lo = swap ? second : first, hi = swap ? first : second;\n";
    s += "          const float values[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};\n";
    const std::string m = fmt::format("m0 + part * {} + f * 64 + warp * 16 + r", rows_);
    const std::string n = fmt::format("n0 + c * {} + q * {}", ir::kWgmmaStripColumns, kStripVec);
    s += "          " + (ahead.empty() ? epilogue_.call(m, n, "values") : epilogue_.call_preloaded(m, n, "values", "ahead"));
    s += "        }\n        __syncwarp();\n      }\n    }\n";
    return s;
  }

  const ir::Kernel& k_;
  const ir::TileConfig& c_;
  std::vector<std::string> params_;
  GemmEpilogue epilogue_;
  GemmEpilogue column_epilogue_;  // one column a call: the strip's readout where outputs go element by element
  TmaOperand a_, b_;
  TmaOperand b_part_;  // the columns of B one block of a cluster loads (all of them without one)
  int consumers_ = 1, rows_ = 64, frags_ = 1, cluster_ = 1;
  int64_t tiles_m_ = 0, cluster_rows_ = 0, tiles_n_ = 0, k_steps_ = 0, split_ = 1, slice_steps_ = 0;
  int stage_bytes_ = 0;
  bool fp8_ = false;  // fp8 products (ir::gemm_fp8_products)
  int slice_k_ = 16;  // K of one wgmma product
  DType handoff_dtype_ = DType::f16;  // the hand-off tile's dtype
};

}  // namespace

LaunchDims gemm_wgmma_launch_dims(const ir::Kernel& k) {
  const ir::TileConfig& c = k.config;
  LaunchDims d;
  const int cluster = std::max(1, c.cluster);
  const int64_t units = ceil_div(ceil_div(k.gemm.m, c.bm), cluster) * ceil_div(k.gemm.n, c.bn) *
                        ir::gemm_batch_count(k.gemm) * std::max(1, c.split_k);
  // A block an SM (a whole number of clusters), each walking units.
  d.grid[0] = static_cast<unsigned>(std::min<int64_t>(units, ir::kTargetSMs / cluster) * cluster);
  d.block[0] = static_cast<unsigned>(ir::gemm_threads(c));
  d.shared_bytes = static_cast<unsigned>(ir::gemm_shared_bytes(k, c));
  for (const TmaOperand& op : {TmaOperand(k, true, c.bm, c.bk), TmaOperand(k, false, c.bn / cluster, c.bk)}) {
    TensorMapSpec spec = op.spec();
    if (op.staged()) {
      spec.staged = static_cast<int>(d.staged.size());
      d.staged.push_back(op.staging());
    }
    d.tensor_maps.push_back(spec);
  }
  return d;
}

std::string emit_gemm_wgmma(const ir::Kernel& k) { return WgmmaEmitter(k).emit(); }

}  // namespace kiln::codegen
