// HostTensor's rounding and its conversions to and from the packed device layout, and
// random_tensor. All of them treat every element on its own and split the elements
// over threads (ir/parallel.h), so their results do not depend on the thread count.
#include "ir/tensor.h"

#include <cstring>

#include "ir/parallel.h"

namespace kiln {

namespace {

// Runs f(i) for every element index in [0, n), split over threads.
template <class F>
void for_each_index(size_t n, F f) {
  ir::parallel_for(static_cast<int64_t>(n), 1, [&](int64_t begin, int64_t end) {
    for (auto i = static_cast<size_t>(begin); i < static_cast<size_t>(end); ++i) f(i);
  });
}

template <class T>
void store(std::byte* p, size_t i, T value) {
  std::memcpy(p + sizeof(T) * i, &value, sizeof(T));
}

// splitmix64's output function: a bijective mix of all 64 bits.
uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

}  // namespace

HostTensor::HostTensor(TensorType t, std::vector<double> v) : type(std::move(t)), values(std::move(v)) {
  double* x = values.data();
  const DType dt = type.dtype;
  for_each_index(values.size(), [&](size_t i) { x[i] = round_to(dt, x[i]); });
}

std::vector<std::byte> HostTensor::to_bytes() const {
  std::vector<std::byte> out(static_cast<size_t>(type.bytes()));
  std::byte* p = out.data();
  const double* x = values.data();
  const size_t n = values.size();
  switch (type.dtype) {
    case DType::f32: for_each_index(n, [&](size_t i) { store(p, i, static_cast<float>(x[i])); }); break;
    case DType::f16:
      for_each_index(n, [&](size_t i) { store(p, i, float_to_half_bits(static_cast<float>(x[i]))); });
      break;
    case DType::bf16:
      for_each_index(n, [&](size_t i) { store(p, i, float_to_bf16_bits(static_cast<float>(x[i]))); });
      break;
    case DType::i32:
      for_each_index(n, [&](size_t i) { store(p, i, static_cast<int32_t>(round_to(DType::i32, x[i]))); });
      break;
    case DType::i1: for_each_index(n, [&](size_t i) { p[i] = static_cast<std::byte>(x[i] != 0 ? 1 : 0); }); break;
    case DType::i8:
      for_each_index(n, [&](size_t i) { store(p, i, static_cast<int8_t>(round_to(DType::i8, x[i]))); });
      break;
    case DType::f8e4m3: case DType::f8e5m2: {
      const DType t = type.dtype;
      for_each_index(n, [&](size_t i) { store(p, i, fp8_bits(t, round_to(t, x[i]))); });
      break;
    }
    case DType::i4:  // byte b holds elements 2b (low nibble) and 2b + 1 (high)
      for_each_index(out.size(), [&](size_t b) {
        auto nibble = [&](size_t i) { return i < n ? static_cast<unsigned>(round_to(DType::i4, x[i])) & 0xfu : 0u; };
        p[b] = static_cast<std::byte>(nibble(2 * b) | nibble(2 * b + 1) << 4);
      });
      break;
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
    case DType::i8: return static_cast<int8_t>(p[i]);
    case DType::f8e4m3: case DType::f8e5m2: return fp8_value(t, static_cast<uint8_t>(p[i]));
    case DType::i4: {
      const unsigned nibble = (static_cast<unsigned>(p[i / 2]) >> (4 * (i % 2))) & 0xfu;
      return nibble >= 8 ? static_cast<double>(nibble) - 16 : static_cast<double>(nibble);
    }
  }
  return 0;
}

HostTensor HostTensor::from_bytes(const TensorType& t, const void* data) {
  HostTensor h(t);
  double* x = h.values.data();
  for_each_index(h.values.size(), [&](size_t i) { x[i] = decode_element(t.dtype, data, i); });
  return h;
}

// Counter-based: element i's value comes from a hash of (seed, i) alone, so any range
// of elements can be generated on its own. One 64-bit hash per element: its low bit is
// the sign (or the i1 value), its top 53 bits the magnitude or the digit.
HostTensor random_tensor(const TensorType& t, uint64_t seed) {
  constexpr uint64_t kGamma = 0x9e3779b97f4a7c15ull;  // splitmix64's increment
  const uint64_t key = mix64(seed + kGamma);
  HostTensor h(t);
  double* x = h.values.data();
  const DType dt = t.dtype;
  for_each_index(h.values.size(), [&](size_t i) {
    const uint64_t bits = mix64(key + kGamma * (i + 1));
    const double sign = (bits & 1) ? 1.0 : -1.0;
    const double unit = static_cast<double>(bits >> 11) * 0x1.0p-53;  // uniform in [0, 1)
    switch (dt) {
      case DType::i32: x[i] = sign * static_cast<double>(1 + ((bits >> 11) * 9 >> 53)); break;  // 1..9
      case DType::i1: x[i] = static_cast<double>(bits & 1); break;
      case DType::i8: x[i] = sign * static_cast<double>(1 + ((bits >> 11) * 127 >> 53)); break;  // 1..127
      case DType::i4: x[i] = bits & 1 ? static_cast<double>(1 + ((bits >> 11) * 7 >> 53))        // 1..7
                                      : -static_cast<double>(1 + ((bits >> 11) * 8 >> 53)); break;  // -8..-1
      default: x[i] = round_to(dt, sign * (0.1 + 0.9 * unit)); break;  // +-[0.1, 1)
    }
  });
  return h;
}

}  // namespace kiln
