// The attention kind's wgmma schedule (sm_90a), FlashAttention-3's layout: a block is a
// producer warpgroup, whose first thread has the copy engine (TMA) load the query tile
// once and the key and value tiles into `stages` pairs of shared-memory buffers, and two
// or three consumer warpgroups of 64 query rows each (br = 128 or 192, warps = 12 or 16:
// a third consumer hides more of the softmax behind the others' products where the
// products are short, at head dim 64, as FlashAttention-3 does there). A consumer holds its
// scores (bc / 2 registers a thread), their probabilities as A fragments (bc / 4) and its
// output rows (dv / 2) across the key loop; the rest of the file goes to the producer's
// share, which setmaxnreg moves to the consumers.
#include <fmt/format.h>

#include <algorithm>

#include "ir/error.h"
#include "ir/kernel.h"
#include "ir/tile_config.h"
#include "ir/tile_config_attention_wgmma.h"

namespace kiln::ir {

namespace {

// Past the consumer's claim less this many, registers held across the loop spill (ptxas
// on sm_90a: 208 held of 240 and 128 of 160 compile clean; 160 of 160 spill and
// serialise the products). Under a causal mask two consumers need 4 more: 208 of 240
// spill 4-16 bytes there (the item's diagonal bounds), while 128 of 160 stay clean.
constexpr int64_t kLoopRegisters = 32;
constexpr int64_t kCausalLoopRegisters = 4;

int64_t loop_registers(const Kernel& k, const TileConfig& c) {
  return kLoopRegisters + (k.attention.causal && attention_wgmma_consumers(c) == 2 ? kCausalLoopRegisters : 0);
}
constexpr int kMaxTmaRank = 5;
constexpr int kRegisterFile = 65536;
constexpr int kWarpgroupThreads = 128;

int64_t held_registers(const Kernel& k, const TileConfig& c) {
  return c.bc / 2 + c.bc / 4 + k.attention.dv / 2;
}

}  // namespace

int attention_wgmma_consumers(const TileConfig& c) { return c.br / kAttentionWgmmaConsumerRows; }

int attention_wgmma_warps(int br) { return 4 * (br / kAttentionWgmmaConsumerRows + 1); }

// 240 for two consumers, 160 for three (setmaxnreg counts in eights).
int attention_wgmma_consumer_registers(const TileConfig& c) {
  const int per_thread =
      (kRegisterFile / kWarpgroupThreads - kAttentionWgmmaProducerRegisters) / attention_wgmma_consumers(c);
  return std::min(240, per_thread / 8 * 8);
}

int attention_wgmma_map_rank(const Kernel& k, int arg) {
  int rank = 2;
  for (int64_t s : attention_layout(k, arg).batch_strides) rank += s != 0;
  return rank;
}

std::string attention_wgmma_unsupported(const Kernel& k) {
  if (target_sm() < 90 || !target_arch_specific())
    return fmt::format("schedule wgmma needs sm_90a; the target is {}", target_arch());
  const AttentionCore& a = k.attention;
  for (auto [role, arg] : {std::pair{"q", a.q}, std::pair{"k", a.k}, std::pair{"v", a.v}})
    if (attention_wgmma_map_rank(k, arg) > kMaxTmaRank)
      return fmt::format("%{} ({}) varies along {} batch dims; a tensor map holds at most {}", role,
                         k.args.at(static_cast<size_t>(arg)).name, attention_wgmma_map_rank(k, arg) - 2,
                         kMaxTmaRank - 2);
  return "";
}

int64_t attention_wgmma_shared_bytes(const Kernel& k, const TileConfig& c) {
  const AttentionCore& a = k.attention;
  const int64_t esize = dtype_bytes(a.dtype);
  // 1024 bytes to align the swizzled tiles, then the barriers (a full and an empty one for
  // the query tile and for each key and value buffer) and the work item's slot.
  return 1024 + (int64_t{c.br} * a.d + int64_t{c.stages} * c.bc * (a.d + a.dv)) * esize + 8 * (2 + 4 * c.stages) + 8;
}

int64_t attention_wgmma_row_tiles(const Kernel& k, const TileConfig& c) { return (k.attention.sq + c.br - 1) / c.br; }

int64_t attention_wgmma_items(const Kernel& k, const TileConfig& c) {
  return attention_wgmma_row_tiles(k, c) * attention_batch_count(k.attention);
}

int64_t attention_wgmma_blocks(const Kernel& k, const TileConfig& c) {
  return std::min<int64_t>(attention_wgmma_items(k, c), kTargetSMs);
}

void validate_attention_wgmma(const Kernel& k, const TileConfig& c) {
  auto fail = [&](const std::string& rule) {
    throw Error(fmt::format("kernel @{}: tile config {}: {}", k.name, c.str(), rule));
  };
  if (std::string why = attention_wgmma_unsupported(k); !why.empty()) fail(why);
  if ((c.br != 128 && c.br != 192) || c.warps != attention_wgmma_warps(c.br))
    fail("schedule wgmma takes br = 128 with warps = 12 or br = 192 with warps = 16 (a producer warpgroup and two "
         "or three consumers of 64 rows)");
  if (c.bc != 64 && c.bc != 128 && c.bc != 192) fail("bc must be 64, 128 or 192 under schedule wgmma");
  if (c.stages < 2 || c.stages > 4) fail("stages must be 2 to 4 under schedule wgmma");
  if (c.split_k > 1) fail("schedule wgmma does not split the keys (decoding runs on mma_sync)");
  if (const int64_t most = attention_wgmma_consumer_registers(c) - loop_registers(k, c); held_registers(k, c) > most)
    fail(fmt::format("each consumer thread would hold {} score, probability and output registers; more than {} spill "
                     "with {} consumers{}",
                     held_registers(k, c), most, attention_wgmma_consumers(c),
                     k.attention.causal ? " under a causal mask" : ""));
}

}  // namespace kiln::ir
