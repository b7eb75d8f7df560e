// The col-reduce kind's tile rules. A col_reduce kernel reduces the leading dims K of
// a collapsed space [K..., N...] (any set of reduced axes). Its block is (cols / vec)
// column threads, each moving vec consecutive columns (16-byte loads), times
// k_threads threads walking K; k_split cuts K into slices across the grid's y dim so
// that tall matrices with few columns still fill the GPU. When the innermost dim is
// reduced (a full reduction, [K, R]) a block takes one column and the vector runs
// along K.
#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "ir/error.h"
#include "ir/kernel.h"
#include "ir/tile_config.h"

namespace kiln::ir {

namespace {

constexpr int kMaxVectorBytes = 16;
constexpr int kMaxBlock = 1024;
constexpr int kMaxSplit = 65535;                          // gridDim.y
constexpr int64_t kMaxSharedBytes = 48 * 1024;            // static shared memory
constexpr int64_t kMaxScratchBytes = int64_t{64} << 20;   // the partials of a split K
constexpr int64_t kMaxGrid = std::numeric_limits<int32_t>::max();
constexpr int kThreadsPerSM = 2048;
// Threads a column-mode grid aims at: 1024 an SM, half the slots (see default_split).
constexpr int64_t kTargetThreads = int64_t{kTargetSMs} * 1024;

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
bool power_of_two(int64_t v) { return v > 0 && (v & (v - 1)) == 0; }

// What the rules need to know of a kernel's collapsed space.
struct ColShape {
  CollapsedSpace space;
  int64_t k = 1, n = 1;  // reduced and kept element counts
  bool one_column = false;  // a block takes one column (col_reads_along_reduced)
  int64_t inner_cols = 1;   // the innermost kept dim (columns mode): a block's columns stay inside it
  int reduces = 0;          // 4-byte words of running state per column, over every reduction
};

ColShape col_shape(const Kernel& kernel) {
  ColShape s;
  s.space = collapse(kernel);
  for (int d = 0; d < static_cast<int>(s.space.dims.size()); ++d)
    (d < s.space.reduced_dims ? s.k : s.n) *= s.space.dims[static_cast<size_t>(d)];
  s.one_column = col_reads_along_reduced(kernel);
  if (static_cast<size_t>(s.space.reduced_dims) < s.space.dims.size()) s.inner_cols = s.space.dims.back();
  for (const ScalarOp& op : kernel.body)
    // An integer reduction's state is kept in 64 bits (codegen/integer_reduce.h).
    if (op.kind == ScalarKind::Reduce) s.reduces += reduce_state_size(op.op) * (is_integer(op.dtype) ? 2 : 1);
  return s;
}

// Why `vec` cannot be used, or empty. Columns: every input that moves along the
// innermost kept dim reads it contiguously from starts that are multiples of vec (so a
// vector never straddles a digit of the other kept dims). One column a block: the same
// along the innermost reduced dim.
std::string vec_problem(const Kernel& kernel, const ColShape& s, int vec) {
  if (vec != 1 && vec != 2 && vec != 4 && vec != 8) return "vec must be 1, 2, 4 or 8";
  if (vec == 1) return "";
  const CollapsedSpace& c = s.space;
  const size_t inner = s.one_column ? static_cast<size_t>(c.reduced_dims) - 1 : c.dims.size() - 1;
  const char* along = s.one_column ? "the innermost reduced dim" : "the innermost kept dim";
  if (c.dims[inner] % vec != 0) return fmt::format("{} ({}) is not a multiple of vec", along, c.dims[inner]);
  for (size_t i = 0; i < kernel.args.size(); ++i) {
    const KernelArg& a = kernel.args[i];
    const std::vector<int64_t>& st = c.arg_strides[i];
    if (a.is_output || st[inner] == 0) continue;
    if (vec * dtype_bytes(a.type.dtype) > kMaxVectorBytes)
      return fmt::format("a vector of {} elements of %{} ({}) is wider than {} bytes", vec, a.name, a.type.str(),
                         kMaxVectorBytes);
    if (st[inner] != 1) return fmt::format("%{} is not contiguous along {}", a.name, along);
    for (size_t d = 0; d < st.size(); ++d)
      if (d != inner && c.dims[d] != 1 && st[d] % vec != 0)
        return fmt::format("%{}'s vectors do not start at multiples of vec", a.name);
  }
  return "";
}

int block_threads(const ColShape& s, const TileConfig& c) {
  return s.one_column ? c.k_threads : c.cols / std::max(1, c.vec) * c.k_threads;
}

// The widest element among the inputs that vary (it bounds the vector in bytes).
int widest_input_bytes(const Kernel& k) {
  int bytes = 1;
  for (const KernelArg& a : k.args)
    if (!a.is_output) bytes = std::max(bytes, dtype_bytes(a.type.dtype));
  return bytes;
}

int pow2_at_least(int64_t v) {
  int p = 1;
  while (p < v && p < kMaxBlock) p *= 2;
  return p;
}

}  // namespace

void validate_col_reduce(const Kernel& k, const TileConfig& c) {
  auto fail = [&](const std::string& rule) {
    throw Error(fmt::format("kernel @{}: tile config {}: {}", k.name, c.str(), rule));
  };
  const ColShape s = col_shape(k);
  if (c.threads || c.elems || c.row_threads || c.rows || c.stream || c.cluster)
    fail("a col_reduce kernel sets cols, vec, k_threads and k_split only");
  if (std::string why = vec_problem(k, s, c.vec); !why.empty()) fail(fmt::format("vec = {}: {}", c.vec, why));
  if (s.one_column) {
    if (c.cols != 1)
      fail(fmt::format("cols = {}: a block takes one column when the innermost dim is reduced, so cols must be 1",
                       c.cols));
  } else {
    if (c.cols < c.vec || c.cols % c.vec != 0 || !power_of_two(c.cols / c.vec))
      fail(fmt::format("cols = {}: columns per block must be vec times a power of two", c.cols));
  }
  if (!power_of_two(c.k_threads) || c.k_threads > kMaxBlock)
    fail(fmt::format("k_threads = {}: threads along K must be a power of two up to {}", c.k_threads, kMaxBlock));
  const int block = block_threads(s, c);
  if (block < 32 || block > kMaxBlock)
    fail(fmt::format("the block has {} threads; it must hold whole warps, 32 to {}", block, kMaxBlock));
  if (c.k_split < 1 || c.k_split > kMaxSplit)
    fail(fmt::format("k_split = {}: K slices must number between 1 and {}", c.k_split, kMaxSplit));
  if (c.k_split > s.k) fail(fmt::format("k_split = {} is more slices than the {} reduced elements", c.k_split, s.k));
  const int64_t shared = int64_t{4} * std::max(1, s.reduces) * c.k_threads * (s.one_column ? 1 : c.cols);
  if (shared > kMaxSharedBytes)
    fail(fmt::format("the block combines {} bytes in shared memory, more than {}", shared, kMaxSharedBytes));
  const int64_t scratch = int64_t{4} * s.reduces * c.k_split * s.n;
  if (c.k_split > 1 && scratch > kMaxScratchBytes)
    fail(fmt::format("the K slices' partials take {} bytes, more than {}", scratch, kMaxScratchBytes));
  if (ceil_div(s.n, c.cols) > kMaxGrid) fail("the grid needs more column blocks than the limit");
}

namespace {

// The last block of a column tile folds the k_split slices' partials, each of its
// threads along K every k_threads-th slice: the kernel's serial tail. At most this many
// slices a thread keeps that tail to a few loads in flight at once.
constexpr int kMaxSlicesPerThread = 8;

// Slices of K for a block shape. Columns: none where the column tiles alone hold about
// 1024 threads an SM (a middle axis of 8 x 4096 x 1024, a wide 1024 x 32768: a split
// there cost 6%), else until the grid holds every thread slot, 2048 an SM (with the
// shuffle combine, 65536 x 256 f32 in 64 slices 18.4 us against 19.5 in 33, 50000 x 1024
// in 16 slices 51.0 against 52.4 in 8, an f16 softmax over a leading axis 12% faster:
// bench/NOTES.md), while each thread keeps at least 16 vectors of its slice and the
// fold stays short. One column a block: until the blocks fill every SM twice (2^27
// elements in 1056 blocks of 512), at least 8 vectors a thread.
int default_split(const ColShape& s, const TileConfig& c) {
  const int block = block_threads(s, c);
  const int64_t col_blocks = ceil_div(s.n, c.cols);
  const int64_t per_thread = s.one_column ? 8 * c.vec : 16;
  const int64_t by_work = std::max<int64_t>(1, s.k / (int64_t{c.k_threads} * per_thread));
  const int64_t wanted = s.one_column ? int64_t{2} * kTargetSMs * (kThreadsPerSM / block) : kTargetThreads / block;
  int64_t by_wave = std::max<int64_t>(1, wanted / col_blocks);
  if (!s.one_column && by_wave > 1) by_wave = 2 * wanted / col_blocks;
  const int64_t by_fold = int64_t{kMaxSlicesPerThread} * c.k_threads;
  int64_t split = std::min({by_work, by_wave, by_fold, int64_t{kMaxSplit}});
  const int64_t scratch_cap = kMaxScratchBytes / (int64_t{4} * std::max(1, s.reduces) * s.n);
  return static_cast<int>(std::max<int64_t>(1, std::min(split, scratch_cap)));
}

}  // namespace

// The sweep: the heuristic's block shape first, then every block shape at the widest
// legal vector, each with its default split, a quarter, half, twice and four times it,
// and no split. Every split is its own binary (the slice length is compiled in), so a
// sweep over all of them for every vector width (645 configs for a tall f32 matrix,
// 30-80 ms of NVRTC each on an idle core) spent a tuning budget of seconds on compiles
// alone; narrower vectors read the same bytes in more instructions.
std::vector<TileConfig> col_reduce_candidates(const Kernel& k) {
  const ColShape s = col_shape(k);
  std::vector<TileConfig> out;
  auto keep = [&](const TileConfig& c) {
    if (std::find(out.begin(), out.end(), c) != out.end()) return;
    try {
      validate_col_reduce(k, c);
      out.push_back(c);
    } catch (const Error&) {
    }
  };
  auto shape = [&](int vec, int cols, int kt) {
    TileConfig c;
    c.cols = cols;
    c.vec = vec;
    c.k_threads = kt;
    c.k_split = 1;
    const int split = default_split(s, c);
    for (int64_t v : {int64_t{1}, int64_t{split}, int64_t{split} / 2, int64_t{split} * 2, int64_t{split} / 4,
                      int64_t{split} * 4}) {
      if (v < 1 || v > kMaxSplit || (v > 1 && v * kt * vec > s.k)) continue;
      c.k_split = static_cast<int>(v);
      keep(c);
    }
  };
  const TileConfig h = col_reduce_heuristic(k);
  shape(h.vec, h.cols, h.k_threads);
  const int vec = h.vec;
  const int64_t fit = std::min(s.n, s.inner_cols);
  for (int col_threads = s.one_column ? 1 : 4; col_threads <= (s.one_column ? 1 : 64); col_threads *= 2) {
    if (col_threads > 4 && int64_t{col_threads / 2} * vec >= fit) break;  // more threads than columns
    for (int kt = 1; kt <= kMaxBlock; kt *= 2)
      if (col_threads * kt >= 64 && col_threads * kt <= 512) shape(vec, s.one_column ? 1 : col_threads * vec, kt);
  }
  return out;
}

TileConfig col_reduce_heuristic(const Kernel& k) {
  const ColShape s = col_shape(k);
  TileConfig c;
  c.vec = kMaxVectorBytes / widest_input_bytes(k);
  while (c.vec > 1 && !vec_problem(k, s, c.vec).empty()) c.vec /= 2;
  int col_threads = 1;
  if (s.one_column) {
    c.cols = 1;
    // One column: up to 512 threads. Many columns of a block each ([K, R], [R1, K, R2]):
    // at least 16 vectors a thread, so that its loads outweigh the block's combine.
    const int64_t vectors = ceil_div(s.k, int64_t{c.vec} * (s.n > 1 ? 16 : 1));
    c.k_threads = std::max(32, std::min(512, pow2_at_least(vectors)));
  } else {
    // Eight column threads (128 bytes of each row for 16-byte vectors: whole sectors),
    // fewer when the columns run out (a middle axis: the innermost kept dim, so that a
    // block's columns lie in one contiguous stretch of each row). Blocks of 128 to 512
    // threads, as many along K as bring the column tiles to about 1024 threads an SM.
    // The H200 sweep of tall, wide and middle-axis f32 sums (bench/NOTES.md): narrow
    // tiles with more threads along K read as fast as wide ones, and need fewer K
    // slices (whose partials cost a second pass) to fill the GPU.
    const int64_t fit = std::min(s.n, s.inner_cols);
    col_threads = 8;
    while (col_threads > 1 && int64_t{col_threads / 2} * c.vec >= fit) col_threads /= 2;
    c.cols = col_threads * c.vec;
    const int64_t col_blocks = ceil_div(s.n, int64_t{c.cols});
    const int64_t block = std::clamp<int64_t>(kTargetThreads / col_blocks, 128, 512);
    int threads = 128;
    while (threads * 2 <= block) threads *= 2;
    c.k_threads = std::min(threads / col_threads, pow2_at_least(s.k));
    c.k_threads = std::max(c.k_threads, 32 / col_threads);
    // Several reductions at once (a norm's sums) combine more values a thread: fewer
    // threads along K, so that the block's combine fits in shared memory.
    while (c.k_threads > 32 / col_threads &&
           int64_t{4} * std::max(1, s.reduces) * c.k_threads * c.cols > kMaxSharedBytes)
      c.k_threads /= 2;
  }
  c.k_split = 1;
  c.k_split = default_split(s, c);
  return c;
}

}  // namespace kiln::ir
