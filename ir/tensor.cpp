#include "ir/tensor.h"

#include <cstring>
#include <random>

namespace kiln {

HostTensor::HostTensor(TensorType t, std::vector<double> v) : type(std::move(t)), values(std::move(v)) {
  for (double& x : values) x = round_to(type.dtype, x);
}

std::vector<std::byte> HostTensor::to_bytes() const {
  std::vector<std::byte> out(static_cast<size_t>(type.bytes()));
  std::byte* p = out.data();
  for (size_t i = 0; i < values.size(); ++i) {
    double x = values[i];
    switch (type.dtype) {
      case DType::f32: { float f = static_cast<float>(x); std::memcpy(p + 4 * i, &f, 4); break; }
      case DType::f16: { uint16_t h = float_to_half_bits(static_cast<float>(x)); std::memcpy(p + 2 * i, &h, 2); break; }
      case DType::bf16: { uint16_t b = float_to_bf16_bits(static_cast<float>(x)); std::memcpy(p + 2 * i, &b, 2); break; }
      case DType::i32: { int32_t n = static_cast<int32_t>(round_to(DType::i32, x)); std::memcpy(p + 4 * i, &n, 4); break; }
      case DType::i1: p[i] = static_cast<std::byte>(x != 0 ? 1 : 0); break;
    }
  }
  return out;
}

double decode_element(DType t, const void* data, size_t i) {
  const auto* p = static_cast<const std::byte*>(data);
  switch (t) {
    case DType::f32: { float f; std::memcpy(&f, p + 4 * i, 4); return f; }
    case DType::f16: { uint16_t b; std::memcpy(&b, p + 2 * i, 2); return half_bits_to_float(b); }
    case DType::bf16: { uint16_t b; std::memcpy(&b, p + 2 * i, 2); return bf16_bits_to_float(b); }
    case DType::i32: { int32_t n; std::memcpy(&n, p + 4 * i, 4); return n; }
    case DType::i1: return p[i] != std::byte{0} ? 1.0 : 0.0;
  }
  return 0;
}

HostTensor HostTensor::from_bytes(const TensorType& t, const void* data) {
  HostTensor h(t);
  for (size_t i = 0; i < h.values.size(); ++i) h.values[i] = decode_element(t.dtype, data, i);
  return h;
}

HostTensor random_tensor(const TensorType& t, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> mag(0.1, 1.0);
  std::uniform_int_distribution<int> digit(1, 9), bit(0, 1);
  std::vector<double> v(static_cast<size_t>(t.numel()));
  for (double& x : v) {
    double sign = bit(rng) ? 1.0 : -1.0;
    switch (t.dtype) {
      case DType::i32: x = sign * digit(rng); break;
      case DType::i1: x = bit(rng); break;
      default: x = sign * mag(rng); break;
    }
  }
  return HostTensor(t, std::move(v));
}

}  // namespace kiln
