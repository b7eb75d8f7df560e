// A tensor map that a kernel takes by value (a `__grid_constant__` parameter after its
// pointers): what the host hands cuTensorMapEncodeTiled once the argument's buffer
// is known, so that the copy engine (TMA) can load boxes of it into shared memory with
// the 128-byte swizzle. Dims run innermost first, as the driver wants them.
#pragma once
#include <array>
#include <cstdint>

#include "ir/dtype.h"

namespace kiln::codegen {

// An operand whose rows TMA cannot address (not a multiple of 16 bytes long) is copied
// before each launch into a buffer of `rows` rows of `dst_ld` elements (16-byte
// multiples), of which the first `cols` hold the operand's row; its tensor map
// describes that copy.
struct StagedOperand {
  int arg = -1;  // the Kernel::args entry copied
  DType dtype = DType::f16;
  uint64_t rows = 0, cols = 0;
  uint64_t src_ld = 0, dst_ld = 0;  // elements between rows
  bool operator==(const StagedOperand&) const = default;
};

struct TensorMapSpec {
  int arg = -1;     // the Kernel::args entry whose buffer it describes
  int staged = -1;  // else an index into LaunchDims::staged: the map describes that copy
  DType dtype = DType::f16;
  int rank = 2;                      // 2 to 5
  std::array<uint64_t, 5> dims{};    // elements, innermost first
  std::array<uint64_t, 4> strides{}; // bytes between neighbours along dims 1 .. rank - 1
  std::array<uint32_t, 5> box{};     // elements of one load along each dim
  bool operator==(const TensorMapSpec&) const = default;
};

}  // namespace kiln::codegen
