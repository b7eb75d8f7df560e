// HostTensor: a tensor on the host, values held as doubles already rounded to
// the tensor's dtype (the reference interpreter computes on these), with
// conversion to and from the packed device layout (f16/bf16 bits, i32, i1 and i8 bytes,
// i4 nibbles two a byte).
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "ir/shape.h"

namespace kiln {

struct HostTensor {
  TensorType type;
  std::vector<double> values;  // row-major, numel() entries

  HostTensor() = default;
  explicit HostTensor(TensorType t) : type(std::move(t)), values(type.numel(), 0.0) {}
  HostTensor(TensorType t, std::vector<double> v);  // rounds each value to the dtype

  int64_t numel() const { return type.numel(); }
  std::vector<std::byte> to_bytes() const;  // packed as the device stores it
  static HostTensor from_bytes(const TensorType& t, const void* data);
};

// Element `i` of a packed device buffer of dtype `t`, as a double.
double decode_element(DType t, const void* data, size_t i);

// Random values that are never zero: uniform in [-1, -0.1] U [0.1, 1] for
// floats, in [-9, -1] U [1, 9] for i32, [-127, -1] U [1, 127] for i8, [-8, -1] U [1, 7]
// for i4, and random 0/1 for i1. Deterministic in `seed`.
HostTensor random_tensor(const TensorType& t, uint64_t seed);

}  // namespace kiln
