// Element types of Kiln tensors, their names in text and their sizes.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace kiln {

enum class DType : uint8_t { f32, f16, bf16, i32, i1 };

std::string_view dtype_name(DType t);
std::optional<DType> parse_dtype(std::string_view name);
int dtype_bytes(DType t);          // storage size on the device (i1 is one byte)
bool is_float(DType t);            // f32, f16, bf16
bool is_integer(DType t);          // i32 (i1 is a boolean, not an integer)

// Rounds a double to the nearest value representable in `t`, the way the GPU
// rounds a kernel's fp32 result when it stores it (fp32 first, then to 16 bits
// with round-to-nearest-even). Integers truncate toward zero; i1 is x != 0.
double round_to(DType t, double x);

// Bit conversions used by host<->device transfers.
uint16_t float_to_half_bits(float f);
float half_bits_to_float(uint16_t h);
uint16_t float_to_bf16_bits(float f);
float bf16_bits_to_float(uint16_t b);

}  // namespace kiln
