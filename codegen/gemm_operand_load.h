// The load stage of a gemm kernel: how one operand's tiles reach shared memory.
//
// A tile is stored as rows of its contiguous dim (K for a K-contiguous operand, else M
// or N), in 16-byte chunks whose order within each 128-byte line is XOR-swizzled by
// the row, so that ldmatrix's eight row addresses and the copies' stores fall in
// distinct banks. Each thread copies whole chunks: chunk t, t + T, t + 2T, ... of the
// tile for T threads, as one cp.async each (async) or, where a chunk is not 16-byte
// aligned in memory or the operand has a prologue, through registers: loaded at issue
// time (one element at a time where alignment demands), converted and stored to shared
// memory at commit time, while the tile before it is being multiplied. A dequantised
// operand (i8 / i4 weights, gemm_dequant_load.cpp) always goes through registers: its
// packed elements and each chunk's scale load at issue time and become f16 / bf16 at
// commit time.
#pragma once
#include <string>

#include "ir/kernel.h"
#include "ir/tile_config.h"

namespace kiln::codegen {

// One operand tile's layout in shared memory.
struct SharedTile {
  int rows = 0;   // along the other dim
  int cols = 0;   // along the contiguous dim, in elements
  int esize = 2;  // bytes per element
  int row_bytes() const { return cols * esize; }
  int bytes() const { return rows * row_bytes(); }
  int chunks_per_row() const { return row_bytes() / 16; }
  // The XOR of a row's chunks (its period is 8 rows): row % 8 for rows of 128 bytes or
  // more, (row / 2) % 4 for 64-byte rows, (row / 4) % 2 for 32-byte rows.
  int swizzle(int row) const;
  std::string swizzle_code(const std::string& row) const;
  // The byte offset of chunk `chunk` of row `row`, as code.
  std::string offset_code(const std::string& row, const std::string& chunk) const;
};

class OperandLoad {
public:
  // `param` is the operand's kernel parameter; `tile_outer` the tile's extent along M
  // (A) or N (B); `threads` the block's.
  OperandLoad(const ir::Kernel& k, bool operand_a, const std::string& param, int tile_outer, int bk, int threads);

  const SharedTile& tile() const { return tile_; }
  bool k_contiguous() const { return k_contiguous_; }
  bool async() const { return async_; }
  const char* name() const { return a_ ? "a" : "b"; }
  // "A %a: K contiguous, 16-byte cp.async copies" for the kernel's header comment.
  std::string describe() const;

  // Before the main loop: the thread's chunk, its source pointer and shared-memory
  // offsets. Reads `outer0` (the tile's first row of M or N), `batch` and `k_end`.
  std::string setup(const std::string& outer0) const;
  // Starts loading the K step that begins at element `k0` into the stage at byte
  // `stage` of shared memory (both code expressions).
  std::string issue(const std::string& indent, const std::string& stage, const std::string& k0) const;
  // Operands loaded through registers: converts and stores what issue() loaded. Empty
  // for cp.async operands.
  std::string commit(const std::string& indent, const std::string& stage, const std::string& k0) const;

  // A dequantised operand whose packed weights arrive by cp.async (ir::gemm_dequant_packed,
  // gemm_dequant_packed.cpp): its stages hold packed tiles; `ring_end` is the byte where
  // the stage ring ends, after which its dequantised tile and slabs of scales lie.
  bool packed() const { return packed_; }
  void place_packed(int64_t ring_end) { ring_end_ = ring_end; }
  int stage_bytes() const;  // this operand's part of a pipeline stage
  // The byte offset of dequantised tile `buffer` (0 or 1, code), as code.
  std::string packed_tile(const std::string& buffer) const;
  // Before the first copies: the block's scales (and zero points) for its K slice.
  std::string packed_preload() const;
  // Once the thread's own copies of the stage at byte `stage` (K step at `k0`) have
  // landed: the packed chunks it copied become its part of dequantised tile `buffer`.
  std::string packed_prepare(const std::string& indent, const std::string& stage, const std::string& k0,
                             const std::string& buffer) const;

private:
  // The dequantised operand's three steps (gemm_dequant_load.cpp).
  std::string dequant_setup(const std::string& outer0) const;
  std::string dequant_issue(const std::string& indent, const std::string& k0) const;
  std::string dequant_commit(const std::string& indent, const std::string& stage, const std::string& k0) const;
  std::string dequant_dst() const;
  std::string packed_setup(const std::string& outer0) const;
  std::string packed_issue(const std::string& indent, const std::string& stage, const std::string& k0) const;
  std::string packed_chunk_fast(const std::string& indent, const std::string& packed, const std::string& slab_at) const;
  std::string packed_chunk_float(const std::string& indent, const std::string& packed, const std::string& slab_at) const;
  // The thread's shared-memory chunk offsets (`a_dst`, or one per chunk where swizzles differ).
  std::string dst_setup() const;

  std::string chunk_guard(const std::string& i) const;
  std::string outer_in(const std::string& i) const;  // the chunk's row / columns inside M or N
  std::string k_in(const std::string& i, const std::string& k0, const std::string& j) const;

  const ir::Kernel& k_;
  bool a_;
  std::string param_;
  bool k_contiguous_ = true;
  bool async_ = true;
  bool vector_source_ = true;  // staged: each chunk's elements load as one aligned vector
  SharedTile tile_;
  int chunk_elems_ = 8;   // elements per 16-byte chunk of the shared tile
  int threads_ = 0;
  int chunks_ = 0;        // chunks in the tile
  int per_thread_ = 0;    // chunks per thread, rounded up
  int rows_per_pass_ = 0; // tile rows that T threads cover at once
  bool uniform_swizzle_ = true;  // every chunk of the thread has the same swizzle
  int64_t ld_ = 0;
  int64_t outer_ = 0;
  int tile_outer_ = 0;
  bool outer_always_in_ = false;
  bool k_always_in_ = false;
  bool dequant_ = false;     // i8 / i4 weights with group scales
  bool word_loads_ = false;  // dequantised: each chunk's 8 elements load as aligned words
  bool packed_ = false;      // dequantised: packed tiles by cp.async (see packed())
  ir::GemmPackedDequant pd_;
  int64_t ring_end_ = 0;
};

}  // namespace kiln::codegen
