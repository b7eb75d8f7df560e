// The `kiln bench` vendor rows of the GEMM cases on small sizes: set up on the job's
// buffers as `kiln bench` sets them up, each must pass the check every row passes.
// Skips without a GPU or without cuBLAS.
#include <gtest/gtest.h>

#include "gemm_check_util.h"
#include "runtime/bench_cases.h"
#include "runtime/bench_vendor.h"

namespace kiln {
namespace {

using gpu_test::run_and_compare;

TEST(BenchVendorGpu, EveryGemmRowPassesItsCheck) {
  KILN_REQUIRE_CUBLAS();
  struct Job {
    const char* name;
    runtime::BenchSize size;
  };
  for (const Job& j : {Job{"gemm", runtime::BenchSize::gemm(67, 41, 99)},
                       Job{"gemm_batched", runtime::BenchSize::batched_gemm(3, 64, 48, 80)},
                       Job{"gemm_bias_gelu", runtime::BenchSize::gemm(64, 72, 96)}}) {
    const runtime::BenchCase& c = runtime::find_bench_case(j.name);
    for (const std::string& impl : runtime::vendor_impls(c)) {
      SCOPED_TRACE(fmt::format("{} {} {}", j.name, j.size.str(), impl));
      const ir::Graph g = runtime::bench_graph(c, DType::f16, j.size);
      Comparison result = run_and_compare(g, [&](const auto& in, runtime::DeviceBuffer& out) {
        std::vector<runtime::DeviceBuffer> outs;
        outs.emplace_back(out.bytes());
        runtime::VendorRun v = runtime::make_vendor_run(impl, c, DType::f16, j.size, in, outs, "");
        v.launch();
        runtime::Device::get().synchronize();
        out.copy_from(outs[0]);
      });
      EXPECT_TRUE(result.passed) << result.str();
    }
  }
}

}  // namespace
}  // namespace kiln
