// The attention kind's wgmma schedule rules (ir/tile_config_attention_wgmma.cpp), used by
// the attention rules and the wgmma attention emitter.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "ir/tile_config.h"

namespace kiln::ir {

struct Kernel;

// A block: a producer warpgroup and two consumer warpgroups of 64 query rows (br = 128,
// 12 warps) or three (br = 192, 16 warps).
inline constexpr int kAttentionWgmmaConsumerRows = 64;
inline constexpr int kAttentionWgmmaProducerRegisters = 24;  // what setmaxnreg leaves the producer

int attention_wgmma_consumers(const TileConfig& c);
// The warps of a block of `br` query rows: the producer's four and four a consumer.
int attention_wgmma_warps(int br);
// What setmaxnreg gives each consumer thread: the file (64K registers) less the producer's
// share, split between the consumers.
int attention_wgmma_consumer_registers(const TileConfig& c);

// Why the wgmma schedule cannot run the kernel (the target, an operand a tensor map
// cannot describe); empty when it can.
std::string attention_wgmma_unsupported(const Kernel& k);
// The rank of the tensor map of q, k or v: the head dim, the sequence and the batch
// dims along which the operand varies.
int attention_wgmma_map_rank(const Kernel& k, int arg);
void validate_attention_wgmma(const Kernel& k, const TileConfig& c);
// The legal wgmma configs of `k` (bc 128, 64 or 192; two or three stages), the
// heuristic's first; none off sm_90a.
std::vector<TileConfig> attention_wgmma_candidates(const Kernel& k);
int64_t attention_wgmma_shared_bytes(const Kernel& k, const TileConfig& c);
// Work items: a row tile of br query rows of one batch entry each; the persistent blocks
// that take them, one an SM (fewer when there are fewer items).
int64_t attention_wgmma_row_tiles(const Kernel& k, const TileConfig& c);
int64_t attention_wgmma_items(const Kernel& k, const TileConfig& c);
int64_t attention_wgmma_blocks(const Kernel& k, const TileConfig& c);

}  // namespace kiln::ir
