// The pointwise kind's tile rules: blocks of `threads` threads, each thread `elems`
// elements of the iteration space as elems / vec vectors of `vec` consecutive
// elements; the legal configs, the search space, and the default (16-byte vectors
// where every full-size argument allows them, a grid that fills the GPU).
#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "ir/error.h"
#include "ir/kernel.h"
#include "ir/tile_config.h"

namespace kiln::ir {

namespace {

constexpr int kMaxVectorBytes = 16;  // the widest load one thread issues (uint4)
constexpr int kMaxElems = 16;        // elements per thread: beyond this, registers run short
constexpr int64_t kMaxGrid = std::numeric_limits<int32_t>::max();  // gridDim.x limit

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The widest element among the arguments: it bounds the vector width.
const KernelArg& widest_arg(const Kernel& k) {
  const KernelArg* w = &k.args.at(0);
  for (const KernelArg& a : k.args)
    if (dtype_bytes(a.type.dtype) > dtype_bytes(w->type.dtype)) w = &a;
  return *w;
}

// Whether an argument can move `vec` consecutive elements as one vector: it is
// contiguous over the space, or every vector stays inside one row of the innermost
// dim where the argument is contiguous (stride 1, aligned) or constant (stride 0).
bool allows_vec(const std::vector<int64_t>& strides, const Shape& dims, int vec) {
  if (strides == row_major_strides(dims)) return true;
  if (dims.back() % vec != 0) return false;
  if (strides.back() != 0 && strides.back() != 1) return false;
  for (size_t d = 0; d + 1 < strides.size(); ++d)
    if (strides[d] % vec != 0) return false;
  return true;
}

// Whether the kernel writes an i4 tensor: two elements a byte, so that each thread's
// vectors must cover whole bytes.
bool writes_i4(const Kernel& k) {
  for (const KernelArg& a : k.args)
    if (a.is_output && a.type.dtype == DType::i4) return true;
  return false;
}

}  // namespace

void validate_pointwise(const Kernel& k, const TileConfig& c) {
  auto fail = [&](const std::string& rule) {
    throw Error(fmt::format("kernel @{}: tile config {}: {}", k.name, c.str(), rule));
  };
  if (c.threads < 32 || c.threads > 1024 || c.threads % 32 != 0)
    fail(fmt::format("threads = {}: threads per block must be a multiple of 32 between 32 and 1024", c.threads));
  if (c.vec != 1 && c.vec != 2 && c.vec != 4 && c.vec != 8)
    fail(fmt::format("vec = {}: vec must be 1, 2, 4 or 8", c.vec));
  const KernelArg& wide = widest_arg(k);
  const int bytes = dtype_bytes(wide.type.dtype);
  if (c.vec * bytes > kMaxVectorBytes)
    fail(fmt::format("vec = {} with {}-byte elements (%{}: {}) is a {}-byte vector; the widest load is {} bytes", c.vec,
                     bytes, wide.name, wide.type.str(), c.vec * bytes, kMaxVectorBytes));
  if (c.elems < 1 || c.elems > kMaxElems)
    fail(fmt::format("elems = {}: elements per thread must be between 1 and {}", c.elems, kMaxElems));
  if (c.elems % c.vec != 0)
    fail(fmt::format("elems = {} is not a multiple of vec = {}: a thread handles whole vectors", c.elems, c.vec));
  if (writes_i4(k) && c.vec % 2 != 0)
    fail(fmt::format("vec = {}: an i4 output packs two elements a byte, so a thread's vectors must be even", c.vec));
  const int64_t grid = ceil_div(k.numel(), int64_t{c.threads} * c.elems);
  if (grid > kMaxGrid) fail(fmt::format("the grid needs {} blocks, more than the limit of {}", grid, kMaxGrid));
}

std::vector<TileConfig> pointwise_candidates(const Kernel& k) {
  std::vector<TileConfig> out;
  const int bytes = dtype_bytes(widest_arg(k).type.dtype);
  for (int threads : {64, 128, 256, 512, 1024})
    for (int elems : {1, 2, 4, 8, 16})
      for (int vec : {1, 2, 4, 8}) {
        if (vec * bytes > kMaxVectorBytes || elems % vec != 0 || (writes_i4(k) && vec % 2 != 0)) continue;
        if (ceil_div(k.numel(), int64_t{threads} * elems) > kMaxGrid) continue;
        out.push_back(TileConfig{threads, elems, vec});
      }
  return out;
}

TileConfig pointwise_heuristic(const Kernel& k) {
  const int64_t n = k.numel();
  const int bytes = dtype_bytes(widest_arg(k).type.dtype);
  const CollapsedSpace space = collapse(k);

  // 16-byte vectors when every full-size argument can use them; a broadcast operand
  // is small and stays in cache, so it does not count.
  int vec = std::min(8, kMaxVectorBytes / bytes);
  auto full_size_allow = [&](int v) {
    for (size_t i = 0; i < k.args.size(); ++i)
      if (k.args[i].type.numel() == n && !allows_vec(space.arg_strides[i], space.dims, v)) return false;
    return true;
  };
  while (vec > 1 && (vec > n || !full_size_allow(vec))) vec /= 2;

  // Bytes in flight: one 16-byte vector per thread and full-size input when there are
  // several of them, two when there is one (the H200 sweep of a two-input bf16 chain over
  // 64-256 MiB tensors: one vector 1.5-5.5% ahead of two). Then, until the grid covers
  // every SM a few times over, fewer elements per thread (down to one, narrowing the
  // vector with them: a tensor of a few thousand elements is latency-bound, and one
  // load per thread puts them all in flight at once; 16 x 4096 bf16: 1.51 us against
  // 1.80 with 64 threads of one 16-byte vector), then smaller blocks until every SM
  // has one.
  int full_inputs = 0;
  for (const KernelArg& a : k.args) full_inputs += !a.is_output && a.type.numel() == n;
  TileConfig c{256, std::min(full_inputs > 1 ? vec : 2 * vec, kMaxElems), vec};
  const int64_t min_blocks = 4 * kTargetSMs;
  auto blocks = [&] { return ceil_div(n, int64_t{c.threads} * c.elems); };
  while (c.elems > 1 && blocks() < min_blocks) {
    c.elems /= 2;
    c.vec = std::min(c.vec, c.elems);
  }
  while (c.threads > 64 && blocks() < kTargetSMs) c.threads /= 2;
  while (blocks() > kMaxGrid && c.threads < 1024) c.threads *= 2;  // sizes beyond 2^43 elements
  if (writes_i4(k) && c.vec % 2 != 0) c.vec = c.elems = 2;  // whole bytes of the packed output
  return c;
}

}  // namespace kiln::ir
