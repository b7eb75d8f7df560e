// The benchmark result file: JSON written and read back unchanged, rates from times,
// CSV quoting, schema errors, and the merge of a peers file into Kiln's report.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "ir/error.h"
#include "runtime/bench_cases.h"
#include "runtime/bench_report.h"

namespace kiln {
namespace {

using runtime::BenchReport;
using runtime::BenchRow;

BenchRow row(const std::string& impl, double ms, double pct) {
  BenchRow r;
  r.case_name = "softmax";
  r.dtype = "f16";
  r.shape = {32768, 4096};
  r.impl = impl;
  r.median_ms = ms;
  r.bytes = 536870912;
  r.gb_s = 4000;
  r.pct_roofline = pct;
  r.config = "{threads/row = 128, vec = 8}";
  r.check = "passed";
  return r;
}

BenchReport sample() {
  BenchReport r;
  r.gpu = "NVIDIA H200";
  r.date = "2026-11-29";
  r.copy_gbs = 4000;
  r.rows = {row("kiln default", 0.14, 95.0), row("hand-written", 0.13, 99.0)};
  return r;
}

void expect_same(const BenchReport& a, const BenchReport& b) {
  EXPECT_EQ(a.tool, b.tool);
  EXPECT_EQ(a.gpu, b.gpu);
  EXPECT_EQ(a.date, b.date);
  EXPECT_EQ(a.copy_gbs, b.copy_gbs);
  ASSERT_EQ(a.rows.size(), b.rows.size());
  for (size_t i = 0; i < a.rows.size(); ++i) {
    EXPECT_TRUE(a.rows[i].same_key(b.rows[i]));
    EXPECT_EQ(a.rows[i].median_ms, b.rows[i].median_ms);
    EXPECT_EQ(a.rows[i].bytes, b.rows[i].bytes);
    EXPECT_EQ(a.rows[i].pct_roofline, b.rows[i].pct_roofline);
    EXPECT_EQ(a.rows[i].config, b.rows[i].config);
    EXPECT_EQ(a.rows[i].check, b.rows[i].check);
    EXPECT_EQ(a.rows[i].peer_pct_roofline, b.rows[i].peer_pct_roofline);
  }
}

TEST(BenchReport, JsonHasTheSchemaFields) {
  nlohmann::json j = runtime::to_json(sample());
  EXPECT_EQ(j["tool"], "kiln bench");
  EXPECT_EQ(j["copy_gbs"], 4000.0);
  const nlohmann::json& r = j["rows"][0];
  for (const char* f : {"case", "dtype", "shape", "impl", "median_ms", "bytes", "flops", "gb_s", "tflop_s",
                        "pct_roofline", "config", "check"})
    EXPECT_TRUE(r.contains(f)) << f;
  EXPECT_EQ(r["shape"], nlohmann::json::array({32768, 4096}));
  EXPECT_FALSE(r.contains("peer_pct_roofline"));
}

TEST(BenchReport, JsonRoundTripsThroughAFile) {
  const std::string path = (std::filesystem::temp_directory_path() / "kiln_bench_report_test.json").string();
  BenchReport before = sample();
  before.rows[0].peer_pct_roofline = 80.5;
  runtime::write_bench_report(path, before);
  expect_same(before, runtime::read_bench_report(path));
  std::filesystem::remove(path);
}

TEST(BenchReport, FillRatesFromTime) {
  BenchRow r;
  r.bytes = 2'000'000'000;
  r.flops = 4'000'000'000'000;
  r.median_ms = 1000;  // one second
  runtime::fill_rates(r, 4000);
  EXPECT_DOUBLE_EQ(r.gb_s, 2.0);
  EXPECT_DOUBLE_EQ(r.tflop_s, 4.0);
  EXPECT_DOUBLE_EQ(r.pct_roofline, 0.05);
}

TEST(BenchReport, RooflineIsBandwidthUnderTheSlopeAndTheGemmRatePastTheRidge) {
  BenchRow r;
  r.median_ms = 1000;
  r.bytes = 2'000'000'000;
  r.flops = 4'000'000'000'000;  // 2000 flop/B: 4000 GB/s x 2000 = 8000 TFLOP/s > 800, past the ridge
  runtime::fill_rates(r, 4000, 800);
  EXPECT_DOUBLE_EQ(r.pct_roofline, 0.5);  // 4 of 800 TFLOP/s
  r.flops = 2'000'000'000;                // 1 flop/B: 4 TFLOP/s, under the slope
  runtime::fill_rates(r, 4000, 800);
  EXPECT_DOUBLE_EQ(r.pct_roofline, 0.05);  // 2 of 4000 GB/s
}

// A GEMM row as `kiln bench` makes it: bytes and flops from the case table.
BenchRow gemm_row(const runtime::BenchSize& size, double ms) {
  const runtime::BenchCase& c = runtime::find_bench_case("gemm");
  BenchRow r;
  r.case_name = "gemm";
  r.dtype = "f16";
  r.shape = size.dims();
  r.impl = "cublas";
  r.median_ms = ms;
  r.bytes = runtime::bench_bytes(c, DType::f16, size);
  r.flops = runtime::bench_flops(c, DType::f16, size);
  return r;
}

TEST(BenchReport, SquareGemmsSitUnderTheComputeRoof) {
  // 4096^3 in f16: 2 * 4096^3 flops over 3 * 32 MiB, 1365 flop/B, far past the ridge
  // (4000 GB/s x 1365 = 5461 TFLOP/s against a roof of 700).
  BenchRow r = gemm_row(runtime::BenchSize::gemm(4096, 4096, 4096), 0.2);
  EXPECT_GT(static_cast<double>(r.flops) / static_cast<double>(r.bytes), 1000);
  runtime::fill_rates(r, 4000, 700);
  EXPECT_NEAR(r.tflop_s, 687.2, 0.1);  // 1.374e11 flops in 0.2 ms
  EXPECT_DOUBLE_EQ(r.pct_roofline, 100.0 * r.tflop_s / 700);
}

TEST(BenchReport, ADecodeShapedGemmSitsUnderTheBandwidthRoof) {
  // M = 16 against an 8192 x 8192 weight: 16 flop/B, 4000 GB/s x 16 = 64 TFLOP/s, under the ridge.
  BenchRow r = gemm_row(runtime::BenchSize::gemm(16, 8192, 8192), 0.04);
  runtime::fill_rates(r, 4000, 700);
  EXPECT_DOUBLE_EQ(r.pct_roofline, 100.0 * r.gb_s / 4000);
  EXPECT_GT(r.tflop_s, 0);
}

TEST(BenchReport, MergedGemmRowsArePlacedUnderOurComputeRoof) {
  BenchReport ours = sample();
  ours.gemm_tflops = 800;
  BenchReport peers;
  peers.copy_gbs = 4200;
  BenchRow eager = gemm_row(runtime::BenchSize::gemm(4096, 4096, 4096), 0.25);
  eager.impl = "torch eager";
  runtime::fill_rates(eager, 4200, 600);
  peers.rows = {eager};
  runtime::merge_peers(ours, peers);
  const BenchRow& merged = ours.rows.back();
  EXPECT_DOUBLE_EQ(merged.pct_roofline, 100.0 * eager.tflop_s / 800);
  EXPECT_DOUBLE_EQ(*merged.peer_pct_roofline, 100.0 * eager.tflop_s / 600);
  EXPECT_EQ(merged.shape, (std::vector<int64_t>{4096, 4096, 4096}));
}

TEST(BenchReport, GemmRateSurvivesJson) {
  BenchReport report = sample();
  report.gemm_tflops = 780.5;
  report.gemm_source = "cuBLAS bf16 GEMM 8192^3";
  BenchReport back = runtime::report_from_json(runtime::to_json(report));
  EXPECT_DOUBLE_EQ(back.gemm_tflops, 780.5);
  EXPECT_EQ(back.gemm_source, "cuBLAS bf16 GEMM 8192^3");
  EXPECT_EQ(runtime::report_from_json(runtime::to_json(sample())).gemm_tflops, 0);  // optional field
}

TEST(BenchReport, FillRatesLeavesAnUntimedRowAtZero) {
  BenchRow r;
  r.bytes = 100;
  runtime::fill_rates(r, 4000);
  EXPECT_EQ(r.gb_s, 0);
  EXPECT_EQ(r.pct_roofline, 0);
}

TEST(BenchReport, MergeRecomputesRooflineAndKeepsThePeersFigure) {
  BenchReport ours = sample();
  BenchReport peers;
  peers.tool = "peers.py";
  peers.copy_gbs = 5000;
  BenchRow eager = row("torch eager", 0.2, 40.0);
  eager.gb_s = 2000;
  peers.rows = {eager};
  runtime::merge_peers(ours, peers);
  ASSERT_EQ(ours.rows.size(), 3u);
  const BenchRow& merged = ours.rows.back();
  EXPECT_EQ(merged.impl, "torch eager");
  EXPECT_DOUBLE_EQ(merged.pct_roofline, 50.0);  // 2000 of our 4000 GB/s
  ASSERT_TRUE(merged.peer_pct_roofline.has_value());
  EXPECT_DOUBLE_EQ(*merged.peer_pct_roofline, 40.0);
  EXPECT_FALSE(ours.rows[0].peer_pct_roofline.has_value());
}

TEST(BenchReport, MergeReplacesARowWithTheSameKey) {
  BenchReport ours = sample();
  BenchReport peers;
  BenchRow again = row("hand-written", 0.5, 10.0);
  again.gb_s = 1000;
  peers.rows = {again};
  runtime::merge_peers(ours, peers);
  ASSERT_EQ(ours.rows.size(), 2u);
  EXPECT_EQ(ours.rows[1].median_ms, 0.5);
}

TEST(BenchReport, MergedReportRoundTrips) {
  BenchReport ours = sample();
  BenchReport peers;
  peers.rows = {row("triton", 0.135, 97.0)};
  runtime::merge_peers(ours, peers);
  expect_same(ours, runtime::report_from_json(runtime::to_json(ours)));
}

TEST(BenchReport, ReadingAMissingFieldNamesIt) {
  nlohmann::json j = runtime::to_json(sample());
  j["rows"][1].erase("impl");
  try {
    runtime::report_from_json(j);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("row 1 has no field 'impl'"), std::string::npos) << e.what();
  }
}

TEST(BenchReport, ReadingABadCheckFails) {
  nlohmann::json j = runtime::to_json(sample());
  j["rows"][0]["check"] = "ok";
  EXPECT_THROW(runtime::report_from_json(j), Error);
}

TEST(BenchReport, CsvQuotesConfigsWithCommas) {
  std::string csv = runtime::to_csv(sample());
  EXPECT_EQ(csv.substr(0, csv.find('\n')),
            "case,dtype,shape,impl,median_ms,bytes,flops,gb_s,tflop_s,pct_roofline,config,check,written_bytes,"
            "ceiling_gbs,pct_ceiling");
  EXPECT_NE(csv.find("softmax,f16,32768x4096,kiln default,0.14,536870912,0,4000,0,95,\"{threads/row = 128, vec = "
                     "8}\",passed,,,\n"),
            std::string::npos)
      << csv;
}

// The ceiling of a mix: seconds per byte interpolated in the share written, through the
// read-only stream (none), the copy (half) and the write-only stream (all).
TEST(StreamCeilings, AMixIsPlacedBetweenTheStreamsItLiesBetween) {
  const runtime::StreamCeilings c{4200, 4500, 4600};
  EXPECT_DOUBLE_EQ(runtime::mix_ceiling_gbs(100, 0, c), 4500);
  EXPECT_DOUBLE_EQ(runtime::mix_ceiling_gbs(0, 100, c), 4600);
  EXPECT_NEAR(runtime::mix_ceiling_gbs(100, 100, c), 4200, 1e-9);  // a copy: the copy measured
  // Two bytes read for each written (a two-input element-wise op): two thirds of the way
  // from the read stream to the copy.
  EXPECT_NEAR(runtime::mix_ceiling_gbs(200, 100, c), 1.0 / (1.0 / 4500 + (2.0 / 3) * (1.0 / 4200 - 1.0 / 4500)), 1e-9);
  // Three bytes written for each read: halfway from the copy to the write stream.
  EXPECT_NEAR(runtime::mix_ceiling_gbs(100, 300, c), 1.0 / (0.5 / 4200 + 0.5 / 4600), 1e-9);
  // A mix that needs a stream not measured has no ceiling; one that does not, has.
  EXPECT_EQ(runtime::mix_ceiling_gbs(100, 100, runtime::StreamCeilings{0, 4500, 4600}), 0);
  EXPECT_EQ(runtime::mix_ceiling_gbs(100, 0, runtime::StreamCeilings{0, 4500, 0}), 4500);
  EXPECT_EQ(runtime::mix_ceiling_gbs(0, 0, c), 0);
  EXPECT_EQ(runtime::mix_ceiling_gbs(-1, 10, c), 0);
}

TEST(StreamCeilings, ARowWithItsWrittenBytesGetsItsCeilingAndOnlySuchARow) {
  const runtime::StreamCeilings streams{4200, 4500, 4000};
  BenchRow r = row("kiln default", 0.1, 0);
  r.bytes = 3000000;
  r.written_bytes = 1000000;
  runtime::fill_rates(r, streams.copy_gbs);
  runtime::place_under_ceiling(r, streams, 700);
  const double ceiling = runtime::mix_ceiling_gbs(2000000, 1000000, streams);
  EXPECT_GT(ceiling, 4200);
  EXPECT_LT(ceiling, 4500);
  EXPECT_NEAR(r.ceiling_gbs, ceiling, 1e-6);
  EXPECT_NEAR(r.pct_ceiling, 100.0 * 30.0 / ceiling, 1e-6);  // 3 MB in 0.1 ms: 30 GB/s
  BenchRow unknown = row("kiln default", 0.1, 0);
  runtime::place_under_ceiling(unknown, streams, 700);
  EXPECT_EQ(unknown.ceiling_gbs, 0);
  BenchRow gemm = r;  // past the ridge: under the compute roof, no stream ceiling
  gemm.flops = int64_t{1} << 40;
  runtime::fill_rates(gemm, streams.copy_gbs, 700);
  runtime::place_under_ceiling(gemm, streams, 700);
  EXPECT_EQ(gemm.ceiling_gbs, 0);
}

TEST(StreamCeilings, TheCeilingsAndARowsPlaceSurviveJson) {
  BenchReport r = sample();
  r.read_gbs = 4500;
  r.write_gbs = 3900;
  r.rows[0].written_bytes = 268435456;
  r.rows[0].ceiling_gbs = 4180;
  r.rows[0].pct_ceiling = 95.7;
  const BenchReport back = runtime::report_from_json(runtime::to_json(r));
  EXPECT_EQ(back.read_gbs, 4500);
  EXPECT_EQ(back.write_gbs, 3900);
  EXPECT_EQ(back.rows[0].written_bytes, std::optional<int64_t>(268435456));
  EXPECT_EQ(back.rows[0].ceiling_gbs, 4180);
  EXPECT_EQ(back.rows[0].pct_ceiling, 95.7);
  EXPECT_FALSE(back.rows[1].written_bytes);
  EXPECT_FALSE(runtime::to_json(sample()).contains("roof"));  // no ceilings measured, no roof
}

// A peer row that says what it writes is placed under our ceilings, as our rows are.
TEST(StreamCeilings, MergedPeerRowsArePlacedUnderOurCeilings) {
  BenchReport ours = sample();
  ours.read_gbs = 4500;
  ours.write_gbs = 4000;
  BenchReport peers = sample();
  peers.rows = {row("torch.compile", 0.15, 90.0)};
  peers.rows[0].written_bytes = peers.rows[0].bytes / 2;
  peers.rows[0].ceiling_gbs = 1;  // the peer's own figure is replaced
  runtime::merge_peers(ours, peers);
  const BenchRow& merged = ours.rows.back();
  EXPECT_EQ(merged.impl, "torch.compile");
  EXPECT_NEAR(merged.ceiling_gbs, ours.copy_gbs, 1e-6);  // half its bytes written: a copy's mix
  EXPECT_NEAR(merged.pct_ceiling, 100.0 * 4000 / merged.ceiling_gbs, 1e-6);
}

TEST(BenchReport, TodayIsAnIsoDate) {
  std::string d = runtime::today();
  ASSERT_EQ(d.size(), 10u);
  EXPECT_EQ(d[4], '-');
  EXPECT_EQ(d[7], '-');
}

// The peers' results kept in the repository read back, and every row names one of
// Kiln's cases at one of its default sizes with the same byte count: the two case
// lists (C++ and bench/peers.py) are in step.
TEST(BenchReport, StoredPeersFileMatchesKilnsCases) {
  const std::string path = std::string(KILN_SOURCE_DIR) + "/bench/results/peers-h200.json";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "no stored peers file at " << path;
  BenchReport peers = runtime::read_bench_report(path);
  EXPECT_EQ(peers.tool, "peers.py");
  ASSERT_FALSE(peers.rows.empty());
  for (const BenchRow& r : peers.rows) {
    SCOPED_TRACE(r.case_name + " " + r.dtype + " " + r.impl);
    const runtime::BenchCase& c = runtime::find_bench_case(r.case_name);
    std::optional<DType> dtype = parse_dtype(r.dtype);
    ASSERT_TRUE(dtype.has_value());
    ASSERT_EQ(r.shape.size(), 2u);
    const runtime::BenchSize size{r.shape[0], r.shape[1]};
    EXPECT_NE(std::find(c.sizes.begin(), c.sizes.end(), size), c.sizes.end()) << size.str();
    EXPECT_EQ(r.bytes, runtime::bench_bytes(c, *dtype, size));
  }
}

}  // namespace
}  // namespace kiln
