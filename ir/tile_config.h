// TileConfig: how a kernel's work is cut into threads and blocks, one struct for
// every kernel kind with named fields, plus each kind's rules: the legal search
// space (candidates), the check of one config (validate) and the default picked
// from the shapes (heuristic). The `tile` pass assigns configs; the autotuner sweeps
// candidates() and codegen reads the chosen one.
#pragma once
#include <string>
#include <vector>

#include "ir/attrs.h"

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

  // The kinds to come add their fields here, next to the ones above:
  //   column reduction: columns per block, rows per thread
  //   gemm: BM, BN, BK, warps, pipeline stages
  //   attention: Br, Bc, warps, pipeline stages

  bool operator==(const TileConfig&) const = default;
  // "{threads = 256, elems = 8, vec = 8}": the fields that are set, in this order.
  std::string str() const;
  // As named integer attributes (ir::Group::tile keeps a group's config this way).
  Attrs to_attrs() const;
  // The inverse of to_attrs(); throws kiln::Error on an unknown or non-integer field.
  static TileConfig from_attrs(const Attrs& attrs);
};

// The H200's streaming multiprocessors: what "fill the GPU several times" counts.
inline constexpr int kTargetSMs = 132;

// The legal configs of `k` (the autotuner's search space), in a stable order.
std::vector<TileConfig> candidates(const Kernel& k);
// Throws kiln::Error naming the kernel, the config and the rule it breaks.
void validate(const Kernel& k, const TileConfig& config);
// A good default from the kernel's shapes and dtypes; always valid.
TileConfig heuristic(const Kernel& k);

// The row-reduce kind's rules (ir/tile_config_row_reduce.cpp); the three above call them.
void validate_row_reduce(const Kernel& k, const TileConfig& config);
std::vector<TileConfig> row_reduce_candidates(const Kernel& k);
TileConfig row_reduce_heuristic(const Kernel& k);

}  // namespace kiln::ir
