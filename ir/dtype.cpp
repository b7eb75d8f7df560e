#include "ir/dtype.h"

#include <algorithm>
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
    case DType::f8e4m3: return "f8e4m3";
    case DType::f8e5m2: return "f8e5m2";
  }
  return "?";
}

std::optional<DType> parse_dtype(std::string_view name) {
  for (DType t : {DType::f32, DType::f16, DType::bf16, DType::i32, DType::i1, DType::i8, DType::i4, DType::f8e4m3,
                  DType::f8e5m2})
    if (dtype_name(t) == name) return t;
  return std::nullopt;
}

int dtype_bytes(DType t) {
  switch (t) {
    case DType::f32: case DType::i32: return 4;
    case DType::f16: case DType::bf16: return 2;
    case DType::i1: case DType::i8: case DType::i4: case DType::f8e4m3: case DType::f8e5m2: return 1;
  }
  return 0;
}

int dtype_bits(DType t) { return t == DType::i4 ? 4 : 8 * dtype_bytes(t); }

bool is_float(DType t) { return t == DType::f32 || t == DType::f16 || t == DType::bf16; }
bool is_integer(DType t) { return t == DType::i32; }
bool is_storage_only(DType t) { return t == DType::i8 || t == DType::i4; }
bool is_fp8(DType t) { return t == DType::f8e4m3 || t == DType::f8e5m2; }

namespace {

// An fp8 format: mantissa bits, exponent bias, the smallest normal exponent, the largest
// finite value.
struct Fp8Format {
  int mantissa_bits, bias, min_exponent;
  double max_finite;
};

Fp8Format fp8_format(DType t) {
  if (t == DType::f8e4m3) return {3, 7, -6, 448.0};
  return {2, 15, -14, 57344.0};
}

// Rounds as the GPU's conversion from fp32 with saturation does: to the nearest value
// with the format's mantissa (ties to even), subnormals below the smallest normal
// exponent, and anything at or past the largest finite value (infinities too) to it.
double round_fp8(DType t, double x) {
  const Fp8Format f = fp8_format(t);
  const float v = static_cast<float>(x);
  if (std::isnan(v)) return std::numeric_limits<double>::quiet_NaN();
  const double a = std::fabs(static_cast<double>(v));
  if (a >= f.max_finite) return std::copysign(f.max_finite, v);
  if (a == 0) return std::copysign(0.0, v);
  const int e = std::max(std::ilogb(a), f.min_exponent);
  const double quantum = std::ldexp(1.0, e - f.mantissa_bits);
  const double r = std::min(std::nearbyint(a / quantum) * quantum, f.max_finite);
  return std::copysign(r, v);
}

}  // namespace

uint8_t fp8_bits(DType t, double rounded) {
  const Fp8Format f = fp8_format(t);
  if (std::isnan(rounded)) return 0x7f;  // a NaN of both formats
  const uint8_t sign = std::signbit(rounded) ? 0x80 : 0;
  const double a = std::fabs(rounded);
  if (a == 0) return sign;
  const int e = std::ilogb(a);
  if (e < f.min_exponent)  // subnormal: the mantissa counts quanta of the smallest exponent
    return static_cast<uint8_t>(sign | static_cast<int>(a / std::ldexp(1.0, f.min_exponent - f.mantissa_bits)));
  const int mantissa = static_cast<int>(a / std::ldexp(1.0, e - f.mantissa_bits)) - (1 << f.mantissa_bits);
  return static_cast<uint8_t>(sign | (e + f.bias) << f.mantissa_bits | mantissa);
}

double fp8_value(DType t, uint8_t bits) {
  const Fp8Format f = fp8_format(t);
  const int exponent_bits = 7 - f.mantissa_bits;
  const int field = (bits >> f.mantissa_bits) & ((1 << exponent_bits) - 1), mantissa = bits & ((1 << f.mantissa_bits) - 1);
  const double sign = bits & 0x80 ? -1.0 : 1.0;
  if (t == DType::f8e4m3 && field == 15 && mantissa == 7) return std::numeric_limits<double>::quiet_NaN();
  if (t == DType::f8e5m2 && field == 31)
    return mantissa ? std::numeric_limits<double>::quiet_NaN() : sign * std::numeric_limits<double>::infinity();
  if (field == 0) return sign * mantissa * std::ldexp(1.0, f.min_exponent - f.mantissa_bits);
  return sign * (1.0 + mantissa * std::ldexp(1.0, -f.mantissa_bits)) * std::ldexp(1.0, field - f.bias);
}

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
    case DType::f8e4m3: case DType::f8e5m2: return round_fp8(t, x);
    case DType::i8: case DType::i4: {
      if (std::isnan(x)) return 0;
      const double top = t == DType::i8 ? 127 : 7;
      return std::fmin(std::fmax(std::trunc(x), -top - 1), top) + 0.0;
    }
  }
  return x;
}

}  // namespace kiln
