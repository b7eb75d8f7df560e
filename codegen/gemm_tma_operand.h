// One operand of a wgmma gemm kernel as the copy engine (TMA) loads it and wgmma reads
// it: its tensor map (dims innermost first, batch dims it does not broadcast over as
// outer dims), the loads of one K step's tile into a shared-memory stage, and the
// shared-memory descriptors of that tile's 16-deep slices of K.
//
// The tile keeps the operand's own layout, in 128-byte swizzled rows:
//   K contiguous:  `rows` rows of 64 K elements (one box; 128 for fp8);
//   M or N contiguous: rows / 64 boxes of 64 K rows x 64 elements of M or N.
// wgmma takes the first as K-major and the second as MN-major (its transpose bit).
#pragma once
#include <string>

#include "codegen/tensor_map_spec.h"
#include "ir/kernel.h"

namespace kiln::codegen {

class TmaOperand {
public:
  // `rows`: the block tile's extent along M (operand A) or N (B); `bk`: K per step.
  TmaOperand(const ir::Kernel& k, bool operand_a, int rows, int bk);

  TensorMapSpec spec() const;
  // Whether it loads from a padded copy (ir::gemm_operand_stageable), and that copy.
  bool staged() const { return staged_; }
  StagedOperand staging() const;
  int tile_bytes() const { return rows_ * bk_ * esize_; }
  bool k_contiguous() const { return k_contiguous_; }
  // "A: K contiguous, one 64 x 128 box a step" for the kernel header.
  std::string describe() const;
  // The loads of the tile at (r0 = m0 or n0, k0) of batch entry `batch` into the
  // shared address `dst`, completing on the mbarrier at `bar`; `map` names the
  // tensor-map parameter. With a `multicast` mask (an expression), the tile lands at
  // `dst` in each block of the cluster the mask names, on each one's own mbarrier.
  std::string issue(const std::string& in, const std::string& map, const std::string& dst, const std::string& r0,
                    const std::string& k0, const std::string& bar, const std::string& multicast = "") const;
  // The descriptor of the tile at `tile` from row `row` (a multiple of 64) at K slice
  // `kk` (32 bytes each: 16 f16 / bf16 elements or 32 fp8).
  std::string descriptor(const std::string& tile, int row, const std::string& kk) const;

private:
  std::vector<std::string> batch_coordinates() const;
  std::string describe_layout() const;

  const ir::Kernel& k_;
  bool a_;
  int rows_, bk_, esize_;
  bool k_contiguous_, staged_ = false;
  int64_t src_ld_ = 0;
  int64_t ld_ = 0;
  std::vector<int64_t> batch_strides_;
};

}  // namespace kiln::codegen
