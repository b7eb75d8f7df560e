// The row-reduce kind's tile rules: which (threads per row, rows per block, vector
// width, registers or streaming) configs are legal, the search space, and the default.
// Threads per row grow with the row as the fastest row kernels do: part of a warp for
// short rows (several rows per block), a warp up to a few thousand elements, then a
// whole block per row; rows that do not fit in registers are streamed.
#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <optional>

#include "ir/error.h"
#include "ir/kernel.h"
#include "ir/tile_config.h"

namespace kiln::ir {

namespace {

constexpr int kMaxVectorBytes = 16;
constexpr int kMaxRowElems = 64;  // elements of a row one thread keeps in registers
// What a thread's register arrays may hold: 64 registers, so that with the rest of
// the kernel a thread stays under ~96 registers and an SM holds 20+ warps.
constexpr int kRowRegisterBytes = 256;
// kBlockSliceBytes (ir/tile_config.h): a block's slice of a row in bytes, beyond which
// the heuristic keeps part of the row in shared memory (below), or splits it over a
// cluster: 512 threads x 64 fp16 elements, measured on the H200 at 94% of bandwidth
// without a cluster (rows of 32768) against 86% with a cluster of 2; a cluster's blocks
// wait for the slowest of them, which costs 8-15%.
// Rows past kBlockSliceBytes keep 64 bytes of each thread's slice in registers and the
// rest in shared memory: one block of 512 threads up to 128 KB of row, then clusters of
// blocks of 256 threads holding 64 KB each. Measured on the H200 (fp16 softmax, one
// sweep): rows of 65536 in 512 threads x (32 + 96 elements) 93.5% of the copy bandwidth,
// against 83.7% for the best cluster with the row in registers; rows of 262144 in 8 x
// 256 threads x (32 + 96) 89.7%, against 80.8%.
constexpr int64_t kSharedBlockBytes = 131072;
constexpr int64_t kSharedClusterSlice = 65536;
constexpr int kSharedRegisterBytes = 64;
// Where the shared part does not apply (vectors under 16 bytes): a clustered row's
// slice per block in registers: 256 threads x 64 elements, 48 registers, five
// blocks an SM to cover each other's waits at the cluster barrier. Rows of 65536 fp16
// on the H200: clusters of 4 x 256 threads 84%, of 8 x 128 81-86% (run to run), of
// 2 x 512 84%.
constexpr int64_t kClusterSlice = 16384;
// sm_90 runs clusters of up to 16 blocks; beyond the portable 8 the launch opts in
// (runtime::Module::function). Rows of 262144 fp16: 16 x 256 threads 80.7%, 8 x 512 75.5%.
constexpr int kMaxCluster = 16;
constexpr int kMaxPortableCluster = 8;
constexpr int kMaxBlock = 1024;
// Shared memory one block may use on sm_90 (227 KB), less room for the reduction slots:
// what the part of a row kept in shared memory may take.
constexpr int64_t kMaxRowSharedBytes = 227 * 1024 - 4096;
constexpr int64_t kMaxGrid = std::numeric_limits<int32_t>::max();

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
bool power_of_two(int v) { return v > 0 && (v & (v - 1)) == 0; }

// The arguments that move along the row (the rest hold one value per row).
struct RowArgs {
  std::vector<int> varying;  // indices into Kernel::args
  int widest_bytes = 1;      // the widest element among them
  // The bytes per row element of the inputs a thread keeps in registers: those that
  // belong to the row (as codegen keeps them: as stored, fp16 packed). An input all
  // rows share (a norm's weight) is read where it is used instead.
  int register_bytes = 0;
};

RowArgs row_args(const Kernel& k, const CollapsedSpace& c) {
  RowArgs r;
  for (size_t i = 0; i < k.args.size(); ++i) {
    if (c.arg_strides[i].back() == 0) continue;
    r.varying.push_back(static_cast<int>(i));
    r.widest_bytes = std::max(r.widest_bytes, dtype_bytes(k.args[i].type.dtype));
    if (belongs_to_row(k, c, static_cast<int>(i))) r.register_bytes += dtype_bytes(k.args[i].type.dtype);
  }
  return r;
}

// Why `vec` cannot be used, or empty.
std::string vec_problem(const Kernel& k, const CollapsedSpace& c, const RowArgs& r, int vec) {
  if (vec != 1 && vec != 2 && vec != 4 && vec != 8) return "vec must be 1, 2, 4 or 8";
  if (vec == 1) return "";
  if (vec * r.widest_bytes > kMaxVectorBytes)
    return fmt::format("a vector of {} {}-byte elements is wider than {} bytes", vec, r.widest_bytes, kMaxVectorBytes);
  if (c.dims.back() % vec != 0) return fmt::format("the row length {} is not a multiple of vec", c.dims.back());
  for (int i : r.varying) {
    const std::vector<int64_t>& s = c.arg_strides[i];
    if (s.back() != 1) return fmt::format("%{} is not contiguous along the row", k.args[i].name);
    for (size_t d = 0; d + 1 < s.size(); ++d)
      if (s[d] % vec != 0) return fmt::format("%{}'s rows do not start at multiples of vec", k.args[i].name);
  }
  return "";
}

// The elements per thread a row held partly in shared memory keeps in registers by default.
int default_register_elems(const RowArgs& r, int vec) {
  return std::max(vec, kSharedRegisterBytes / std::max(1, r.register_bytes) / vec * vec);
}

bool legal(const Kernel& k, const TileConfig& c) {
  try {
    validate_row_reduce(k, c);
    return true;
  } catch (const Error&) {
    return false;
  }
}

int widest_vec(const Kernel& k, const CollapsedSpace& c, const RowArgs& r) {
  int vec = kMaxVectorBytes / r.widest_bytes;
  while (vec > 1 && !vec_problem(k, c, r, vec).empty()) vec /= 2;
  return vec;
}

int register_elems(int64_t n, int row_threads, int vec) {
  return static_cast<int>(ceil_div(n, int64_t{row_threads} * vec) * vec);
}

}  // namespace

int cluster_of(const TileConfig& c) { return std::max(1, c.cluster); }

namespace {

int64_t shared_bytes(const TileConfig& c, const RowArgs& r) {
  return c.shared_elems <= 0 ? 0 : int64_t{c.row_threads} * c.rows * c.shared_elems * r.register_bytes;
}

}  // namespace

int64_t row_shared_bytes(const Kernel& k, const TileConfig& c) {
  return c.shared_elems <= 0 ? 0 : shared_bytes(c, row_args(k, collapse(k)));
}

void validate_row_reduce(const Kernel& k, const TileConfig& c) {
  auto fail = [&](const std::string& rule) {
    throw Error(fmt::format("kernel @{}: tile config {}: {}", k.name, c.str(), rule));
  };
  const CollapsedSpace space = collapse(k);
  const int64_t n = space.dims.back();
  const RowArgs r = row_args(k, space);
  if (c.threads != 0) fail("a row_reduce kernel sets row_threads and rows, not threads");
  if (!power_of_two(c.row_threads) || c.row_threads > kMaxBlock)
    fail(fmt::format("row_threads = {}: threads per row must be a power of two up to {}", c.row_threads, kMaxBlock));
  if (!power_of_two(c.rows)) fail(fmt::format("rows = {}: rows per block must be a power of two", c.rows));
  const int64_t block = int64_t{c.row_threads} * c.rows;
  if (block < 32 || block > kMaxBlock)
    fail(fmt::format("row_threads * rows = {}: a block holds whole warps, 32 to {} threads", block, kMaxBlock));
  if (c.row_threads > 32 && c.rows != 1)
    fail("rows must be 1 when a row takes more than a warp (the block reduces one row)");
  const int cluster = cluster_of(c);
  if (c.cluster < 0 || !power_of_two(cluster) || cluster > kMaxCluster)
    fail(fmt::format("cluster = {}: a cluster holds 1, 2, 4, 8 or 16 blocks", c.cluster));
  if (cluster > kMaxPortableCluster && c.row_threads > 256)
    fail(fmt::format("cluster = {}: a cluster of more than {} blocks takes blocks of 256 threads at most",
                     cluster, kMaxPortableCluster));
  if (cluster > 1) {
    if (c.rows != 1) fail("rows must be 1 when a cluster of blocks shares a row");
    if (target_sm() < 90)
      fail(fmt::format("thread-block clusters need sm_90 or newer; the target is sm_{}", target_sm()));
  }
  if (std::string why = vec_problem(k, space, r, c.vec); !why.empty()) fail(fmt::format("vec = {}: {}", c.vec, why));
  if (c.stream != 0 && c.stream != 1) fail("stream must be 0 (row in registers) or 1 (row re-read each phase)");
  if (c.stream == 1 && c.elems != c.vec) fail("a streamed row moves one vector at a time: elems must equal vec");
  if (c.stream == 0) {
    if (c.elems < c.vec || c.elems > kMaxRowElems || c.elems % c.vec != 0)
      fail(fmt::format("elems = {}: a thread keeps whole vectors, at most {} elements", c.elems, kMaxRowElems));
    const int64_t held = int64_t{c.row_threads} * cluster * (c.elems + c.shared_elems);
    if (held < n)
      fail(fmt::format("row_threads * cluster * (elems + shared_elems) = {} cannot hold a row of {} elements", held,
                       n));
  }
  if (c.shared_elems != 0) {
    if (c.stream != 0) fail("shared_elems extends a row held in registers: stream must be 0");
    if (c.shared_elems < 0 || c.shared_elems % c.vec != 0)
      fail(fmt::format("shared_elems = {}: a thread keeps whole vectors in shared memory", c.shared_elems));
    // The shared part is copied in with cp.async, 16 bytes at a time.
    if (target_sm() < 80)
      fail(fmt::format("copying with cp.async needs sm_80 or newer; the target is sm_{}", target_sm()));
    for (int i : r.varying)
      if (belongs_to_row(k, space, i) && c.vec * dtype_bytes(k.args[i].type.dtype) != 16)
        fail(fmt::format("rows copied to shared memory move 16-byte vectors: %{} moves {} bytes per vector",
                         k.args[i].name, c.vec * dtype_bytes(k.args[i].type.dtype)));
  }
  if (shared_bytes(c, r) > kMaxRowSharedBytes)
    fail(fmt::format("the row's shared memory takes {} bytes; a block has {}", shared_bytes(c, r),
                     kMaxRowSharedBytes));
  if (ceil_div(row_count(k), c.rows) * cluster > kMaxGrid) fail("the grid needs more blocks than the limit");
}

std::vector<TileConfig> row_reduce_candidates(const Kernel& k) {
  const CollapsedSpace space = collapse(k);
  const int64_t n = space.dims.back();
  const RowArgs r = row_args(k, space);
  // Only the widest legal vector: a narrower one moves the same bytes in more
  // instructions, and every extra candidate costs the sweep a compile.
  const int vec = widest_vec(k, space, r);
  std::vector<TileConfig> out;
  // Long rows: held partly in shared memory, or (sm_90) by clusters.
  const bool long_rows = n * r.widest_bytes >= kBlockSliceBytes / 2;
  auto add = [&](int rt, int rows, int cluster) {
    TileConfig c;
    c.row_threads = rt;
    c.rows = rows;
    c.vec = vec;
    c.cluster = cluster > 1 ? cluster : 0;
    c.elems = register_elems(n, rt * cluster, vec);
    if (c.elems <= kMaxRowElems) out.push_back(c);
    c.stream = 1;
    c.elems = vec;
    out.push_back(c);
  };
  for (int rt = 4; rt <= kMaxBlock; rt *= 2)
    for (int rows = 1; rows <= 32; rows *= 2) {
      if (rt * rows < 32 || rt * rows > kMaxBlock || (rt > 32 && rows != 1)) continue;
      if (ceil_div(row_count(k), rows) > kMaxGrid) continue;
      add(rt, rows, 1);
    }
  // Long rows: part of each thread's slice in shared memory, so that a block (or a
  // smaller cluster) holds the row with registers to spare; around the default's
  // kSharedRegisterBytes of registers.
  const int shared_part_elems = default_register_elems(r, vec);
  if (long_rows)
    for (int rt = 128; rt <= kMaxBlock; rt *= 2)
      for (int cluster = 1; cluster <= kMaxCluster; cluster *= 2)
        for (int elems : {shared_part_elems / 2, shared_part_elems, shared_part_elems * 2}) {
          if (elems < vec || elems > kMaxRowElems || (cluster > kMaxPortableCluster && rt > 256)) continue;
          TileConfig c;
          c.row_threads = rt;
          c.rows = 1;
          c.vec = vec;
          c.cluster = cluster > 1 ? cluster : 0;
          c.elems = elems;
          c.shared_elems = register_elems(n, rt * cluster, vec) - elems;
          if (c.shared_elems > 0 && legal(k, c)) out.push_back(c);
        }
  // Long rows on sm_90: clusters of 2 to 16 blocks of 128 threads or more share a row.
  if (long_rows && target_sm() >= 90)
    for (int rt = 128; rt <= kMaxBlock; rt *= 2)
      for (int cluster = 2; cluster <= kMaxCluster; cluster *= 2)
        if ((cluster <= kMaxPortableCluster || rt <= 256) && ceil_div(n, int64_t{rt} * cluster * vec) >= 2 &&
            row_count(k) * cluster <= kMaxGrid)
          add(rt, 1, cluster);
  return out;
}

namespace {

// A row past kBlockSliceBytes held partly in shared memory, or nothing when that config
// is not legal here (vectors under 16 bytes, an older GPU, too much shared memory).
std::optional<TileConfig> shared_part_heuristic(const Kernel& k, int64_t n, const RowArgs& r, int vec) {
  const int64_t row_bytes = n * r.register_bytes;
  if (r.register_bytes == 0 || row_bytes <= kBlockSliceBytes) return std::nullopt;
  TileConfig c;
  c.vec = vec;
  c.rows = 1;
  int cluster = 1;
  c.row_threads = 512;
  if (row_bytes > kSharedBlockBytes) {
    c.row_threads = 256;
    cluster = 2;
    while (cluster < kMaxCluster && ceil_div(row_bytes, cluster) > kSharedClusterSlice) cluster *= 2;
    c.cluster = cluster;
  }
  const int total = register_elems(n, c.row_threads * cluster, vec);
  c.elems = std::min(default_register_elems(r, vec), total);
  c.shared_elems = total - c.elems;
  if (c.shared_elems <= 0 || !legal(k, c)) return std::nullopt;
  return c;
}

}  // namespace

// Short rows of a kernel that writes whole rows (softmax, the norms) go one warp a
// block. Such a kernel holds its row and the output math in ~50-64 registers, so an SM
// holds ~32-40 of its warps whatever the block; one-warp blocks then cost nothing, and
// on the H200 (fp16) they ran softmax rows of 64, 128, 512 and 1024 at 96.2, 96.1, 97.1
// and 96.9% of the copy bandwidth against 85.0, 93.6, 95.3 and 95.4% in blocks of 128
// threads (LayerNorm and add + RMSNorm at 1024: +1.5, +1.3). A reduction alone (~26
// registers) could hold 64 warps an SM, and one-warp blocks (at most 32 an SM) halve
// its loads in flight: f32 row sums of 100, 98.9% in blocks of 128 threads, 61.7% in
// blocks of 32. It keeps blocks of 128 threads.
bool writes_whole_rows(const Kernel& k) {
  for (const KernelArg& a : k.args)
    if (a.is_output && a.type.shape == k.space()) return true;
  return false;
}

TileConfig row_reduce_heuristic(const Kernel& k) {
  const CollapsedSpace space = collapse(k);
  const int64_t n = space.dims.back();
  const int64_t rows = row_count(k);
  const RowArgs r = row_args(k, space);
  TileConfig c;
  c.vec = widest_vec(k, space, r);
  if (std::optional<TileConfig> shared = shared_part_heuristic(k, n, r, c.vec)) return *shared;
  // A row longer than one block's slice is shared by a cluster (sm_90), each block
  // holding a slice in registers as a shorter row would be held.
  int cluster = 1;
  if (target_sm() >= 90 && n * r.widest_bytes > kBlockSliceBytes) {
    cluster = 2;
    while (cluster < kMaxPortableCluster && ceil_div(n, cluster) > kClusterSlice) cluster *= 2;
    if (ceil_div(n, cluster) > kClusterSlice) cluster = kMaxCluster;
  }
  const int max_threads = cluster > kMaxPortableCluster ? 256 : kMaxBlock;
  const int64_t slice = ceil_div(n, cluster);
  // Short rows: a thread takes four vectors or more (measured on the H200: rows of 128
  // fp16 at 96% of bandwidth with four 16-byte vectors per thread, 80% with one), up to
  // a warp per row; longer slices take more threads.
  const int64_t vectors = ceil_div(slice, c.vec);
  if (rows < kTargetSMs && cluster == 1 && vectors > 64) {
    // Too few rows to fill the GPU (a decoding step's single row): the row's latency is
    // the kernel's, so it is spread over more threads, two vectors each, up to 256
    // (the H200 sweep of one row of 4096 f16: softmax 2.10 us against 2.36 with 64
    // threads, add + RMSNorm 2.23 against 2.5, LayerNorm 2.21 against 2.48).
    c.row_threads = 32;
    while (c.row_threads < 256 && int64_t{c.row_threads} * 2 < vectors) c.row_threads *= 2;
  } else if (slice <= 3072) {
    c.row_threads = 1;
    while (c.row_threads < 32 && int64_t{c.row_threads} * 4 < vectors) c.row_threads *= 2;
  } else {
    c.row_threads = slice <= 6144 ? 64 : slice <= 16384 ? 128 : 256;
  }
  // Registers for the slice: kRowRegisterBytes over the inputs kept there.
  const int budget =
      std::clamp(kRowRegisterBytes / std::max(1, r.register_bytes) / c.vec * c.vec, c.vec, kMaxRowElems);
  c.elems = register_elems(n, c.row_threads * cluster, c.vec);
  while (c.elems > budget && c.row_threads < max_threads) {
    c.row_threads *= 2;
    c.elems = register_elems(n, c.row_threads * cluster, c.vec);
  }
  if (c.elems > budget) {  // the row does not fit: re-read it in each phase
    c.stream = 1;
    c.elems = c.vec;
  }
  if (cluster > 1) {
    c.cluster = cluster;
    c.rows = 1;
    return c;
  }
  // Short rows: several per block, but no more rows than there are.
  const int block = writes_whole_rows(k) ? 32 : 128;
  c.rows = c.row_threads > 32 ? 1 : block / c.row_threads;
  while (c.rows > 1 && c.rows * c.row_threads > 32 && c.rows / 2 >= rows) c.rows /= 2;
  return c;
}

}  // namespace kiln::ir
