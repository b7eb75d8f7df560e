// The attention kind's tile rules (schedule mma_sync, sm_80 and up).
//
// A block owns br query rows of one batch entry: `warps` warps of 16 rows each (one
// m16 fragment row), so br = 16 x warps. Each warp keeps its rows of Q as A fragments,
// its output rows as fp32 accumulators (Dv / 2 a thread), and per key tile the scores
// (bc / 2 a thread) and their probabilities as f16 / bf16 A fragments (bc / 4). Keys
// and values stream through `stages` shared-memory tiles of bc rows, after the query
// tile. The sweep covers br 64 / 128, bc 32 / 64 / 128 and 1 to 3 stages.
//
// Decoding (a few query rows against a long cache) splits the keys over `split_k`
// blocks (flash-decoding): each writes its rows'
// partial output, max and sum in fp32, and the last block of a query tile combines the
// splits in split order (the same bits every run).
//
// On sm_90a a config may also name schedule wgmma (FlashAttention-3's layout; its rules
// are in tile_config_attention_wgmma.cpp): the heuristic takes it for prompts of more
// than 64 query rows and the sweep tries its configs first.
#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "ir/error.h"
#include "ir/kernel.h"
#include "ir/tile_config.h"
#include "ir/tile_config_attention_wgmma.h"

