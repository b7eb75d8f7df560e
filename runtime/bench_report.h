// The result file of `kiln bench` and bench/peers.py: one JSON document with the
// device, the date, the copy bandwidth measured in the same run and one row per
// (case, dtype, shape, impl). Also its CSV form and the merge of a peers file into
// Kiln's own results.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "runtime/stream_ceilings.h"

namespace kiln::runtime {

struct BenchRow {
  std::string case_name;       // "softmax"
  std::string dtype;           // "f16"
  std::vector<int64_t> shape;  // [R, C]; GEMM cases [M, N, K] or [B, M, N, K]
  std::string impl;            // "kiln default", "kiln tuned", "hand-written", "torch eager", ...
  double median_ms = 0;
  int64_t bytes = 0;
  int64_t flops = 0;
  double gb_s = 0;
  double tflop_s = 0;
  // % of the roofline of the report this row is in: of the copy bandwidth times the
  // row's flop/B, capped by the GEMM rate (for memory-bound rows: % of copy bandwidth).
  double pct_roofline = 0;
  std::string config;
  std::string check = "skipped";  // "passed", "failed" or "skipped"
  // For a row merged from a peers file: the peer's own pct_roofline.
  std::optional<double> peer_pct_roofline;
  // A row under the bandwidth slope: the part of `bytes` written, and the ceiling of its
  // own mix of reads and writes (stream_ceilings.h) with the row's % of it; ceiling_gbs
  // is 0 where the run measured no read and write ceilings.
  std::optional<int64_t> written_bytes;
  double ceiling_gbs = 0;
  double pct_ceiling = 0;

  bool same_key(const BenchRow& o) const {
    return case_name == o.case_name && dtype == o.dtype && shape == o.shape && impl == o.impl;
  }
};

struct BenchReport {
  std::string tool = "kiln bench";
  std::string gpu;
  std::string date;  // YYYY-MM-DD
  double copy_gbs = 0;
  double read_gbs = 0, write_gbs = 0;  // the read-only and write-only stream ceilings; 0 when not measured
  double gemm_tflops = 0;   // the compute roof; 0 when not measured
  std::string gemm_source;  // what was timed for it, or why it was not
  std::vector<BenchRow> rows;
};

// Fills gb_s, tflop_s and pct_roofline from median_ms, bytes, flops, copy_gbs and
// gemm_tflops (0: no compute roof); all 0 when median_ms is not positive.
void fill_rates(BenchRow& row, double copy_gbs, double gemm_tflops = 0);
// The row's place under the roofline from its gb_s and tflop_s: % of the GEMM rate for
// a row whose flop/B puts it past the ridge (copy_gbs x intensity above the rate), else
// % of the copy bandwidth.
double roofline_percent(const BenchRow& row, double copy_gbs, double gemm_tflops);
// Whether a row sits under the compute roof (its flop/B times the copy bandwidth above
// the GEMM rate) rather than under the bandwidth slope.
bool past_ridge(const BenchRow& row, double copy_gbs, double gemm_tflops);
// Fills ceiling_gbs and pct_ceiling of a row under the bandwidth slope whose written
// bytes are known, from the report's stream ceilings; clears them otherwise.
void place_under_ceiling(BenchRow& row, const StreamCeilings& ceilings, double gemm_tflops);

nlohmann::json to_json(const BenchReport& report);
// Throws kiln::Error naming the missing or mistyped field (and the row).
BenchReport report_from_json(const nlohmann::json& j);
// Files; both throw kiln::Error naming the path when it cannot be read or written.
BenchReport read_bench_report(const std::string& path);
void write_bench_report(const std::string& path, const BenchReport& report);

// One header line, then one line per row (the JSON row fields, in that order).
std::string to_csv(const BenchReport& report);

// Adds the peers' rows to `ours`, replacing a row with the same key. Each merged
// row keeps the peer's own figure in peer_pct_roofline and has pct_roofline
// recomputed against our roofline (ours.copy_gbs and ours.gemm_tflops) and, where it
// has its written bytes, placed under our stream ceilings.
void merge_peers(BenchReport& ours, const BenchReport& peers);

// Today's date as YYYY-MM-DD (local time).
std::string today();

}  // namespace kiln::runtime
