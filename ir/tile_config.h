// TileConfig: how a kernel's work is cut into threads and blocks, one struct for
// every kernel kind with named fields, plus each kind's rules: the legal search
// space (candidates), the check of one config (validate) and the default picked
// from the shapes (heuristic). The `tile` pass assigns configs; the autotuner sweeps
// candidates() and codegen reads the chosen one.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/attrs.h"
#include "ir/dtype.h"

namespace kiln::ir {

struct Kernel;

struct TileConfig {
  // Pointwise: each block of `threads` threads covers threads * elems elements of the
  // iteration space; a thread handles `elems` elements as elems / vec vectors of `vec`
  // consecutive elements (16-byte loads and stores when vec * element bytes == 16).
  int threads = 0;  // threads per block
  int elems = 0;    // elements per thread
  int vec = 0;      // vector width in elements

  // Row reduction: a block holds `rows` rows, each reduced by `row_threads` threads
  // (a part of a warp, a warp, or the whole block when rows == 1). Loads move `vec`
  // consecutive elements. With stream == 0 a thread keeps its `elems` elements of the
  // row in registers (row_threads * elems >= N) and every phase reuses them; with
  // stream == 1 each phase re-reads the row from memory (L2), one vector at a time.
  int row_threads = 0;
  int rows = 0;
  int stream = 0;
  // Rows in registers may keep `shared_elems` more elements per thread in shared memory,
  // loaded once with the registers and read again in each phase: a block then holds a
  // longer row (rows of 65536 fp16 in 512 threads) with two blocks an SM.
  int shared_elems = 0;
  // Rows too long for one block's registers: a thread-block cluster of `cluster` blocks
  // (sm_90) shares a row, each block a slice of row_threads threads; the blocks combine
  // their partial reductions through distributed shared memory. 0 or 1: no cluster.
  int cluster = 0;

  // Column reduction over [K, N] (K reduced, N kept): a block covers `cols` columns
  // with cols / vec column threads, each moving `vec` consecutive columns, times
  // `k_threads` threads along K; the grid's y dim cuts K into `k_split` slices whose
  // fp32 partials the last block of a column tile combines in a fixed order. With one
  // column (a full reduction) cols is 1 and `vec` runs along K instead.
  int cols = 0;
  int k_threads = 0;
  int k_split = 0;

  // GEMM: `schedule` says how the products run (GemmSchedule). A block computes a
  // bm x bn tile of one output matrix, stepping through K bk elements at a time with
  // `stages` tiles of A and B in flight in shared memory; its warps_m x warps_n warps
  // each own a (bm / warps_m) x (bn / warps_n) part of the tile. Blocks walk the tiles
  // in groups of `group` tile rows, so that the tiles running at once share their A
  // and B tiles in L2. split_k > 1 cuts K into that many slices, one block each; the
  // last block of a tile sums the slices' fp32 partials in a fixed order.
  int schedule = 0;
  int bm = 0;
  int bn = 0;
  int bk = 0;
  int warps_m = 0;
  int warps_n = 0;
  int stages = 0;
  int group = 0;
  int split_k = 0;
  // wgmma: 1 hands each tile's products, rounded to their 16-bit dtype, to the producer
  // warpgroup's other three warps through shared memory; they run the epilogue while the
  // consumers multiply the next tile (the Tensor Cores would idle through it otherwise).
  int handoff = 0;

  // Attention (`schedule` and `stages` as for GEMM): a block owns `br` query rows of one
  // batch entry, `warps` warps of br / warps rows each, and streams the keys and values
  // `bc` rows at a time through `stages` shared-memory tiles.
  int br = 0;
  int bc = 0;
  int warps = 0;

  // The kinds to come add their fields here, next to the ones above.

