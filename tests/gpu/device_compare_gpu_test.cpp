// The GPU comparison the autotuner checks candidates with gives the figures the host
// comparison gives, for every dtype, with perturbed values, NaN and Inf.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "gpu_test_util.h"
#include "ir/compare.h"
#include "ir/tensor.h"
#include "runtime/device_buffer.h"
#include "runtime/device_compare.h"
#include "runtime/nvrtc.h"

namespace kiln {
namespace {

// `want` with every 7th value nudged, one NaN where the reference is finite, and (for
// floats) an Inf that matches an Inf of the reference.
HostTensor perturbed(const HostTensor& want) {
  std::vector<double> v = want.values;
  const bool is_float = want.type.dtype != DType::i32 && want.type.dtype != DType::i1;
  for (size_t i = 0; i < v.size(); i += 7) {
    if (want.type.dtype == DType::i1) v[i] = 1 - v[i];
    else if (want.type.dtype == DType::i32) v[i] += 1;
    else v[i] = v[i] * 1.001 + 0.002;
  }
  if (is_float) v[3] = std::numeric_limits<double>::quiet_NaN();
  return HostTensor(want.type, v);
}

void expect_same_figures(DType dt, bool with_inf) {
  SCOPED_TRACE(std::string(dtype_name(dt)) + (with_inf ? " with inf" : ""));
  HostTensor want = random_tensor(TensorType{dt, {1001, 37}}, 5);
  if (with_inf) want.values[10] = std::numeric_limits<double>::infinity();
  HostTensor got = perturbed(want);
  if (with_inf) got.values[10] = std::numeric_limits<double>::infinity();
  Comparison host = compare(got, want);
  runtime::DeviceBuffer buffer = runtime::DeviceBuffer::from_host(got);
  Comparison device = runtime::DeviceReference(want).compare(buffer, runtime::default_arch());
  EXPECT_EQ(device.passed, host.passed);
  EXPECT_EQ(device.bad_nonfinite, host.bad_nonfinite);
  EXPECT_EQ(device.mismatches, host.mismatches);
  EXPECT_DOUBLE_EQ(device.max_abs, host.max_abs);
  EXPECT_NEAR(device.rel_l2, host.rel_l2, 1e-12 + 1e-9 * host.rel_l2);
}

TEST(DeviceCompareGpu, MatchesTheHostComparisonForEveryDtype) {
  KILN_REQUIRE_GPU();
  for (DType dt : {DType::f32, DType::f16, DType::bf16, DType::i32, DType::i1}) expect_same_figures(dt, false);
  for (DType dt : {DType::f32, DType::f16, DType::bf16}) expect_same_figures(dt, true);
}

TEST(DeviceCompareGpu, AnExactCopyPassesAndAPoisonedOneFails) {
  KILN_REQUIRE_GPU();
  HostTensor want = random_tensor(TensorType{DType::f16, {3, 1000003}}, 9);
  runtime::DeviceReference ref(want);
  runtime::DeviceBuffer same = runtime::DeviceBuffer::from_host(want);
  Comparison ok = ref.compare(same, runtime::default_arch());
  EXPECT_TRUE(ok.passed) << ok.str();
  EXPECT_EQ(ok.rel_l2, 0);
  same.fill_bytes(0xFF);  // NaN everywhere
  Comparison bad = ref.compare(same, runtime::default_arch());
  EXPECT_FALSE(bad.passed);
  EXPECT_EQ(bad.bad_nonfinite, static_cast<int64_t>(want.values.size()));
}

}  // namespace
}  // namespace kiln
