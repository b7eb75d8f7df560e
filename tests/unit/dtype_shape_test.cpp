// dtypes, rounding and broadcasting.
#include <gtest/gtest.h>

#include <cmath>

#include "ir/dtype.h"
#include "ir/shape.h"

using namespace kiln;

TEST(DType, NamesRoundTrip) {
  for (DType t : {DType::f32, DType::f16, DType::bf16, DType::i32, DType::i1})
    EXPECT_EQ(parse_dtype(dtype_name(t)), t);
  EXPECT_FALSE(parse_dtype("f64").has_value());
}

TEST(DType, HalfRoundsToNearestEven) {
  EXPECT_EQ(round_to(DType::f16, 1.0), 1.0);
  EXPECT_EQ(round_to(DType::f16, 1.0 + 1.0 / 2048), 1.0);             // tie -> even
  EXPECT_EQ(round_to(DType::f16, 1.0 + 3.0 / 2048), 1.0 + 2.0 / 1024);  // tie -> even (up)
  EXPECT_EQ(round_to(DType::f16, 65504.0), 65504.0);
  EXPECT_TRUE(std::isinf(round_to(DType::f16, 70000.0)));
  EXPECT_EQ(round_to(DType::f16, 5.9604644775390625e-08), 5.9604644775390625e-08);  // smallest subnormal
  EXPECT_EQ(round_to(DType::f16, 0.1), 0.0999755859375);
}

// An i32 holds no -0: truncating -0.5 gives the integer 0, whose float is +0 (so that
// 1 / x and rsqrt of it are +inf, as on the GPU).
TEST(DType, I32HasNoNegativeZero) {
  EXPECT_FALSE(std::signbit(round_to(DType::i32, -0.5)));
  EXPECT_FALSE(std::signbit(round_to(DType::i32, -0.0)));
  EXPECT_EQ(round_to(DType::i32, -1.5), -1.0);
  EXPECT_EQ(round_to(DType::i32, 3e10), 2147483647.0);
}

TEST(DType, Bf16RoundsToNearestEven) {
  EXPECT_EQ(round_to(DType::bf16, 1.0 + 1.0 / 256), 1.0);
  EXPECT_EQ(round_to(DType::bf16, 1.0 + 3.0 / 256), 1.0 + 4.0 / 256);
  EXPECT_EQ(round_to(DType::bf16, 0.1), 0.10009765625);
}

TEST(DType, HalfBitsRoundTripEveryValue) {
  for (uint32_t b = 0; b < 0x10000; ++b) {
    uint16_t h = static_cast<uint16_t>(b);
    float f = half_bits_to_float(h);
    if (std::isnan(f)) continue;
    EXPECT_EQ(float_to_half_bits(f), h) << b;
  }
}

TEST(DType, IntegerRounding) {
  EXPECT_EQ(round_to(DType::i32, -2.7), -2.0);
  EXPECT_EQ(round_to(DType::i1, 0.5), 1.0);
  EXPECT_EQ(round_to(DType::i1, 0.0), 0.0);
}

TEST(Shape, Broadcasting) {
  EXPECT_EQ(broadcast_shapes({8, 1, 4}, {3, 1}), (Shape{8, 3, 4}));
  EXPECT_EQ(broadcast_shapes({}, {5}), (Shape{5}));
  EXPECT_FALSE(broadcast_shapes({3}, {4}).has_value());
  EXPECT_TRUE(broadcasts_to({4}, {2, 4}));
  EXPECT_FALSE(broadcasts_to({2, 4}, {4}));
}

TEST(Shape, TypeText) {
  EXPECT_EQ((TensorType{DType::f16, {8192, 4096}}).str(), "f16[8192,4096]");
  EXPECT_EQ((TensorType{DType::f32, {}}).str(), "f32[]");
  EXPECT_EQ(row_major_strides({2, 3, 4}), (Shape{12, 4, 1}));
}
