// The gemm kind's tile rules: which block tiles, warp layouts, pipeline depths and
// K splits a gemm kernel may use (validate), the list the autotuner sweeps
// (candidates) and the default picked from the shapes (heuristic).
//
// mma_sync: a block of warps_m x warps_n warps computes a bm x bn output tile; each
// warp owns (bm / warps_m) x (bn / warps_n) of it as m16n8 accumulator fragments, so
// both parts are multiples of 16 and at most 64 x 64 (128 fp32 accumulators per
// thread: more spills). Shared memory holds `stages` (bm + bn) x bk operand tiles,
// then, after the main loop, a 16-row strip of each warp's part for the epilogue.
// simt: 256 threads in a 16 x 16 grid, each computing a (bm / 16) x (bn / 16) block of
// the tile with fp32 FFMA, from two stages of bk-deep tiles.
// wgmma (sm_90a): its rules are ir/tile_config_gemm_wgmma.cpp, which these call.
#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "ir/error.h"
#include "ir/kernel.h"
#include "ir/tile_config.h"

namespace kiln::ir {

namespace {

constexpr int64_t kMaxGridX = std::numeric_limits<int32_t>::max();
constexpr int64_t kMaxGridYZ = 65535;
constexpr int64_t kMaxWorkspaceFloats = int64_t{1} << 24;  // 64 MiB of split-K partials
constexpr int kMaxWarpTile = 64 * 64;                      // elements of a warp's accumulators
constexpr int64_t kMaxPackedSlabBytes = 65536;           // a packed dequant's tile and slabs
constexpr int64_t kMaxHeldRegisters = 160;                 // accumulators + staged operand registers
constexpr int64_t kMaxElementChunks = 8;                   // chunks a thread loads element by element
constexpr int kSimtThreads = 256;                          // a 16 x 16 thread grid
constexpr int kSimtGrid = 16;

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

int default_schedule(const Kernel& k) {
  return k.gemm.operand_dtype == DType::f32 && !k.gemm.tf32 ? kSimt : kMmaSync;
}

int64_t output_tiles(const Kernel& k, int bm, int bn) {
  return ceil_div(k.gemm.m, bm) * ceil_div(k.gemm.n, bn);
}

}  // namespace

int gemm_threads(const TileConfig& c) {
  if (c.schedule == kWgmma) return wgmma_threads(c);
  if (c.schedule == kGemv || c.schedule == kDequantWgmma || c.schedule == kDequantMma) return 32 * c.warps_n;
  return c.schedule == kSimt ? kSimtThreads : 32 * c.warps_m * c.warps_n;
}

int64_t gemm_k_slice(const Kernel& k, const TileConfig& c) {
  const int64_t split = std::max(1, c.split_k);
  const int64_t step = c.schedule == kGemv ? int64_t{c.bk} * c.warps_n : c.bk;  // gemv: a block's step of K
  return ceil_div(ceil_div(k.gemm.k, split), step) * step;
}

GemmPackedDequant gemm_packed_dequant(const Kernel& k, const TileConfig& c) {
  const GemmCore& g = k.gemm;
  const GemmDequant& d = g.b.dequant;
  GemmPackedDequant p;
  const int bits = k.args.at(static_cast<size_t>(g.b.arg)).type.dtype == DType::i4 ? 4 : 8;
  p.packed_row_bytes = c.bk * bits / 8;
  p.packed_tile_bytes = c.bn * p.packed_row_bytes;
  // A slice starts at a multiple of bk, not always of the group: one group more.
  const int64_t slice = gemm_k_slice(k, c);
  p.groups = d.group >= g.k ? 1 : std::min(g.k / d.group, (slice - 1) / d.group + 2);
  int64_t widest = 0;
  for (int arg : {d.scale, d.zero})
    if (arg >= 0) widest = std::max<int64_t>(widest, dtype_bytes(k.args.at(static_cast<size_t>(arg)).type.dtype));
  // Up to 2 bytes before the row's first group, when its address is not word aligned.
  p.slab_row_words = ceil_div(p.groups * widest + (widest < 4 ? 2 : 0), 4);
  const int64_t esize = dtype_bytes(g.operand_dtype);
  const int64_t slab = ceil_div(int64_t{c.bn} * p.slab_row_words * 4, 16) * 16;
  p.tile_bytes = int64_t{c.bn} * c.bk * esize;
  p.scale_offset = 2 * p.tile_bytes;
  p.bytes = p.scale_offset + slab;
  if (d.zero >= 0) {
    p.zero_offset = p.bytes;
    p.bytes += slab;
  }
  return p;
}

bool gemm_dequant_packed(const Kernel& k, const TileConfig& c) {
  const GemmCore& g = k.gemm;
  const GemmDequant& d = g.b.dequant;
  if (c.schedule != kMmaSync || !d.active() || target_sm() < 80) return false;
  const int bits = k.args.at(static_cast<size_t>(g.b.arg)).type.dtype == DType::i4 ? 4 : 8;
  if (g.k * bits % 128 != 0) return false;  // rows of packed weights 16-byte aligned
  if (c.bk * bits % 128 != 0) return false;  // whole 16-byte chunks a stage
  for (int arg : {d.scale, d.zero})
    if (arg >= 0 && !is_float(k.args.at(static_cast<size_t>(arg)).type.dtype)) return false;
  // One slab layout for both: zero points as wide as the scales.
  if (d.zero >= 0 && dtype_bytes(k.args.at(static_cast<size_t>(d.zero)).type.dtype) !=
                         dtype_bytes(k.args.at(static_cast<size_t>(d.scale)).type.dtype))
    return false;
  return gemm_packed_dequant(k, c).bytes <= kMaxPackedSlabBytes;
}

int64_t gemm_shared_bytes(const Kernel& k, const TileConfig& c) {
  if (c.schedule == kWgmma) return wgmma_shared_bytes(k, c);
  if (c.schedule == kGemv) return gemv_shared_bytes(k, c);
  if (c.schedule == kDequantWgmma || c.schedule == kDequantMma) return dequant_wgmma_shared_bytes(k, c);
  const int64_t esize = dtype_bytes(k.gemm.operand_dtype);
  int64_t pipeline = int64_t{c.stages} * (int64_t{c.bm} + c.bn) * c.bk * esize;
  if (gemm_dequant_packed(k, c))
    pipeline = int64_t{c.stages} * (int64_t{c.bm} * c.bk * esize + gemm_packed_dequant(k, c).packed_tile_bytes) +
               gemm_packed_dequant(k, c).bytes;
  if (c.schedule == kSimt) return pipeline;
  // The epilogue's strip: 16 rows of each warp's part, in fp32, rows padded by 4.
  const int64_t strip = int64_t{c.warps_m} * c.warps_n * 16 * (c.bn / std::max(1, c.warps_n) + 4) * 4;
  return std::max(pipeline, strip);
}

int64_t gemm_workspace_floats(const Kernel& k, const TileConfig& c) {
  if (c.split_k <= 1) return 0;
  return int64_t{c.split_k} * gemm_batch_count(k.gemm) * k.gemm.m * k.gemm.n;
}

void validate_gemm(const Kernel& k, const TileConfig& c) {
  auto fail = [&](const std::string& rule) {
    throw Error(fmt::format("kernel @{}: tile config {}: {}", k.name, c.str(), rule));
  };
  const GemmCore& g = k.gemm;
  if (c.cluster > 1 && c.schedule != kWgmma)
    fail("clusters of blocks take the wgmma schedule only (they share its TMA loads)");
  if (g.b.dequant.interleave != 0 && c.schedule != kGemv)
    fail("weights in the interleaved layout are read by schedule gemv only (at most 16 rows of activations)");
  if (c.schedule == kGemv) {
    validate_gemm_gemv(k, c);
    return;
  }
  if (c.schedule == kDequantWgmma) {
    validate_gemm_dequant_wgmma(k, c);
    return;
  }
  if (c.schedule == kDequantMma) {
    validate_gemm_dequant_mma(k, c);
    return;
  }
  if (c.schedule == kWgmma) {
    validate_gemm_wgmma(k, c);
    if (c.group < 1 || c.group > 64) fail("group must be 1 to 64 tile rows");
    if (gemm_shared_bytes(k, c) > max_block_shared_bytes())
      fail(fmt::format("it needs {} bytes of shared memory; a block has at most {} on sm_{}", gemm_shared_bytes(k, c),
                       max_block_shared_bytes(), target_sm()));
    if (gemm_batch_count(g) * output_tiles(k, c.bm, c.bn) > kMaxGridX) fail("too many output tiles");
    return;
  }
  const bool tensor_cores = g.operand_dtype != DType::f32 || g.tf32;
  if (c.schedule == kMmaSync && !tensor_cores)
    fail("schedule mma_sync multiplies f16, bf16 or TF32 operands; exact f32 products take schedule simt");
  if (c.schedule == kSimt && tensor_cores)
    fail(fmt::format("schedule simt multiplies exact f32; {} products take schedule mma_sync", gemm_compute_name(g)));
  if (c.schedule != kMmaSync && c.schedule != kSimt) fail("a gemm config needs schedule mma_sync, simt, wgmma, gemv, dequant_wgmma or dequant_mma");
  const int esize = dtype_bytes(g.operand_dtype);
  if (c.schedule == kMmaSync) {
    if (c.warps_m < 1 || c.warps_n < 1 || c.warps_m * c.warps_n > 8)
      fail("warps_m x warps_n must be 1 to 8 warps");
    if (c.bm % (16 * c.warps_m) != 0 || c.bn % (16 * c.warps_n) != 0)
      fail(fmt::format("a warp's part ({} x {}) must be a multiple of 16 in both dims", c.bm / c.warps_m,
                       c.bn / c.warps_n));
    if ((c.bm / c.warps_m) * (c.bn / c.warps_n) > kMaxWarpTile)
      fail(fmt::format("a warp's part {} x {} holds more than 64 x 64 accumulators", c.bm / c.warps_m,
                       c.bn / c.warps_n));
    // Rows of K of 64 or 128 bytes: an even number of products (32 bytes of K each) per
    // stage, which the two fragment buffers take in turn.
    if ((c.bk * esize != 64 && c.bk * esize != 128))
      fail(fmt::format("bk = {}: a tile row of K must be 64 or 128 bytes ({}-byte elements)", c.bk, esize));
    for (int extent : {c.bm, c.bn})
      if (extent * esize < 32 || (extent & (extent - 1)) != 0 || extent > 256)
        fail(fmt::format("bm and bn must be powers of two from {} to 256", 32 / esize));
    if (c.stages < 2 || c.stages > 8) fail("stages must be 2 to 8");
  } else {
    if (c.warps_m != 0 || c.warps_n != 0) fail("schedule simt has a fixed 16 x 16 thread grid; leave warps unset");
    for (int extent : {c.bm, c.bn})
      if (extent != 32 && extent != 64 && extent != 128) fail("bm and bn must be 32, 64 or 128");
    if (c.bk != 8 && c.bk != 16 && c.bk != 32) fail("bk must be 8, 16 or 32");
    if (c.stages != 2) fail("schedule simt double-buffers: stages = 2");
  }
  // Registers: the accumulators, and the K step in flight for operands that pass
  // through registers; past this budget (of 255, with fragments and addresses) ptxas
  // spills. Element-by-element loads (unaligned operands) also need a register per
  // element in flight, so fewer of their chunks fit.
  const int threads = gemm_threads(c);
  int64_t held = int64_t{c.bm} * c.bn / threads, element_chunks = 0;
  for (bool a : {true, false}) {
    if (gemm_operand_async(k, a) || (!a && gemm_dequant_packed(k, c))) continue;
    const int chunk = 16 / esize;  // elements per 16-byte chunk of the shared tile
    const int64_t per_thread = ceil_div(int64_t{a ? c.bm : c.bn} * c.bk / chunk, threads);
    const int src_bytes = dtype_bytes(k.args.at(static_cast<size_t>((a ? g.a : g.b).arg)).type.dtype);
    const bool dequant = (a ? g.a : g.b).dequant.active();  // packed words, a scale and a zero point a chunk
    held += per_thread * (dequant ? 4 : chunk * src_bytes / 4);
    if (dequant ? !gemm_dequant_word_loads(k) : !gemm_operand_vector_loads(k, a)) element_chunks += per_thread;
  }
  if (c.schedule == kSimt && element_chunks > 0 && c.bm * c.bn > 64 * 128)
    fail("fp32 operands loaded element by element keep simt tiles at 64 x 128 or smaller (more spills)");
  if (held > kMaxHeldRegisters || element_chunks > kMaxElementChunks)
    fail(fmt::format("each thread would hold {} accumulator and operand registers and {} chunks loaded element by "
                     "element; more than {} and {} spill",
                     held, element_chunks, kMaxHeldRegisters, kMaxElementChunks));
  if (c.group < 1 || c.group > 64) fail("group must be 1 to 64 tile rows");
  if (c.split_k < 1 || c.split_k > kMaxGridYZ) fail(fmt::format("split_k must be 1 to {}", kMaxGridYZ));
  if (c.split_k > 1) {
    const int64_t slice = gemm_k_slice(k, c);
    if ((c.split_k - 1) * slice >= g.k)
      fail(fmt::format("split_k = {} leaves an empty slice of K = {} (slices of {})", c.split_k, g.k, slice));
    if (gemm_workspace_floats(k, c) > kMaxWorkspaceFloats)
      fail(fmt::format("split_k = {} needs {} MiB of partials, more than {} MiB", c.split_k,
                       gemm_workspace_floats(k, c) * 4 >> 20, kMaxWorkspaceFloats * 4 >> 20));
  }
  if (gemm_shared_bytes(k, c) > max_block_shared_bytes())
    fail(fmt::format("it needs {} bytes of shared memory; a block has at most {} on sm_{}", gemm_shared_bytes(k, c),
                     max_block_shared_bytes(), target_sm()));
  if (output_tiles(k, c.bm, c.bn) > kMaxGridX) fail("too many output tiles for one grid");
  if (gemm_batch_count(g) > kMaxGridYZ)
    fail(fmt::format("{} batch entries; a launch covers at most {}", gemm_batch_count(g), kMaxGridYZ));
}

namespace {

// K slices for a product whose tiles do not fill the GPU: powers of two while the
// blocks stay within a few per SM and every slice keeps 8 or more K steps.
std::vector<int> split_choices(const Kernel& k, int bm, int bn, int bk) {
  const int64_t tiles = output_tiles(k, bm, bn) * gemm_batch_count(k.gemm);
  std::vector<int> splits{1};
  if (tiles >= kTargetSMs) return splits;
  for (int s = 2; s <= 16 && tiles * s <= 4 * kTargetSMs && k.gemm.k / s >= 8 * bk; s *= 2) splits.push_back(s);
  return splits;
}

// The default split of K for a product whose tiles leave SMs idle: about two blocks an
// SM (measured on the H200: for 16 x 8192 x 8192, two slices of 128 tiles beat four
// and six), each slice keeping 4 or more K steps; none when the tiles fill the GPU.
int default_split(const Kernel& k, TileConfig c) {
  c.split_k = 1;
  const int64_t tiles = output_tiles(k, c.bm, c.bn) * gemm_batch_count(k.gemm);
  if (tiles >= kTargetSMs) return 1;
  const int64_t wanted = (2 * kTargetSMs + tiles / 2) / tiles;  // rounded to the nearest
  const int64_t by_k = std::max<int64_t>(1, k.gemm.k / (4 * c.bk));
  c.split_k = static_cast<int>(std::clamp<int64_t>(std::min(wanted, by_k), 1, 16));
  while (c.split_k > 1 && (c.split_k - 1) * gemm_k_slice(k, c) >= k.gemm.k) --c.split_k;  // no empty slice
  return c.split_k;
}

struct MmaShape {
  int bm, bn, warps_m, warps_n;
};

// Block tiles the sweep tries, large first; a tile much larger than the product is dropped.
constexpr MmaShape kMmaShapes[] = {
    {128, 256, 2, 4}, {256, 128, 4, 2}, {128, 128, 2, 2}, {128, 128, 2, 4}, {64, 256, 1, 4},
    {64, 128, 1, 4},  {128, 64, 2, 2},  {64, 64, 2, 2},   {32, 128, 1, 4},  {32, 256, 1, 8},
    {16, 128, 1, 4},  {16, 256, 1, 8},  {16, 64, 1, 4},   {32, 64, 1, 4},
};

// A tile extent worth trying for a product extent: not much larger than it, and not
// much smaller where the product is large (small tiles read A and B many times over).
bool fits(int64_t extent, int tile) { return (tile <= 64 || tile < 2 * extent) && (extent < 512 || tile >= 64); }

}  // namespace

namespace {

std::vector<TileConfig> gemm_sweep(const Kernel& k) {
  std::vector<TileConfig> out;
  auto keep = [&](const TileConfig& c) {
    try {
      validate_gemm(k, c);
      out.push_back(c);
    } catch (const Error&) {
    }
  };
  const GemmCore& g = k.gemm;
  if (g.b.dequant.interleave != 0) return gemm_gemv_sweep(k);  // the layout only the gemv reads
  out = gemm_wgmma_sweep(k);  // exact f32 products too, where they widen fp8 operands
  if (default_schedule(k) == kSimt) {
    for (int bm : {64, 128})
      for (int bn : {64, 128})
        for (int bk : {8, 16}) {
          if (!fits(g.m, bm) || !fits(g.n, bn)) continue;
          for (int split : split_choices(k, bm, bn, bk))
            keep(TileConfig{.schedule = kSimt, .bm = bm, .bn = bn, .bk = bk, .stages = 2, .group = 8, .split_k = split});
        }
    return out;
  }
  for (const TileConfig& c : gemm_gemv_sweep(k)) out.push_back(c);
  for (const TileConfig& c : gemm_dequant_wgmma_sweep(k)) out.push_back(c);
  for (const TileConfig& c : gemm_dequant_mma_sweep(k)) out.push_back(c);
  const int esize = dtype_bytes(g.operand_dtype);
  for (const MmaShape& s : kMmaShapes) {
    if (!fits(g.m, s.bm) || !fits(g.n, s.bn)) continue;
    for (int bk : {64 / esize, 128 / esize}) {  // rows of 64 and 128 bytes
      for (int stages : {3, 4, 6, 8}) {
        // Deeper pipelines for packed weights only, whose stages are small.
        if (stages > 4 && !gemm_dequant_packed(k, TileConfig{.schedule = kMmaSync, .bn = s.bn, .bk = bk})) continue;
        for (int split : split_choices(k, s.bm, s.bn, bk))
          keep(TileConfig{.schedule = kMmaSync, .bm = s.bm, .bn = s.bn, .bk = bk, .warps_m = s.warps_m,
                          .warps_n = s.warps_n, .stages = stages, .group = 8, .split_k = split});
      }
    }
  }
  return out;
}

bool valid(const Kernel& k, const TileConfig& c) {
  try {
    validate_gemm(k, c);
    return true;
  } catch (const Error&) {
    return false;
  }
}

// The preferred config, else the first legal one of ever smaller tiles and shorter
// pipelines: a heuristic always returns a legal config.
TileConfig first_legal(const Kernel& k, TileConfig c) {
  for (TileConfig t = c;; ) {
    t.split_k = default_split(k, t);
    for (int stages = t.stages; stages >= 2; --stages) {
      t.stages = stages;
      if (valid(k, t)) return t;
    }
    t.stages = c.stages;
    // Halve K's step first (down to 64 bytes of K), then the larger of the two extents
    // (and the warps along it).
    if (t.bk * dtype_bytes(k.gemm.operand_dtype) > 64 && t.schedule == kMmaSync) {
      t.bk /= 2;
    } else if (t.bm >= t.bn && t.bm > 32) {
      t.bm /= 2;
      if (t.warps_m > 1) t.warps_m /= 2;
    } else if (t.bn > 32) {
      t.bn /= 2;
      if (t.warps_n > 1) t.warps_n /= 2;
    } else if (t.bk > 8) {
      t.bk /= 2;
    } else {
      throw Error(fmt::format("kernel @{}: no legal gemm config for {}x{}x{}", k.name, k.gemm.m, k.gemm.n,
                              k.gemm.k));
    }
  }
}

}  // namespace

TileConfig gemm_heuristic(const Kernel& k) {
  const GemmCore& g = k.gemm;
  // Before the f32 rule below: fp8 operands widened to f32 multiply exactly on wgmma.
  if (std::optional<TileConfig> hopper = gemm_wgmma_heuristic(k)) return *hopper;
  if (default_schedule(k) == kSimt) {
    const int bm = g.m <= 32 ? 32 : g.m <= 64 ? 64 : 128, bn = g.n <= 32 ? 32 : g.n <= 64 ? 64 : 128;
    return first_legal(k, TileConfig{.schedule = kSimt, .bm = bm, .bn = bn, .bk = 16, .stages = 2, .group = 8,
                                     .split_k = 1});
  }
  // Dequantised weights for a few rows: the weight's bytes are the time; gemv streams them.
  if (g.b.dequant.active() && gemm_gemv_applies(k)) return gemm_gemv_heuristic(k);
  // More rows against a dequantised weight on sm_90a: dequant_wgmma, the weight dequantised
  // in registers as wgmma's A operand. With the copies' addresses kept out of the step loop
  // the tuner put it first at 64 x 8192 x 8192 (i4, groups of 128) on an H100: 45.0 us for
  // this config against 52.2 for mma_sync's best and 55.0 for dequant_mma's (the same on
  // mma.sync, a tuning candidate; bench/NOTES.md). Where none fits, the mma_sync rule below.
  if (g.b.dequant.active() && gemm_dequant_wgmma_applies(k)) {
    try {
      return gemm_dequant_wgmma_heuristic(k);
    } catch (const Error&) {
    }
  }
  // Dequantised weights for more rows (dequantised in mma_sync's load stage): the tuner's
  // best at 64 x 8192 x 8192 (i4, groups of 128, bf16; one sweep on the H200, bench/NOTES.md),
  // 64 x 64 tiles of four warps, 64 elements of K a stage and three stages: 66.7 us
  // against 77.6 us for the narrow tiles below.
  if (g.b.dequant.active() && g.m <= 128)
    return first_legal(k, TileConfig{.schedule = kMmaSync, .bm = 64, .bn = 64, .bk = 64, .warps_m = 2, .warps_n = 2,
                                     .stages = 3, .group = 8, .split_k = 1});
  // Measured on the H200 (f16, bench/NOTES.md): 128 x 128 tiles of four 64 x 64 warps,
  // 128 bytes of K a stage and three stages (two blocks an SM) are within a few percent
  // of the best config at 4096^3 and 8192^3 and ahead at 32 x 1024^3. Narrow products
  // (decode-like M) take one row of m16 fragments with four warps side by side along N
  // and a fourth stage: they stream B.
  const int bk = 128 / dtype_bytes(g.operand_dtype);
  MmaShape s{128, 128, 2, 2};
  if (g.m <= 16) s = {16, 64, 1, 4};
  else if (g.m <= 32) s = {32, 64, 1, 4};
  else if (g.m <= 64) s = {64, 128, 1, 4};
  else if (g.n <= 64) s = {128, 64, 2, 2};
  // Operands that go through registers (unaligned rows, prologues) hold a K step in
  // registers: 64 bytes of K keep that within the register budget (measured best at
  // 4093 x 4099 x 4097: 128 x 128 x 32, three stages, 1.03 ms against 1.11-1.56 for the
  // other tiles).
  const bool staged = !gemm_operand_async(k, true) || !gemm_operand_async(k, false);
  // Large single products with aligned operands: 128 x 256 tiles of eight 64 x 64 warps
  // and three stages (one block an SM) measured 3-5% ahead of 128 x 128 at 4096^3 and
  // 8192^3, f16 and bf16 (`bench/config-ab.sh` on sm_90, bench/NOTES.md, 2026-12-02).
  if (!staged && g.m >= 2048 && g.n >= 2048 && gemm_batch_count(g) == 1) s = {128, 256, 2, 4};
  TileConfig c{.schedule = kMmaSync, .bm = s.bm, .bn = s.bn, .bk = staged ? bk / 2 : bk, .warps_m = s.warps_m,
               .warps_n = s.warps_n, .stages = s.bm <= 64 ? 4 : 3, .group = 8, .split_k = 1};
  return first_legal(k, c);
}

namespace {

// The configs of each schedule taken in turn (each schedule's in its own order), so that
// a sweep its budget cuts short has tried every schedule: at 16 rows of a quantised
// product the four schedules hold 414 configs, and a 10 s budget compiled the first ones
// only, all of one schedule.
std::vector<TileConfig> schedules_in_turn(const std::vector<TileConfig>& configs) {
  std::vector<std::vector<TileConfig>> by_schedule;
  std::vector<int> order;
  for (const TileConfig& c : configs) {
    auto at = std::find(order.begin(), order.end(), c.schedule);
    if (at == order.end()) {
      order.push_back(c.schedule);
      by_schedule.emplace_back();
      at = order.end() - 1;
    }
    by_schedule[static_cast<size_t>(at - order.begin())].push_back(c);
  }
  std::vector<TileConfig> out;
  for (size_t turn = 0; out.size() < configs.size(); ++turn)
    for (const std::vector<TileConfig>& list : by_schedule)
      if (turn < list.size()) out.push_back(list[turn]);
  return out;
}

}  // namespace

std::vector<TileConfig> gemm_candidates(const Kernel& k) {
  std::vector<TileConfig> out = schedules_in_turn(gemm_sweep(k));
  // The default always takes part: the sweep times it first and keeps it on a tie.
  const TileConfig fallback = gemm_heuristic(k);
  if (std::find(out.begin(), out.end(), fallback) == out.end()) out.insert(out.begin(), fallback);
  return out;
}

}  // namespace kiln::ir
