// Element types of Kiln tensors, their names in text and their sizes.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace kiln {

// i8 and i4 are storage types for quantised weights: signed integers (-128..127 and
// -8..7) that graphs read through `dequant` and `cast`. An i4 tensor holds two elements a
// byte, in row-major order (so along its last axis, whose size must be even): the element
// of even index in the low nibble, two's complement.
// f8e4m3 (4 exponent bits, 3 mantissa bits, no infinity, largest 448) and f8e5m2 (5 and
// 2, largest finite 57344) are the fp8 storage types of scaled products: casts make and
// read them, rounding to nearest even and saturating to the largest finite value.
enum class DType : uint8_t { f32, f16, bf16, i32, i1, i8, i4, f8e4m3, f8e5m2 };

std::string_view dtype_name(DType t);
std::optional<DType> parse_dtype(std::string_view name);
int dtype_bytes(DType t);          // storage size on the device (i1 and i8 are one byte; i4 packs two a byte: 1)
int dtype_bits(DType t);           // bits per element: 32, 16, 8 (i1, i8) or 4
bool is_float(DType t);            // f32, f16, bf16
bool is_integer(DType t);          // i32 (i1 is a boolean, not an integer; i8 and i4 are storage types)
bool is_storage_only(DType t);     // i8, i4: read by dequant and cast, no arithmetic of their own
bool is_fp8(DType t);              // f8e4m3, f8e5m2: made and read by casts, no arithmetic of their own

// Rounds a double to the nearest value representable in `t`, the way the GPU
// rounds a kernel's fp32 result when it stores it (fp32 first, then to 16 bits
// with round-to-nearest-even). Integers truncate toward zero (i8 and i4 then saturate
// to their range, as i32 does); i1 is x != 0.
double round_to(DType t, double x);

// Bit conversions used by host<->device transfers. fp8 bits take a value already
// rounded to the type (round_to).
uint8_t fp8_bits(DType t, double rounded);
double fp8_value(DType t, uint8_t bits);
uint16_t float_to_half_bits(float f);
float half_bits_to_float(uint16_t h);
uint16_t float_to_bf16_bits(float f);
float bf16_bits_to_float(uint16_t b);

}  // namespace kiln
