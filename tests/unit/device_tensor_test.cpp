// The checks a caller's device tensors pass before a Program runs on them in place
// (no GPU needed: they compare descriptions, never touch the memory).
#include <gtest/gtest.h>

#include <string>

#include "frontend/kiln.h"
#include "runtime/device_tensor.h"

using kiln::DType;
using kiln::runtime::DeviceTensor;
using kiln::runtime::check_device_tensor;
using kiln::runtime::check_device_tensors;

namespace {

constexpr CUdeviceptr kAligned = 0x7f0000000000;

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const kiln::Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(DeviceTensor, AcceptsMatchingContiguousTensor) {
  EXPECT_NO_THROW(check_device_tensor({kAligned, DType::f16, {4, 8}, {}}, {DType::f16, {4, 8}}, "input 0 %x"));
  EXPECT_NO_THROW(check_device_tensor({kAligned, DType::f16, {4, 8}, {8, 1}}, {DType::f16, {4, 8}}, "input 0 %x"));
}

TEST(DeviceTensor, AnyStrideOnASizeOneDim) {
  EXPECT_NO_THROW(check_device_tensor({kAligned, DType::f32, {1, 8}, {123, 1}}, {DType::f32, {1, 8}}, "input 0 %x"));
}

TEST(DeviceTensor, WrongDtypeOrShape) {
  EXPECT_EQ(error_of([] { check_device_tensor({kAligned, DType::f32, {4, 8}, {}}, {DType::f16, {4, 8}}, "input 1 %r"); }),
            "input 1 %r: expected f16[4,8], got f32[4,8]");
  EXPECT_EQ(error_of([] { check_device_tensor({kAligned, DType::f16, {8, 4}, {}}, {DType::f16, {4, 8}}, "output 0 %y"); }),
            "output 0 %y: expected f16[4,8], got f16[8,4]");
}

TEST(DeviceTensor, RejectsNonContiguousStrides) {
  EXPECT_EQ(error_of([] { check_device_tensor({kAligned, DType::f16, {4, 8}, {1, 4}}, {DType::f16, {4, 8}}, "input 0 %x"); }),
            "input 0 %x (f16[4,8]): strides [1, 4] (in elements) are not row-major contiguous (expected [8, 1]); "
            "Kiln reads and writes dense tensors: pass a contiguous one (e.g. .contiguous())");
  EXPECT_NE(error_of([] { check_device_tensor({kAligned, DType::f16, {4, 8}, {16, 1}}, {DType::f16, {4, 8}}, "x"); })
                .find("not row-major contiguous"),
            std::string::npos);
  EXPECT_NE(error_of([] { check_device_tensor({kAligned, DType::f16, {4, 8}, {8}}, {DType::f16, {4, 8}}, "x"); })
                .find("1 strides for 2 dims"),
            std::string::npos);
}

TEST(DeviceTensor, RejectsNullAndMisalignedPointers) {
  EXPECT_NE(error_of([] { check_device_tensor({0, DType::f32, {4}, {}}, {DType::f32, {4}}, "input 0 %x"); })
                .find("the data pointer is null"),
            std::string::npos);
  EXPECT_NE(error_of([] { check_device_tensor({kAligned + 2, DType::f32, {4}, {}}, {DType::f32, {4}}, "input 0 %x"); })
                .find("is not 16-byte aligned"),
            std::string::npos);
}

TEST(DeviceTensor, ChecksCountsAndNamesAgainstThePlan) {
  kiln::Graph g("axpy");
  auto x = g.input("x", kiln::f32, {256});
  auto y = g.input("y", kiln::f32, {256});
  g.output((x * 2.0 + y).name("z"));
  kiln::CompileOptions options;
  options.arch = "sm_90a";
  kiln::Program p = kiln::compile(g, options);
  DeviceTensor t{kAligned, DType::f32, {256}, {}};
  EXPECT_NO_THROW(check_device_tensors(p.plan(), {t, t}, {t}));
  EXPECT_EQ(error_of([&] { check_device_tensors(p.plan(), {t}, {t}); }),
            "the graph takes 2 input(s) and 1 output(s); 1 and 1 tensors were given");
  DeviceTensor wrong{kAligned, DType::f16, {256}, {}};
  EXPECT_EQ(error_of([&] { check_device_tensors(p.plan(), {t, wrong}, {t}); }),
            "input 1 %y: expected f32[256], got f16[256]");
  EXPECT_EQ(error_of([&] { check_device_tensors(p.plan(), {t, t}, {wrong}); }),
            "output 0 %z: expected f32[256], got f16[256]");
}

// Without a GPU, running on device tensors fails on the GPU, not on the checks, and
// a bad tensor is reported before the GPU is asked for.
TEST(DeviceTensor, ProgramChecksBeforeNeedingAGpu) {
  kiln::Graph g("neg");
  g.output(-g.input("x", kiln::f32, {64}));
  kiln::CompileOptions options;
  options.arch = "sm_90a";
  kiln::Program p = kiln::compile(g, options);
  DeviceTensor bad{kAligned, DType::f32, {65}, {}};
  EXPECT_NE(error_of([&] { p.run({bad}, {bad}); }).find("input 0 %x: expected f32[64], got f32[65]"),
            std::string::npos);
}
