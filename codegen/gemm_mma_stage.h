// The math stage of the mma_sync schedule: per K step of a shared-memory stage, each
// warp loads its A and B fragments (ldmatrix from the swizzled tiles; plain 32-bit
// loads for TF32 operands stored M- or N-contiguous, which ldmatrix cannot transpose)
// and issues (bm / warps_m / 16) x (bn / warps_n / 8) mma.sync products into its
// fp32 accumulators acc[mi][ni][4].
#pragma once
#include <string>

#include "codegen/gemm_operand_load.h"
#include "ir/kernel.h"

namespace kiln::codegen {

class MmaStage {
public:
  MmaStage(const ir::Kernel& k, const OperandLoad& a, const OperandLoad& b);

  int warp_rows() const { return wm_; }  // the warp's part of the tile
  int warp_cols() const { return wn_; }
  int frag_rows() const { return wm_ / 16; }  // MI: m16 fragments per warp
  int frag_cols() const { return wn_ / 8; }   // NI: n8 fragments per warp
  // "m16n8k16 f16" for the header comment.
  std::string describe() const;

  // Each thread's fragment addresses within a stage (reads warp_m, warp_n, lane).
  std::string setup() const;
  int k_steps() const { return k_steps_; }  // products along K per stage
  // The two fragment buffers af[2][MI][4], bf[2][NI / 2][4].
  std::string fragments() const;
  // K step `kk` of the stage whose A tile is at byte `a_stage` and B tile at `b_stage`
  // into fragment buffer `buf` (code expressions).
  std::string load(const std::string& indent, const std::string& buf, const std::string& a_stage,
                   const std::string& b_stage, const std::string& kk) const;
  // The MI x NI products of fragment buffer `buf`.
  std::string multiply(const std::string& indent, const std::string& buf) const;

private:
  std::string load_a(const std::string& indent, const std::string& buf, const std::string& stage,
                     const std::string& kk) const;
  std::string load_b(const std::string& indent, const std::string& buf, const std::string& stage,
                     const std::string& kk) const;
  bool tf32() const { return k_.gemm.operand_dtype == DType::f32; }

  const ir::Kernel& k_;
  const OperandLoad& a_;
  const OperandLoad& b_;
  int wm_ = 0, wn_ = 0;
  int k_steps_ = 0;     // products per stage along K (k16, or k8 for TF32)
};

}  // namespace kiln::codegen
