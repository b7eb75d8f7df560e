// The attention emitter: FlashAttention-2's schedule on mma.sync (sm_80 and up).
//
// A block owns br query rows of one batch entry; each of its warps owns 16 of them and
// keeps them in registers as m16n8k16 A fragments. Key and value tiles of bc rows
// stream through `stages` swizzled shared-memory buffers (cp.async, one group per
// tile). For each key tile a warp computes its 16 x bc scores S = Q K^T on mma.sync
// (ldmatrix for K), runs the online softmax on them in registers (running max and sum
// per row, exp2 with the scale folded into log2 e), converts P to f16 / bf16 in the
// registers that are the A operand of O += P V (ldmatrix.trans for V), and rescales O.
// Under a causal mask the block stops at the tile holding its last row's diagonal and
// heavy blocks start first. After the loop each warp divides by the row sums and writes
// its rows through its part of the query tile as 16-byte stores.
//
// Decoding splits the keys over blocks and combines their partial rows. On sm_90a, the
// config's `schedule = wgmma` picks FlashAttention-3's schedule instead
// (codegen/attention_wgmma_emitter.cpp).
#pragma once
#include <string>
#include <vector>

#include "codegen/emit.h"
#include "ir/kernel.h"

namespace kiln::codegen {

// The kernel's code without the file's prelude. Throws kiln::Error for a kernel that
// does not verify or a config that is not legal.
std::string emit_attention(const ir::Kernel& k);

// Grid x: query tiles; y: batch entries. Dynamic shared memory: ir::attention_shared_bytes.
LaunchDims attention_launch_dims(const ir::Kernel& k);

// The wgmma schedule (sm_90a): its code, and its launch with the tensor maps of q, k
// and v after the pointers.
std::string emit_attention_wgmma(const ir::Kernel& k);
LaunchDims attention_wgmma_launch_dims(const ir::Kernel& k);

// The device function computing the score at one element from the scaled product, for
// a kernel whose body does more than scale it (codegen/attention_score.cpp); `params`
// names the kernel's arguments.
std::string attention_score_function(const ir::Kernel& k, const std::vector<std::string>& params);

// The attention kernels' device helpers that `code` calls.
std::string attention_helper_definitions(const std::string& code);

}  // namespace kiln::codegen
