// The row-reduce kind's tile rules: which (threads per row, rows per block, vector
// width, registers or streaming) configs are legal, the search space, and the default.
// Threads per row grow with the row as the fastest row kernels do: part of a warp for
// short rows (several rows per block), a warp up to a few thousand elements, then a
// whole block per row; rows that do not fit in registers are streamed.
#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "ir/error.h"
#include "ir/kernel.h"
#include "ir/tile_config.h"

namespace kiln::ir {

namespace {

constexpr int kMaxVectorBytes = 16;
constexpr int kMaxRowElems = 64;  // elements of a row one thread keeps in registers
constexpr int kMaxBlock = 1024;
constexpr int64_t kMaxGrid = std::numeric_limits<int32_t>::max();

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
bool power_of_two(int v) { return v > 0 && (v & (v - 1)) == 0; }

// The arguments that move along the row (the rest hold one value per row).
struct RowArgs {
  std::vector<int> varying;    // indices into Kernel::args
  int widest_bytes = 1;        // the widest element among them
  int loads = 0;               // how many of them are inputs (each is a register array)
};

RowArgs row_args(const Kernel& k, const CollapsedSpace& c) {
  RowArgs r;
  for (size_t i = 0; i < k.args.size(); ++i) {
    if (c.arg_strides[i].back() == 0) continue;
    r.varying.push_back(static_cast<int>(i));
    r.widest_bytes = std::max(r.widest_bytes, dtype_bytes(k.args[i].type.dtype));
    if (!k.args[i].is_output) ++r.loads;
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

int register_elems(int64_t n, int row_threads, int vec) {
  return static_cast<int>(ceil_div(n, int64_t{row_threads} * vec) * vec);
}

}  // namespace

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
  if (std::string why = vec_problem(k, space, r, c.vec); !why.empty()) fail(fmt::format("vec = {}: {}", c.vec, why));
  if (c.stream != 0 && c.stream != 1) fail("stream must be 0 (row in registers) or 1 (row re-read each phase)");
  if (c.stream == 1 && c.elems != c.vec) fail("a streamed row moves one vector at a time: elems must equal vec");
  if (c.stream == 0) {
    if (c.elems < c.vec || c.elems > kMaxRowElems || c.elems % c.vec != 0)
      fail(fmt::format("elems = {}: a thread keeps whole vectors, at most {} elements", c.elems, kMaxRowElems));
    if (int64_t{c.row_threads} * c.elems < n)
      fail(fmt::format("row_threads * elems = {} cannot hold a row of {} elements in registers",
                       int64_t{c.row_threads} * c.elems, n));
  }
  if (ceil_div(row_count(k), c.rows) > kMaxGrid) fail("the grid needs more blocks than the limit");
}

std::vector<TileConfig> row_reduce_candidates(const Kernel& k) {
  const CollapsedSpace space = collapse(k);
  const int64_t n = space.dims.back();
  const RowArgs r = row_args(k, space);
  std::vector<TileConfig> out;
  for (int rt = 4; rt <= kMaxBlock; rt *= 2)
    for (int rows = 1; rows <= 32; rows *= 2) {
      if (rt * rows < 32 || rt * rows > kMaxBlock || (rt > 32 && rows != 1)) continue;
      if (ceil_div(row_count(k), rows) > kMaxGrid) continue;
      for (int vec : {1, 2, 4, 8}) {
        if (!vec_problem(k, space, r, vec).empty()) continue;
        TileConfig c;
        c.row_threads = rt;
        c.rows = rows;
        c.vec = vec;
        c.elems = register_elems(n, rt, vec);
        if (c.elems <= kMaxRowElems) out.push_back(c);
        c.stream = 1;
        c.elems = vec;
        out.push_back(c);
      }
    }
  return out;
}

TileConfig row_reduce_heuristic(const Kernel& k) {
  const CollapsedSpace space = collapse(k);
  const int64_t n = space.dims.back();
  const int64_t rows = row_count(k);
  const RowArgs r = row_args(k, space);
  TileConfig c;
  c.vec = kMaxVectorBytes / r.widest_bytes;
  while (c.vec > 1 && !vec_problem(k, space, r, c.vec).empty()) c.vec /= 2;
  c.row_threads = n <= 64 ? 8 : n <= 128 ? 16 : n <= 3072 ? 32 : n <= 6144 ? 64 : n <= 16384 ? 128 : 256;
  // No more threads than the row has vectors.
  while (c.row_threads > 1 && int64_t{c.row_threads / 2} * c.vec >= n) c.row_threads /= 2;
  // Registers for the row: 64 fp32 values for one input array, fewer with several.
  const int budget = std::max(c.vec, kMaxRowElems / std::max(1, r.loads) / c.vec * c.vec);
  c.elems = register_elems(n, c.row_threads, c.vec);
  while (c.elems > budget && c.row_threads < kMaxBlock) {
    c.row_threads *= 2;
    c.elems = register_elems(n, c.row_threads, c.vec);
  }
  if (c.elems > budget) {  // the row does not fit: re-read it in each phase
    c.stream = 1;
    c.elems = c.vec;
  }
  // Short rows: several per block (128 threads), but no more rows than there are.
  c.rows = c.row_threads > 32 ? 1 : 128 / c.row_threads;
  while (c.rows > 1 && c.rows * c.row_threads > 32 && c.rows / 2 >= rows) c.rows /= 2;
  return c;
}

}  // namespace kiln::ir
