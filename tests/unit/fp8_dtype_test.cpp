// The fp8 storage types: f8e4m3 and f8e5m2 round to nearest even and saturate to their
// largest finite value, as the GPU's conversion with saturation does; every bit pattern
// decodes and encodes back; casts make and read them (nothing else computes on them);
// .npy files hold them as float32; kernels that cast to and from them compile.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <functional>
#include <limits>

#include "codegen_test_util.h"
#include "frontend/kiln.h"
#include "ir/error.h"
#include "ir/interpreter.h"
#include "ir/parser.h"
#include "passes/lower.h"
#include "passes/pass_manager.h"
#include "runtime/npy.h"

namespace kiln {
namespace {

TEST(Fp8, E4M3RoundsToNearestEvenAndSaturates) {
  const DType t = DType::f8e4m3;
  EXPECT_EQ(round_to(t, 448), 448);
  EXPECT_EQ(round_to(t, 500), 448);
  EXPECT_EQ(round_to(t, -1e6), -448);
  EXPECT_EQ(round_to(t, std::numeric_limits<double>::infinity()), 448);
  EXPECT_TRUE(std::isnan(round_to(t, std::nan(""))));
  EXPECT_EQ(round_to(t, 0.3), 0.3125);     // 3 mantissa bits: steps of 1/32 in [0.25, 0.5)
  EXPECT_EQ(round_to(t, 1.0625), 1.0);     // a tie goes to the even mantissa
  EXPECT_EQ(round_to(t, 1.1875), 1.25);
  EXPECT_EQ(round_to(t, 0.001), 0.001953125);  // the smallest subnormal, 2^-9
  EXPECT_EQ(round_to(t, 0.0009), 0.0);
  EXPECT_TRUE(std::signbit(round_to(t, -0.0009)));
}

TEST(Fp8, E5M2RoundsToNearestEvenAndSaturates) {
  const DType t = DType::f8e5m2;
  EXPECT_EQ(round_to(t, 57344), 57344);
  EXPECT_EQ(round_to(t, 60000), 57344);
  EXPECT_EQ(round_to(t, -std::numeric_limits<double>::infinity()), -57344);
  EXPECT_EQ(round_to(t, 0.3), 0.3125);  // 2 mantissa bits: steps of 1/16 in [0.25, 0.5)
  EXPECT_EQ(round_to(t, 1.125), 1.0);   // a tie to the even mantissa
  EXPECT_EQ(round_to(t, std::ldexp(1.0, -16)), std::ldexp(1.0, -16));  // the smallest subnormal
}

TEST(Fp8, EveryBitPatternDecodesAndEncodesBack) {
  for (DType t : {DType::f8e4m3, DType::f8e5m2})
    for (int b = 0; b < 256; ++b) {
      const double v = fp8_value(t, static_cast<uint8_t>(b));
      if (std::isnan(v) || std::isinf(v)) continue;
      EXPECT_EQ(round_to(t, v), v) << dtype_name(t) << " " << b;
      EXPECT_EQ(fp8_bits(t, v), b) << dtype_name(t) << " " << b;
    }
  EXPECT_EQ(fp8_bits(DType::f8e4m3, 1.0), 0x38);
  EXPECT_EQ(fp8_bits(DType::f8e4m3, 448.0), 0x7e);
  EXPECT_EQ(fp8_bits(DType::f8e5m2, 1.0), 0x3c);
  EXPECT_EQ(fp8_bits(DType::f8e5m2, 57344.0), 0x7b);
  EXPECT_TRUE(std::isnan(fp8_value(DType::f8e4m3, 0x7f)));
  EXPECT_TRUE(std::isinf(fp8_value(DType::f8e5m2, 0x7c)));
}

TEST(Fp8, TensorsPackOneByteAnElementAndNpyHoldsFloat32) {
  HostTensor t(TensorType{DType::f8e4m3, {2, 3}}, {0.3, -1.0625, 500, 0.001, -2, 7});
  EXPECT_EQ(t.values, (std::vector<double>{0.3125, -1.0, 448, 0.001953125, -2, 7}));
  EXPECT_EQ(HostTensor::from_bytes(t.type, t.to_bytes().data()).values, t.values);
  const std::string path = (std::filesystem::temp_directory_path() / "kiln_fp8.npy").string();
  runtime::write_npy(path, t);
  EXPECT_EQ(runtime::read_npy_file(path).descr, "<f4");
  EXPECT_EQ(runtime::read_npy(path, t.type, "input 0 %x").values, t.values);
  std::filesystem::remove(path);
  HostTensor r = random_tensor(TensorType{DType::f8e5m2, {64}}, 1);
  for (double v : r.values) EXPECT_NE(v, 0);
}

TEST(Fp8, CastsMakeAndReadItAndNothingElseComputesOnIt) {
  auto error_of = [](const std::string& body) {
    try {
      ir::parse("func @f(%x: f32[4], %y: f8e4m3[4]) -> (f32[4]) {\n  %r = " + body + "\n  return %r\n}");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  EXPECT_EQ(error_of("cast %y : f32[4]"), "(no error)");
  EXPECT_NE(error_of("add %y, %y : f8e4m3[4]").find("f8e4m3 is an fp8 storage type: cast it"), std::string::npos);
  EXPECT_NE(error_of("exp %y : f8e4m3[4]").find("fp8 storage type"), std::string::npos);
  ir::Graph g = ir::parse(R"(func @f(%x: f32[5]) -> (f32[5], f8e5m2[5]) {
  %q = cast %x : f8e4m3[5]
  %r = cast %q : f32[5]
  %s = cast %x : f8e5m2[5]
  return %r, %s
})");
  HostTensor x(TensorType{DType::f32, {5}}, {0.3, 1000, -1.0625, 0.0009, 3});
  std::vector<HostTensor> out = ir::evaluate(g, {x});
  EXPECT_EQ(out[0].values, (std::vector<double>{0.3125, 448, -1.0, 0.0, 3}));
  EXPECT_EQ(out[1].values[1], 1024);
}

TEST(Fp8, KernelsThatCastToAndFromFp8Compile) {
  kiln::Graph g("fp8");
  auto x = g.input("x", f16, {33, 64});
  auto q = kiln::cast(x * 4.0, DType::f8e4m3);
  g.output(q);
  g.output(kiln::cast(q, f32) + kiln::cast(kiln::cast(x, DType::f8e5m2), f32));
  g.output(kiln::sum(kiln::cast(q, f32), {1}));
  ir::Graph ir = g.ir().clone();
  passes::PassManager("decompose,simplify,cse,dce,fuse", {}).run(ir);
  passes::Plan p = passes::lower(ir);
  for (const ir::Kernel& k : p.kernels) {
    if (k.kind == ir::KernelKind::Pointwise) continue;
    for (const ir::KernelArg& a : k.args) EXPECT_FALSE(is_fp8(a.type.dtype)) << a.name;
  }
  test::expect_compiles(p.kernels, "fp8_casts");
}

}  // namespace
}  // namespace kiln
