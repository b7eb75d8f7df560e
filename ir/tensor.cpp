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

HostTensor HostTensor::from_bytes(const TensorType& t, const void* data) {
  HostTensor h(t);
  const auto* p = static_cast<const std::byte*>(data);
  for (size_t i = 0; i < h.values.size(); ++i) {
    switch (t.dtype) {
      case DType::f32: { float f; std::memcpy(&f, p + 4 * i, 4); h.values[i] = f; break; }
      case DType::f16: { uint16_t b; std::memcpy(&b, p + 2 * i, 2); h.values[i] = half_bits_to_float(b); break; }
      case DType::bf16: { uint16_t b; std::memcpy(&b, p + 2 * i, 2); h.values[i] = bf16_bits_to_float(b); break; }
      case DType::i32: { int32_t n; std::memcpy(&n, p + 4 * i, 4); h.values[i] = n; break; }
      case DType::i1: h.values[i] = p[i] != std::byte{0} ? 1.0 : 0.0; break;
    }
  }
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
