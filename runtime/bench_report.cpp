// The benchmark result file: JSON in and out, CSV out, and the merge of a peers file.
#include "runtime/bench_report.h"

#include <fmt/format.h>

#include <ctime>
#include <fstream>
#include <sstream>

#include "ir/error.h"

namespace kiln::runtime {

bool past_ridge(const BenchRow& row, double copy_gbs, double gemm_tflops) {
  const double intensity = row.bytes > 0 ? static_cast<double>(row.flops) / static_cast<double>(row.bytes) : 0;
  return gemm_tflops > 0 && copy_gbs * intensity / 1e3 > gemm_tflops;
}

double roofline_percent(const BenchRow& row, double copy_gbs, double gemm_tflops) {
  // The roofline: bandwidth x intensity until the compute roof. A row under the slope
  // is measured against the bandwidth, one past the ridge against the GEMM rate.
  if (past_ridge(row, copy_gbs, gemm_tflops)) return 100.0 * row.tflop_s / gemm_tflops;
  return copy_gbs > 0 ? 100.0 * row.gb_s / copy_gbs : 0;
}

void place_under_ceiling(BenchRow& row, const StreamCeilings& ceilings, double gemm_tflops) {
  row.ceiling_gbs = row.pct_ceiling = 0;
  if (!row.written_bytes || past_ridge(row, ceilings.copy_gbs, gemm_tflops)) return;
  row.ceiling_gbs = mix_ceiling_gbs(row.bytes - *row.written_bytes, *row.written_bytes, ceilings);
  if (row.ceiling_gbs > 0 && row.gb_s > 0) row.pct_ceiling = 100.0 * row.gb_s / row.ceiling_gbs;
}

void fill_rates(BenchRow& row, double copy_gbs, double gemm_tflops) {
  row.gb_s = row.tflop_s = row.pct_roofline = 0;
  if (row.median_ms <= 0) return;
  const double seconds = row.median_ms * 1e-3;
  row.gb_s = static_cast<double>(row.bytes) / seconds / 1e9;
  row.tflop_s = static_cast<double>(row.flops) / seconds / 1e12;
  row.pct_roofline = roofline_percent(row, copy_gbs, gemm_tflops);
}

nlohmann::json to_json(const BenchReport& report) {
  nlohmann::json rows = nlohmann::json::array();
  for (const BenchRow& r : report.rows) {
    nlohmann::json j = {{"case", r.case_name}, {"dtype", r.dtype},     {"shape", r.shape},
                        {"impl", r.impl},      {"median_ms", r.median_ms}, {"bytes", r.bytes},
                        {"flops", r.flops},    {"gb_s", r.gb_s},       {"tflop_s", r.tflop_s},
                        {"pct_roofline", r.pct_roofline}, {"config", r.config}, {"check", r.check}};
    if (r.peer_pct_roofline) j["peer_pct_roofline"] = *r.peer_pct_roofline;
    if (r.written_bytes) j["written_bytes"] = *r.written_bytes;
    if (r.ceiling_gbs > 0) {
      j["ceiling_gbs"] = r.ceiling_gbs;
      j["pct_ceiling"] = r.pct_ceiling;
    }
    rows.push_back(std::move(j));
  }
  nlohmann::json out = {{"tool", report.tool}, {"gpu", report.gpu}, {"date", report.date},
                        {"copy_gbs", report.copy_gbs}, {"rows", rows}};
  if (report.read_gbs > 0 || report.write_gbs > 0)
    out["roof"] = {{"copy_gbs", report.copy_gbs}, {"read_gbs", report.read_gbs}, {"write_gbs", report.write_gbs},
                   {"model", "ceiling_gbs = 1 / t, t the seconds per byte interpolated linearly in W / (R + W) "
                             "between 1 / read_gbs (0), 1 / copy_gbs (1/2) and 1 / write_gbs (1); R and W the "
                             "row's bytes read and written"}};
  if (report.gemm_tflops > 0 || !report.gemm_source.empty()) {
    out["gemm_tflops"] = report.gemm_tflops;
    out["gemm_source"] = report.gemm_source;
  }
  return out;
}

namespace {

template <class T>
T field(const nlohmann::json& j, const char* name, const std::string& where) {
  if (!j.is_object() || !j.contains(name)) throw Error(fmt::format("bench report: {} has no field '{}'", where, name));
  try {
    return j.at(name).get<T>();
  } catch (const nlohmann::json::exception& e) {
    throw Error(fmt::format("bench report: {}: field '{}' has the wrong type ({})", where, name, e.what()));
  }
}

}  // namespace

BenchReport report_from_json(const nlohmann::json& j) {
  BenchReport report;
  report.tool = field<std::string>(j, "tool", "the report");
  report.gpu = field<std::string>(j, "gpu", "the report");
  report.date = field<std::string>(j, "date", "the report");
  report.copy_gbs = field<double>(j, "copy_gbs", "the report");
  if (j.contains("gemm_tflops")) report.gemm_tflops = field<double>(j, "gemm_tflops", "the report");
  if (j.contains("gemm_source")) report.gemm_source = field<std::string>(j, "gemm_source", "the report");
  if (j.contains("roof")) {
    const auto roof = field<nlohmann::json>(j, "roof", "the report");
    report.read_gbs = field<double>(roof, "read_gbs", "the report's roof");
    report.write_gbs = field<double>(roof, "write_gbs", "the report's roof");
  }
  const auto rows = field<nlohmann::json>(j, "rows", "the report");
  if (!rows.is_array()) throw Error("bench report: field 'rows' must be an array");
  for (size_t i = 0; i < rows.size(); ++i) {
    const nlohmann::json& r = rows[i];
    const std::string where = fmt::format("row {}", i);
    BenchRow row;
    row.case_name = field<std::string>(r, "case", where);
    row.dtype = field<std::string>(r, "dtype", where);
    row.shape = field<std::vector<int64_t>>(r, "shape", where);
    row.impl = field<std::string>(r, "impl", where);
    row.median_ms = field<double>(r, "median_ms", where);
    row.bytes = field<int64_t>(r, "bytes", where);
    row.flops = r.contains("flops") && !r["flops"].is_null() ? field<int64_t>(r, "flops", where) : 0;
    row.gb_s = field<double>(r, "gb_s", where);
    row.tflop_s = r.contains("tflop_s") && !r["tflop_s"].is_null() ? field<double>(r, "tflop_s", where) : 0;
    row.pct_roofline = field<double>(r, "pct_roofline", where);
    row.config = r.contains("config") ? field<std::string>(r, "config", where) : "";
    row.check = field<std::string>(r, "check", where);
    if (row.check != "passed" && row.check != "failed" && row.check != "skipped")
      throw Error(fmt::format("bench report: {}: check must be passed, failed or skipped, got '{}'", where, row.check));
    if (r.contains("peer_pct_roofline")) row.peer_pct_roofline = field<double>(r, "peer_pct_roofline", where);
    if (r.contains("written_bytes")) row.written_bytes = field<int64_t>(r, "written_bytes", where);
    if (r.contains("ceiling_gbs")) row.ceiling_gbs = field<double>(r, "ceiling_gbs", where);
    if (r.contains("pct_ceiling")) row.pct_ceiling = field<double>(r, "pct_ceiling", where);
    report.rows.push_back(std::move(row));
  }
  return report;
}

BenchReport read_bench_report(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error(fmt::format("cannot read the bench report {}", path));
  nlohmann::json j;
  try {
    f >> j;
  } catch (const nlohmann::json::exception& e) {
    throw Error(fmt::format("{}: not valid JSON: {}", path, e.what()));
  }
  try {
    return report_from_json(j);
  } catch (const Error& e) {
    throw Error(fmt::format("{}: {}", path, e.what()));
  }
}

void write_bench_report(const std::string& path, const BenchReport& report) {
  std::ofstream f(path, std::ios::binary);
  f << to_json(report).dump(2) << "\n";
  if (!f) throw Error(fmt::format("cannot write the bench report {}", path));
}

namespace {

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

}  // namespace

std::string to_csv(const BenchReport& report) {
  std::string out =
      "case,dtype,shape,impl,median_ms,bytes,flops,gb_s,tflop_s,pct_roofline,config,check,written_bytes,ceiling_gbs,"
      "pct_ceiling\n";
  for (const BenchRow& r : report.rows) {
    const std::string written = r.written_bytes ? std::to_string(*r.written_bytes) : "";
    const std::string ceiling = r.ceiling_gbs > 0 ? fmt::format("{}", r.ceiling_gbs) : "";
    const std::string pct = r.ceiling_gbs > 0 ? fmt::format("{}", r.pct_ceiling) : "";
    out += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n", csv_field(r.case_name), r.dtype,
                       fmt::format("{}", fmt::join(r.shape, "x")), csv_field(r.impl), r.median_ms, r.bytes, r.flops,
                       r.gb_s, r.tflop_s, r.pct_roofline, csv_field(r.config), r.check, written, ceiling, pct);
  }
  return out;
}

void merge_peers(BenchReport& ours, const BenchReport& peers) {
  for (BenchRow row : peers.rows) {
    row.peer_pct_roofline = row.pct_roofline;
    row.pct_roofline = row.gb_s > 0 ? roofline_percent(row, ours.copy_gbs, ours.gemm_tflops) : 0;
    if (ours.read_gbs > 0 || ours.write_gbs > 0)
      place_under_ceiling(row, StreamCeilings{ours.copy_gbs, ours.read_gbs, ours.write_gbs}, ours.gemm_tflops);
    bool replaced = false;
    for (BenchRow& mine : ours.rows) {
      if (mine.same_key(row)) {
        mine = row;
        replaced = true;
      }
    }
    if (!replaced) ours.rows.push_back(std::move(row));
  }
}

std::string today() {
  std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char text[16];
  std::strftime(text, sizeof text, "%Y-%m-%d", &local);
  return text;
}

}  // namespace kiln::runtime
