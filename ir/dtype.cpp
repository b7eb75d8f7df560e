#include "ir/dtype.h"

#include <bit>
#include <cmath>
#include <limits>

namespace kiln {

std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::f32: return "f32";
    case DType::f16: return "f16";
    case DType::bf16: return "bf16";
    case DType::i32: return "i32";
    case DType::i1: return "i1";
    case DType::i8: return "i8";
    case DType::i4: return "i4";
  }
  return "?";
}

std::optional<DType> parse_dtype(std::string_view name) {
  for (DType t : {DType::f32, DType::f16, DType::bf16, DType::i32, DType::i1, DType::i8, DType::i4})
    if (dtype_name(t) == name) return t;
  return std::nullopt;
}

int dtype_bytes(DType t) {
  switch (t) {
    case DType::f32: case DType::i32: return 4;
    case DType::f16: case DType::bf16: return 2;
    case DType::i1: case DType::i8: case DType::i4: return 1;
  }
  return 0;
}

int dtype_bits(DType t) { return t == DType::i4 ? 4 : 8 * dtype_bytes(t); }

bool is_float(DType t) { return t == DType::f32 || t == DType::f16 || t == DType::bf16; }
bool is_integer(DType t) { return t == DType::i32; }
bool is_storage_only(DType t) { return t == DType::i8 || t == DType::i4; }

uint16_t float_to_half_bits(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t mag = x & 0x7fffffffu;
  if (mag >= 0x7f800000u)  // Inf or NaN (keep a quiet NaN payload bit)
    return static_cast<uint16_t>(sign | 0x7c00u | (mag > 0x7f800000u ? 0x200u : 0u));
  if (mag >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to Inf
  if (mag < 0x38800000u) {  // result is subnormal or zero in half
    if (mag < 0x33000000u) return static_cast<uint16_t>(sign);
    uint32_t exp = mag >> 23;
    uint32_t mant = (mag & 0x7fffffu) | 0x800000u;
    uint32_t shift = 126 - exp;  // 14 + (127 - 15) - exp ... bits to drop
    uint32_t rounded = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1u);
    uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (rounded & 1u))) ++rounded;
    return static_cast<uint16_t>(sign | rounded);
  }
  uint32_t rounded = mag - 0x38000000u;  // rebias exponent 127 -> 15
  uint32_t rem = rounded & 0x1fffu;
  rounded >>= 13;
  if (rem > 0x1000u || (rem == 0x1000u && (rounded & 1u))) ++rounded;
  return static_cast<uint16_t>(sign | rounded);
}

float half_bits_to_float(uint16_t h) {
  uint32_t sign = (static_cast<uint32_t>(h) & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  if (exp == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (mant << 13));
  if (exp == 0) {
    if (mant == 0) return std::bit_cast<float>(sign);
    float v = std::ldexp(static_cast<float>(mant), -24);
    return sign ? -v : v;
  }
  return std::bit_cast<float>(sign | ((exp + 112u) << 23) | (mant << 13));
}

uint16_t float_to_bf16_bits(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);
  uint32_t lsb = (x >> 16) & 1u;
  x += 0x7fffu + lsb;
  return static_cast<uint16_t>(x >> 16);
}

float bf16_bits_to_float(uint16_t b) { return std::bit_cast<float>(static_cast<uint32_t>(b) << 16); }

double round_to(DType t, double x) {
  switch (t) {
    case DType::f32: return static_cast<float>(x);
    case DType::f16: return half_bits_to_float(float_to_half_bits(static_cast<float>(x)));
    case DType::bf16: return bf16_bits_to_float(float_to_bf16_bits(static_cast<float>(x)));
    case DType::i32: {
      if (std::isnan(x)) return 0;
      double c = std::trunc(x);
      c = std::fmax(c, static_cast<double>(std::numeric_limits<int32_t>::min()));
      // + 0.0 turns trunc's -0 (of -0.5, say) into the integer 0 that the GPU holds.
      return std::fmin(c, static_cast<double>(std::numeric_limits<int32_t>::max())) + 0.0;
    }
    case DType::i1: return x != 0 ? 1.0 : 0.0;
    case DType::i8: case DType::i4: {
      if (std::isnan(x)) return 0;
      const double top = t == DType::i8 ? 127 : 7;
      return std::fmin(std::fmax(std::trunc(x), -top - 1), top) + 0.0;
    }
  }
  return x;
}

}  // namespace kiln