  bool operator==(const TileConfig&) const = default;
  // "{threads = 256, elems = 8, vec = 8}": the fields that are set, in this order.
  std::string str() const;
  // As named integer attributes (ir::Group::tile keeps a group's config this way).
  Attrs to_attrs() const;
  // The inverse of to_attrs(); throws kiln::Error on an unknown or non-integer field.
  static TileConfig from_attrs(const Attrs& attrs);
};

// How a gemm kernel's products run: Tensor Cores through mma.sync (f16, bf16, and f32
// as TF32), fp32 FFMA on CUDA cores (exact f32), or Hopper's warpgroup products
// (wgmma, sm_90a) on tiles that the copy engine (TMA) loads, or, for products of a few
// rows against a weight (decoding), mma.sync fed straight from registers (gemv), or, for
// up to 128 rows against a dequantised weight, wgmma with the weight dequantised in
// registers as its A operand (dequant_wgmma, sm_90a), or the same on mma.sync with each
// warp's own weight rows (dequant_mma, sm_80 and up). Printed by name.
enum GemmSchedule : int {
  kNoSchedule = 0,
  kMmaSync = 1,
  kSimt = 2,
  kWgmma = 3,
  kGemv = 4,
  kDequantWgmma = 5,
  kDequantMma = 6
};
// "mma_sync", "simt", "wgmma", "gemv", "dequant_wgmma", "dequant_mma"
std::string_view gemm_schedule_name(int schedule);

// The attention kind's rules (ir/tile_config_attention.cpp).
void validate_attention(const Kernel& k, const TileConfig& config);
std::vector<TileConfig> attention_candidates(const Kernel& k);
TileConfig attention_heuristic(const Kernel& k);
// The mma_sync schedule's pick, the heuristic's everywhere but prompts on sm_90a.
TileConfig attention_mma_sync_heuristic(const Kernel& k);
// Why no attention config fits the kernel (an unsupported head dim or layout); empty
// when one does. The fuse pass keeps the graph's other kernels where this is not empty.
std::string attention_unsupported(const Kernel& k);
int attention_threads(const TileConfig& config);
// The 16-row tiles of queries each warp of an mma_sync attention config owns: br / (16 warps),
// 1 or 2.
int attention_warp_row_tiles(const TileConfig& config);
// Decoding's split of the keys over blocks: the splits (1 without), the keys each
// covers (a multiple of bc), and the fp32 partials they write (0 without).
int attention_kv_splits(const TileConfig& config);
int64_t attention_kv_chunk(const Kernel& k, const TileConfig& config);
int64_t attention_workspace_floats(const Kernel& k, const TileConfig& config);
// Dynamic shared memory: the query tile and `stages` key and value tiles.
int64_t attention_shared_bytes(const Kernel& k, const TileConfig& config);

// The H200's streaming multiprocessors: what "fill the GPU several times" counts.
inline constexpr int kTargetSMs = 132;

// The longest row (in bytes of its widest input) a row_reduce block holds in its own
// registers; longer rows go to shared memory, a cluster or a stream.
inline constexpr int64_t kBlockSliceBytes = 65536;

// The GPU generation that configs are chosen for, as 10 * major + minor (90 for sm_90a):
// thread-block clusters need 90 or more. Kiln's tile rules read it through target_sm();
// it is 90 (the H200) unless a TargetScope on the calling thread says otherwise.
int target_sm();
// The opt-in dynamic shared memory of one block on the target GPU: 227 KB on sm_90, 163 KB
// on sm_80, 99 KB on sm_86 and sm_89.
int64_t max_block_shared_bytes();
// Whether the target names its generation's own features ("sm_90a": wgmma, setmaxnreg),
// which code for plain "sm_90" may not use. True unless a TargetScope says otherwise.
bool target_arch_specific();
// The target as an arch name: "sm_90a", "sm_90", "sm_80".
std::string target_arch();
// "sm_80" -> 80, "sm_90a" -> 90, "compute_90" -> 90; 0 when `arch` names no generation.
int sm_of_arch(const std::string& arch);
class TargetScope {
public:
  explicit TargetScope(const std::string& arch);  // an empty or unknown arch keeps the current target
  ~TargetScope();
  TargetScope(const TargetScope&) = delete;
  TargetScope& operator=(const TargetScope&) = delete;

private:
  int previous_;
  bool previous_specific_;
};

// The legal configs of `k` (the autotuner's search space), in a stable order.
std::vector<TileConfig> candidates(const Kernel& k);
// Throws kiln::Error naming the kernel, the config and the rule it breaks.
void validate(const Kernel& k, const TileConfig& config);
// A good default from the kernel's shapes and dtypes; always valid.
TileConfig heuristic(const Kernel& k);

// Each kind's rules, one file a kind (ir/tile_config_<kind>.cpp); the three above dispatch to them.

// The pointwise kind's rules (ir/tile_config_pointwise.cpp).
void validate_pointwise(const Kernel& k, const TileConfig& config);
std::vector<TileConfig> pointwise_candidates(const Kernel& k);
TileConfig pointwise_heuristic(const Kernel& k);

// The row-reduce kind's rules (ir/tile_config_row_reduce.cpp).
void validate_row_reduce(const Kernel& k, const TileConfig& config);
std::vector<TileConfig> row_reduce_candidates(const Kernel& k);
TileConfig row_reduce_heuristic(const Kernel& k);
// The dynamic shared memory of a row config: the part of the row kept there (one slice
// of the row's register-held inputs per thread).
int64_t row_shared_bytes(const Kernel& k, const TileConfig& config);

// The col-reduce kind's rules (ir/tile_config_col_reduce.cpp).
void validate_col_reduce(const Kernel& k, const TileConfig& config);
std::vector<TileConfig> col_reduce_candidates(const Kernel& k);
TileConfig col_reduce_heuristic(const Kernel& k);

// The gemm kind's rules (ir/tile_config_gemm.cpp).
void validate_gemm(const Kernel& k, const TileConfig& config);
std::vector<TileConfig> gemm_candidates(const Kernel& k);
TileConfig gemm_heuristic(const Kernel& k);
// Threads per block of a gemm config.
int gemm_threads(const TileConfig& config);
// The K elements of one split_k slice (a multiple of bk; K itself without a split).
int64_t gemm_k_slice(const Kernel& k, const TileConfig& config);
// Dynamic shared memory of a gemm config: its operand pipeline, or the epilogue's strips.
int64_t gemm_shared_bytes(const Kernel& k, const TileConfig& config);
// A dequantised operand whose packed weights travel by cp.async (mma_sync): each stage
// holds the packed tile, and once per block shared memory holds two of the tiles they
// become (f16 / bf16, swizzled like any B tile: one multiplied while the next is
// written) and the block's scales (and float zero points) for its K slice, copied as
// 4-byte words covering each row's run of groups. Offsets are bytes from the end of
// the stage ring.
struct GemmPackedDequant {
  int packed_row_bytes = 0;  // bk elements of i4 / i8
  int packed_tile_bytes = 0;
  int64_t groups = 0;        // groups of one row that a K slice can touch
  int64_t slab_row_words = 0;  // 4-byte words a row's scales (or zero points) take
  int64_t tile_bytes = 0;    // one dequantised tile; the second follows it
  int64_t scale_offset = 0, zero_offset = -1, bytes = 0;
};
// Whether config `c` of a dequantised gemm takes the packed path: mma_sync, rows of
// packed weights 16-byte aligned, float scales and zero points, and slabs that fit.
bool gemm_dequant_packed(const Kernel& k, const TileConfig& config);
GemmPackedDequant gemm_packed_dequant(const Kernel& k, const TileConfig& config);
// The fp32 partials a split K writes (0 without a split).
int64_t gemm_workspace_floats(const Kernel& k, const TileConfig& config);

// The wgmma schedule's rules (ir/tile_config_gemm_wgmma.cpp), which the gemm rules call.
// Whether the target and both operands allow it (TMA-loadable f16 / bf16 on sm_90a).
bool gemm_wgmma_applies(const Kernel& k);
void validate_gemm_wgmma(const Kernel& k, const TileConfig& config);
std::vector<TileConfig> gemm_wgmma_sweep(const Kernel& k);
// Its default where the product fills the GPU with 128-row tiles; none otherwise.
std::optional<TileConfig> gemm_wgmma_heuristic(const Kernel& k);
int wgmma_threads(const TileConfig& config);
int64_t wgmma_stage_bytes(const Kernel& k, const TileConfig& config);
// The epilogue's strips: each consumer warp passes its accumulators through a 16-row
// strip of shared memory, kWgmmaStripColumns fp32 columns (padded) at a time (none
// with split K, whose partials go to global memory).
inline constexpr int kWgmmaStripColumns = 32;
inline constexpr int kWgmmaStripStride = kWgmmaStripColumns + 8;  // floats a strip row takes
int64_t wgmma_strip_bytes(const TileConfig& config);
// The hand-off (`handoff = 1`): the tile's products rounded to their 16-bit dtype, rows
// padded by 16 bytes so that a warp's stores of its fragments fall in distinct banks; the
// dtype is nullopt where the product's dtype is not f16 or bf16.
inline constexpr int kWgmmaHandoffPad = 16;
std::optional<kiln::DType> wgmma_handoff_dtype(const Kernel& k);
int64_t wgmma_handoff_row_bytes(const TileConfig& config);
int64_t wgmma_shared_bytes(const Kernel& k, const TileConfig& config);

// The gemv schedule's rules (ir/tile_config_gemm_gemv.cpp), which the gemm rules call:
// M <= 16 rows of row-major activations against a weight stored [N, K] (K contiguous,
// f16 / bf16 or dequantised i8 / i4). A block of warps_n warps owns bn columns (bn / 8
// weight rows per lane group), its warps splitting K; each lane streams 16 bytes of a
// weight row at a time, bk elements of K per warp and step.
bool gemm_gemv_applies(const Kernel& k);
void validate_gemm_gemv(const Kernel& k, const TileConfig& config);
std::vector<TileConfig> gemm_gemv_sweep(const Kernel& k);
TileConfig gemm_gemv_heuristic(const Kernel& k);
// Elements of K in the 16 bytes a lane loads from a weight row: 8 (f16, bf16), 16 (i8), 32 (i4).
int gemv_lane_elems(const Kernel& k);
// The warps' sums, then (stages > 0) the ring of weight pieces.
int64_t gemv_shared_bytes(const Kernel& k, const TileConfig& config);
int64_t gemv_sums_bytes(const TileConfig& config);
// Whether the weight is mma's A operand (16 weight rows a product, the activations in B's
// 8 columns): with M <= 8 and whole 16-row fragments, half the products of the other way.
bool gemv_weights_as_a(const Kernel& k, const TileConfig& config);

// The dequant_wgmma schedule's rules (ir/tile_config_gemm_dequant_wgmma.cpp), which the
// gemm rules call: y^T = dequant(w) x^T with the weight's rows as wgmma's M (register A
// fragments, dequantised there) and M <= 128 activation rows as its N (bm: M rounded up
// to 8); warps_n warps (whole warpgroups) own bn weight rows, one or two m64 fragments
// a warpgroup; K in steps of bk (64 bytes of a weight row) through a ring of `stages`.
bool gemm_dequant_wgmma_applies(const Kernel& k);
void validate_gemm_dequant_wgmma(const Kernel& k, const TileConfig& config);
std::vector<TileConfig> gemm_dequant_wgmma_sweep(const Kernel& k);
TileConfig gemm_dequant_wgmma_heuristic(const Kernel& k);
int dequant_wgmma_step(const Kernel& k);    // bk: 128 (i4) or 64 (i8)
int dequant_wgmma_span(const Kernel& k);    // K elements of a thread's 16-byte piece: 32 (i4), 16 (i8)
int dequant_wgmma_tokens(const Kernel& k);  // bm: M rounded up to 8
int64_t dequant_wgmma_shared_bytes(const Kernel& k, const TileConfig& config);
int64_t dequant_wgmma_held_registers(const Kernel& k, const TileConfig& config);
// Blocks of a dequant_wgmma or dequant_mma config that one SM is to hold at once (the
// launch bounds' minimum, which caps a thread's registers): as many as their shared
// memory and threads allow, up to 4, while the capped registers still hold the config's
// values without spilling.
int dequant_blocks_per_sm(const Kernel& k, const TileConfig& config);

// The dequant_mma schedule's rules (the same file): dequant_wgmma's layout of the ring,
// the steps and the permuted B tile, with the products on mma.sync m16n8k16, so sm_80
// and up: each warp owns bn / warps_n weight rows (one to four m16 fragments) and
// multiplies them against all bm activation rows (bm / 8 n8 tiles, read by ldmatrix).
bool gemm_dequant_mma_applies(const Kernel& k);
void validate_gemm_dequant_mma(const Kernel& k, const TileConfig& config);
std::vector<TileConfig> gemm_dequant_mma_sweep(const Kernel& k);
TileConfig gemm_dequant_mma_heuristic(const Kernel& k);
int64_t dequant_mma_held_registers(const Kernel& k, const TileConfig& config);

}  // namespace kiln::ir
