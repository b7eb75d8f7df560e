// The gemm emitter: a kernel whose blocks each compute one tile of a (batched) matrix
// product through a multi-stage shared-memory pipeline, then run the fused epilogue
// on the tile's accumulators. The schedule (mma_sync on Tensor Cores, simt on CUDA
// cores) is a config field; gemm_schedule.h says what each provides. The wgmma schedule
// (sm_90a: TMA, warp-specialised, persistent) has a frame of its own, declared below.
#pragma once
#include <string>

#include "codegen/emit.h"
#include "ir/kernel.h"

namespace kiln::codegen {

// The kernel's code without the file's prelude: module-scope scratch when K is split
// (the partials and each tile's ticket; a module's kernel then runs on one stream at a
// time), the epilogue's device functions and the __global__ entry. Throws kiln::Error
// for a kernel that does not verify or a config that is not legal.
std::string emit_gemm(const ir::Kernel& k);

// Grid x: output tiles (in groups of `group` tile rows); y: batch entries; z: the
// split_k slices of K. Dynamic shared memory: ir::gemm_shared_bytes.
LaunchDims gemm_launch_dims(const ir::Kernel& k);

// The wgmma schedule (codegen/gemm_wgmma_emitter.cpp), which the two above dispatch
// to: persistent blocks (at most one an SM), and the tensor maps of A and B.
std::string emit_gemm_wgmma(const ir::Kernel& k);
LaunchDims gemm_wgmma_launch_dims(const ir::Kernel& k);

// The gemv schedule (codegen/gemm_gemv_emitter.cpp): a few rows against a weight, its
// pieces streamed into registers (and dequantised there) without a shared-memory
// pipeline. Its device helpers come with the file's prelude.
std::string emit_gemm_gemv(const ir::Kernel& k);
LaunchDims gemm_gemv_launch_dims(const ir::Kernel& k);
std::string gemv_helper_definitions(const std::string& code);

// The dequant_wgmma schedule (codegen/gemm_dequant_wgmma_emitter.cpp): up to 128 rows
// against a dequantised weight, y^T = dequant(w) x^T on wgmma with the weight dequantised
// in registers as the A operand; and the dequant_mma schedule, the same on mma.sync (sm_80
// and up) with each warp's own weight rows. Grid x: column tiles of bn weight rows; y: K
// slices.
std::string emit_gemm_dequant_wgmma(const ir::Kernel& k);
LaunchDims gemm_dequant_wgmma_launch_dims(const ir::Kernel& k);

}  // namespace kiln::codegen
