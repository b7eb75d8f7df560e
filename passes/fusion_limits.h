// How large one fused kernel may grow. NVRTC's time grows with a kernel's body (a
// 2,000-op chain in one kernel takes it about 22 s; bench/NOTES.md has the figures
// per chain length), so past this many element-wise ops fusion starts another kernel:
// the intermediate it then writes costs far less than the compile it saves.
// Internal to passes/.
#pragma once
#include "runtime/knobs.h"

namespace kiln::passes {

// The most element-wise graph ops (casts, compares and selects included) that one
// fused kernel computes: a pointwise kernel; a reduction's prologue and epilogue
// together; a gemm's epilogue, and its two operand prologues (half each). Constants,
// iota and views are free.
inline constexpr int kMaxFusedOps = 256;

// kMaxFusedOps, or KILN_MAX_FUSED_OPS when set (to measure NVRTC's time per body size).
inline int max_fused_ops() { return knobs::max_fused_ops().value_or(kMaxFusedOps); }

}  // namespace kiln::passes