namespace kiln::ir {

namespace {

constexpr int64_t kMaxGridX = std::numeric_limits<int32_t>::max();
constexpr int64_t kMaxGridY = 65535;
constexpr int kRowsPerWarp = 16;
// Decoding's query tile: four warps, though a few rows fill only the first. Blocks of
// one warp load their key tiles in four times as many steps a thread, and ptxas spills
// them (hundreds of bytes at head dim 128).
constexpr int kDecodeRows = 64;
// Registers a thread holds across the key loop (Q and P fragments, scores, output);
// past this, with addresses and the softmax's row state, ptxas spills. Measured with
// ptxas on sm_90a: two row tiles a warp at head dim 128 and 32 keys (184) take 251
// registers and no spill; at 64 keys (232) they spill 88-140 bytes. One tile at 128
// and 128 keys (192) spills too.
constexpr int64_t kMaxHeldRegisters = 184;
constexpr int64_t kMaxWorkspaceFloats = int64_t{1} << 24;  // 64 MiB of split partials
// Fewer query rows than this leave most of the wgmma schedule's 128-row tile idle; they
// run on mma_sync's 64-row tiles (or split the keys when decoding).
constexpr int64_t kWgmmaMinRows = 64;

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// A warp of one row tile holds its Q fragments (d / 4 a thread), the output (dv / 2),
// the scores (bc / 2) and their packed P (bc / 4); a warp of two tiles holds two of each
// but Q, of which it keeps one k-step's fragments (8).
int64_t held_registers(const Kernel& k, const TileConfig& c) {
  const AttentionCore& a = k.attention;
  const int tiles = attention_warp_row_tiles(c);
  return (tiles == 1 ? a.d / 4 : 8) + tiles * (a.dv / 2 + c.bc / 2 + c.bc / 4);
}

bool aligned_layout(const Kernel& k, int arg) {
  const AttentionLayout l = attention_layout(k, arg);
  bool ok = l.ld % 8 == 0;  // 16-byte rows of f16 / bf16 for cp.async
  for (int64_t s : l.batch_strides) ok = ok && s % 8 == 0;
  return ok;
}

int64_t query_tiles(const Kernel& k, int br) { return ceil_div(k.attention.sq, br); }

}  // namespace

int attention_threads(const TileConfig& c) { return 32 * c.warps; }

int attention_warp_row_tiles(const TileConfig& c) { return c.warps > 0 && c.br == 2 * kRowsPerWarp * c.warps ? 2 : 1; }

int attention_kv_splits(const TileConfig& c) { return std::max(1, c.split_k); }

int64_t attention_kv_chunk(const Kernel& k, const TileConfig& c) {
  return ceil_div(ceil_div(k.attention.skv, attention_kv_splits(c)), c.bc) * c.bc;
}

int64_t attention_workspace_floats(const Kernel& k, const TileConfig& c) {
  if (attention_kv_splits(c) == 1) return 0;
  const AttentionCore& a = k.attention;
  return int64_t{attention_kv_splits(c)} * attention_batch_count(a) * a.sq * (a.dv + 2);
}

int64_t attention_shared_bytes(const Kernel& k, const TileConfig& c) {
  if (c.schedule == kWgmma) return attention_wgmma_shared_bytes(k, c);
  const AttentionCore& a = k.attention;
  const int64_t esize = dtype_bytes(a.dtype);
  return (int64_t{c.br} * a.d + int64_t{c.stages} * c.bc * (a.d + a.dv)) * esize;
}

std::string attention_unsupported(const Kernel& k) {
  const AttentionCore& a = k.attention;
  if (target_sm() < 80) return fmt::format("the attention kernel needs sm_80 or newer, not sm_{}", target_sm());
  if (a.d != a.dv) return fmt::format("head dims of q / k ({}) and v ({}) differ", a.d, a.dv);
  if (a.d != 64 && a.d != 128) return fmt::format("head dim {} (the attention kernel takes 64 or 128)", a.d);
  for (auto [role, arg] : {std::pair{"q", a.q}, std::pair{"k", a.k}, std::pair{"v", a.v}})
    if (!aligned_layout(k, arg))
      return fmt::format("%{} ({}): rows and batch entries must start at multiples of 16 bytes", role,
                         k.args.at(static_cast<size_t>(arg)).name);
  if (attention_batch_count(a) > kMaxGridY)
    return fmt::format("{} batch entries; a launch covers at most {}", attention_batch_count(a), kMaxGridY);
  return "";
}

void validate_attention(const Kernel& k, const TileConfig& c) {
  auto fail = [&](const std::string& rule) {
    throw Error(fmt::format("kernel @{}: tile config {}: {}", k.name, c.str(), rule));
  };
  if (std::string why = attention_unsupported(k); !why.empty()) fail(why);
  if (c.threads || c.elems || c.vec || c.row_threads || c.rows || c.stream || c.shared_elems || c.cluster || c.cols ||
      c.k_threads || c.k_split || c.bm || c.bn || c.bk || c.warps_m || c.warps_n || c.group)
    fail("an attention config sets schedule, br, bc, warps, stages and split_k only");
  if (c.schedule == kWgmma) {
    validate_attention_wgmma(k, c);
    if (attention_shared_bytes(k, c) > max_block_shared_bytes())
      fail(fmt::format("it needs {} bytes of shared memory; a block has at most {} on sm_{}",
                       attention_shared_bytes(k, c), max_block_shared_bytes(), target_sm()));
    if (query_tiles(k, c.br) > kMaxGridX) fail("too many query tiles for one grid");
    return;
  }
  if (c.schedule != kMmaSync) fail("an attention config needs schedule mma_sync or wgmma");
  if (c.warps != 1 && c.warps != 2 && c.warps != 4 && c.warps != 8) fail("warps must be 1, 2, 4 or 8");
  if (c.br != kRowsPerWarp * c.warps && c.br != 2 * kRowsPerWarp * c.warps)
    fail(fmt::format("br must be {} or {} x warps (each warp owns one or two tiles of {} query rows)", kRowsPerWarp,
                     2 * kRowsPerWarp, kRowsPerWarp));
  if (c.bc != 32 && c.bc != 64 && c.bc != 128) fail("bc must be 32, 64 or 128");
  // Fewer warps copy their tiles in more steps a thread, and one stage keeps more of them
  // in flight: with two row tiles a warp ptxas then spills (12-56 bytes at head dim 128).
  if (attention_warp_row_tiles(c) == 2) {
    if (c.warps < 4) fail("two row tiles a warp take 4 or 8 warps (ptxas spills with fewer)");
    if (k.attention.d > 64 && c.stages < 2)
      fail("two row tiles a warp at head dim 128 take 2 stages or more (ptxas spills one)");
    if (k.attention.d > 64 && !attention_plain_score(k))
      fail("two row tiles a warp at head dim 128 take a plain q . k score (with a fused score body ptxas spills)");
  }
  if (c.stages < 1 || c.stages > 3) fail("stages must be 1 to 3");
  if (c.stages == 3 && c.bc == 32) fail("three stages take key tiles of 64 or 128 rows (ptxas spills the 32-row loop)");
  if (c.split_k < 0 || c.split_k > 64) fail("split_k (splits of the keys) must be 0 to 64");
  if (attention_kv_splits(c) > 1) {
    if ((attention_kv_splits(c) - 1) * attention_kv_chunk(k, c) >= k.attention.skv)
      fail(fmt::format("split_k = {} leaves an empty split of {} keys", c.split_k, k.attention.skv));
    if (attention_workspace_floats(k, c) > kMaxWorkspaceFloats)
      fail(fmt::format("split_k = {} needs {} MiB of partials, more than {} MiB", c.split_k,
                       attention_workspace_floats(k, c) * 4 >> 20, kMaxWorkspaceFloats * 4 >> 20));
  }
  if (held_registers(k, c) > kMaxHeldRegisters)
    fail(fmt::format("each thread would hold {} fragment and accumulator registers; more than {} spill",
                     held_registers(k, c), kMaxHeldRegisters));
  if (attention_shared_bytes(k, c) > max_block_shared_bytes())
    fail(fmt::format("it needs {} bytes of shared memory; a block has at most {} on sm_{}",
                     attention_shared_bytes(k, c), max_block_shared_bytes(), target_sm()));
  if (query_tiles(k, c.br) > kMaxGridX) fail("too many query tiles for one grid");
}

namespace {

// `tiles` (1 or 2) row tiles of 16 a warp.
TileConfig make(int br, int bc, int stages, int splits = 1, int tiles = 1) {
  TileConfig c;
  c.schedule = kMmaSync;
  c.br = br;
  c.bc = bc;
  c.warps = br / (kRowsPerWarp * tiles);
  c.stages = stages;
  c.split_k = splits > 1 ? splits : 0;
  return c;
}

bool legal(const Kernel& k, const TileConfig& c) {
  try {
    validate_attention(k, c);
    return true;
  } catch (const Error&) {
    return false;
  }
}

// Decoding's blocks: the keys split until about four blocks an SM run (each streams its
// share of the cache) and every split keeps at least two key tiles. Chunks round up to
// whole key tiles, so the count is then cut to the splits those chunks need: 32 splits
// of 4097 keys in chunks of 256 are 17, none of them empty.
int decode_splits(const Kernel& k, const TileConfig& c) {
  const int64_t blocks = query_tiles(k, c.br) * attention_batch_count(k.attention);
  int want = 1;
  while (blocks * want < 4 * kTargetSMs && want < 32 &&
         attention_kv_chunk(k, make(c.br, c.bc, c.stages, want * 2)) >= 2 * c.bc)
    want *= 2;
  for (; want > 1; want /= 2) {
    const int64_t chunk = attention_kv_chunk(k, make(c.br, c.bc, c.stages, want));
    const int splits = static_cast<int>(ceil_div(k.attention.skv, chunk));
    if (splits > 1 && legal(k, make(c.br, c.bc, c.stages, splits))) return splits;
  }
  return 1;
}

}  // namespace

std::vector<TileConfig> attention_wgmma_candidates(const Kernel& k) {
  std::vector<TileConfig> out;
  for (int br : {2 * kAttentionWgmmaConsumerRows, 3 * kAttentionWgmmaConsumerRows})
    for (int bc : {128, 64, 192})
      for (int stages : {2, 3}) {
        TileConfig c;
        c.schedule = kWgmma;
        c.br = br;
        c.bc = bc;
        c.warps = attention_wgmma_warps(br);
        c.stages = stages;
        if (legal(k, c)) out.push_back(c);
      }
  return out;
}

std::vector<TileConfig> attention_candidates(const Kernel& k) {
  std::vector<TileConfig> out;
  if (k.attention.sq > kWgmmaMinRows) out = attention_wgmma_candidates(k);
  for (int br : {128, 64})
    for (int bc : {128, 64, 32})
      for (int stages : {2, 3, 1})
        for (int tiles : {1, 2})
          if (TileConfig c = make(br, bc, stages, 1, tiles); legal(k, c)) out.push_back(c);
  if (k.attention.sq <= 64)  // decoding: the keys split over blocks
    for (int br : {64, 32})
      for (int bc : {128, 64, 32})
        for (int stages : {2, 3})
          for (int splits : {2, 4, 8, 16})
            if (TileConfig c = make(br, bc, stages, splits); legal(k, c)) out.push_back(c);
  if (out.empty()) out.push_back(attention_heuristic(k));  // throws the reason
  return out;
}

// On sm_90a, prompts run FlashAttention-3's schedule at its first legal config (128 keys
// a tile, two stages): on an H100 at 4096 tokens and head dim 128 it ran ahead of
// cuDNN (bench/NOTES.md).
TileConfig attention_heuristic(const Kernel& k) {
  if (k.attention.sq > kWgmmaMinRows)
    if (std::vector<TileConfig> wgmma = attention_wgmma_candidates(k); !wgmma.empty()) return wgmma.front();
  return attention_mma_sync_heuristic(k);
}

// 128 query rows with two stages of keys: 4 warps of two row tiles where the registers
// allow it (64 keys a tile at head dim 64, 32 at 128 with a plain score), else 8 warps of
// one, with as many keys a tile as the registers allow (128 at head dim 64, 64 at 128).
// Two tiles a warp share each K and V fragment: on an H100 they ran 3-8% faster than one
// (bench/NOTES.md). Each block reads all of K and V through L2 for its rows, so 128 rows
// halve that traffic against 64 (at 4096 tokens and head dim 128, 64-row blocks would move
// about 4.7 TB/s through L2 at FA2's rate); 64 rows when 128-row blocks would not give
// every SM two blocks. Causal at head dim 128 takes 64 rows on 4 warps of one tile (64
// keys): the diagonal's blocks then skip at half the grain, and on an H100 that ran 5%
// ahead of two tiles a warp at 32 keys, 0.942 against 0.992 ms at 4 x 16 x 4096
// (`kiln tune`, bench/NOTES.md).
TileConfig attention_mma_sync_heuristic(const Kernel& k) {
  if (std::string why = attention_unsupported(k); !why.empty())
    throw Error(fmt::format("kernel @{}: no attention config: {}", k.name, why));
  const int64_t batch = attention_batch_count(k.attention);
  if (k.attention.sq <= 16)
    for (int bc : {128, 64, 32})
      if (TileConfig c = make(kDecodeRows, bc, 2); legal(k, c)) {
        c = make(kDecodeRows, bc, 2, decode_splits(k, c));
        if (legal(k, c)) return c;
      }
  const bool causal_wide = k.attention.causal && k.attention.d > 64;
  const int br = query_tiles(k, 128) * batch >= 2 * kTargetSMs && !causal_wide ? 128 : 64;
  if (br == 128)
    for (int bc : {64, 32})
      if (TileConfig c = make(br, bc, 2, 1, 2); legal(k, c)) return c;
  for (int bc : {128, 64, 32})
    if (TileConfig c = make(br, bc, 2); legal(k, c)) return c;
  TileConfig c = make(br, 32, 2);
  validate_attention(k, c);  // throws the reason
  return c;
}

}  // namespace kiln::ir
