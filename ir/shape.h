// Static shapes, tensor types and numpy-style broadcasting.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/dtype.h"

namespace kiln {

using Shape = std::vector<int64_t>;

int64_t numel(const Shape& s);
std::string shape_str(const Shape& s);  // "[8192,4096]", "[]" for a scalar
Shape row_major_strides(const Shape& s);

// The numpy broadcast of two shapes, or nullopt when they are incompatible.
std::optional<Shape> broadcast_shapes(const Shape& a, const Shape& b);
// True when `from` broadcasts to `to` (numpy rules, `to` unchanged).
bool broadcasts_to(const Shape& from, const Shape& to);

// Normalises an axis in [-rank, rank) to [0, rank); nullopt when out of range.
std::optional<int> normalize_axis(int64_t axis, int rank);

struct TensorType {
  DType dtype = DType::f32;
  Shape shape;

  int rank() const { return static_cast<int>(shape.size()); }
  int64_t numel() const { return kiln::numel(shape); }
  int64_t bytes() const { return (numel() * dtype_bits(dtype) + 7) / 8; }  // i4: two elements a byte
  std::string str() const;  // "f16[8192,4096]"
  bool operator==(const TensorType&) const = default;
};

}  // namespace kiln
