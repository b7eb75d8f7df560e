// The tuning database's JSON form, its atomic write and its lookups.
#include "runtime/tuning_db.h"

#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

#include "ir/error.h"
#include "runtime/cuda_driver.h"
#include "runtime/device.h"
#include "runtime/file_lock.h"
#include "runtime/knobs.h"
#include "runtime/nvrtc.h"
#include "runtime/sha256.h"

namespace kiln::runtime {

using nlohmann::json;

namespace {

constexpr int kFormatVersion = 1;
constexpr TrialStatus kStatuses[] = {TrialStatus::Ok,          TrialStatus::CompileFailed, TrialStatus::OutOfResources,
                                     TrialStatus::CheckFailed, TrialStatus::StoppedEarly,  TrialStatus::OverBudget,
                                     TrialStatus::NotTimed};

json config_to_json(const ir::TileConfig& c) {
  json j = json::object();
  const ir::Attrs attrs = c.to_attrs();  // kept alive: items() refers into it
  for (const auto& [name, value] : attrs.items()) {
    if (const auto* text = std::get_if<std::string>(&value)) j[name] = *text;  // the gemm schedule's name
    else j[name] = std::get<int64_t>(value);
  }
  return j;
}

ir::TileConfig config_from_json(const json& j) {
  ir::Attrs a;
  for (const auto& [name, value] : j.items()) {
    if (value.is_string()) a.set(name, value.get<std::string>());
    else a.set(name, value.get<int64_t>());
  }
  return ir::TileConfig::from_attrs(a);
}

// Times are numbers, or the string "inf" (JSON has no infinity).
json time_to_json(double ms) { return std::isfinite(ms) ? json(ms) : json("inf"); }
double time_from_json(const json& j) {
  if (j.is_string() && j.get<std::string>() == "inf") return std::numeric_limits<double>::infinity();
  return j.get<double>();
}

TrialStatus status_from_name(const std::string& name) {
  for (TrialStatus s : kStatuses)
    if (trial_status_name(s) == name) return s;
  throw Error(fmt::format("unknown trial status '{}'", name));
}

json record_to_json(const TuningRecord& r) {
  json trials = json::array();
  for (const Trial& t : r.trials)
    trials.push_back({{"config", config_to_json(t.config)},
                      {"status", std::string(trial_status_name(t.status))},
                      {"median_ms", time_to_json(t.median_ms)},
                      {"compile_ms", t.compile_ms},
                      {"detail", t.detail}});
  return {{"signature", r.key.signature},         {"device", r.key.device},
          {"arch", r.key.arch},                   {"nvrtc_version", r.key.nvrtc_version},
          {"kiln_version", r.key.kiln_version},   {"kernel", r.kernel},
          {"chosen", config_to_json(r.chosen)},   {"trials", trials}};
}

TuningRecord record_from_json(const json& j) {
  TuningRecord r;
  r.key.signature = j.at("signature").get<std::string>();
  r.key.device = j.at("device").get<std::string>();
  r.key.arch = j.at("arch").get<std::string>();
  r.key.nvrtc_version = j.at("nvrtc_version").get<int>();
  r.key.kiln_version = j.at("kiln_version").get<std::string>();
  r.kernel = j.value("kernel", std::string());
  r.chosen = config_from_json(j.at("chosen"));
  for (const json& t : j.at("trials")) {
    Trial trial;
    trial.config = config_from_json(t.at("config"));
    trial.status = status_from_name(t.at("status").get<std::string>());
    trial.median_ms = time_from_json(t.at("median_ms"));
    trial.compile_ms = t.value("compile_ms", 0.0);
    trial.detail = t.value("detail", std::string());
    r.trials.push_back(std::move(trial));
  }
  return r;
}

bool device_matches(const std::string& wanted, const std::string& recorded) {
  return wanted.empty() || wanted == recorded;
}

}  // namespace

std::string kernel_signature(const ir::Kernel& k) {
  ir::Kernel bare = k;
  bare.name = "k";
  bare.config = ir::TileConfig{};
  return sha256_hex(ir::print(bare));
}

TuningKey current_key(const ir::Kernel& k, const std::string& arch) {
  TuningKey key;
  key.signature = kernel_signature(k);
  if (gpu_available()) {
    key.device = Device::get().name();
    key.arch = Device::get().compile_target();
  } else {
    key.arch = knobs::arch().value_or("sm_90a");
  }
  if (!arch.empty()) key.arch = arch;
  key.nvrtc_version = nvrtc_version();
  key.kiln_version = KILN_VERSION;
  return key;
}

std::string_view trial_status_name(TrialStatus s) {
  switch (s) {
    case TrialStatus::Ok: return "ok";
    case TrialStatus::CompileFailed: return "compile failed";
    case TrialStatus::OutOfResources: return "out of resources";
    case TrialStatus::CheckFailed: return "check failed";
    case TrialStatus::StoppedEarly: return "stopped early";
    case TrialStatus::OverBudget: return "over time budget";
    case TrialStatus::NotTimed: return "not timed";
  }
  return "?";
}

int choose_best(const std::vector<Trial>& trials, double tie, int preferred) {
  double fastest = std::numeric_limits<double>::infinity();
  for (const Trial& t : trials)
    if (t.status == TrialStatus::Ok) fastest = std::min(fastest, t.median_ms);
  if (!std::isfinite(fastest)) return -1;
  auto tied = [&](size_t i) { return trials[i].status == TrialStatus::Ok && trials[i].median_ms <= fastest * (1 + tie); };
  if (preferred >= 0 && static_cast<size_t>(preferred) < trials.size() && tied(static_cast<size_t>(preferred)))
    return preferred;
  for (size_t i = 0; i < trials.size(); ++i)
    if (tied(i)) return static_cast<int>(i);
  return -1;
}

TuningDb TuningDb::load(const std::string& path) {
  TuningDb db;
  std::ifstream f(path, std::ios::binary);
  if (!f) return db;
  std::stringstream text;
  text << f.rdbuf();
  try {
    json j = json::parse(text.str());
    if (j.at("version").get<int>() != kFormatVersion)
      throw Error(fmt::format("format version {} (expected {})", j.at("version").dump(), kFormatVersion));
    for (const json& r : j.at("records")) db.records_.push_back(record_from_json(r));
  } catch (const std::exception& e) {  // json's errors and kiln::Error alike
    std::cerr << fmt::format("kiln: warning: ignoring the tuning database {}: it is damaged ({})\n", path, e.what());
    db.records_.clear();
  }
  return db;
}

void TuningDb::save(const std::string& path) const {
  json records = json::array();
  for (const TuningRecord& r : records_) records.push_back(record_to_json(r));
  const std::string text = json{{"version", kFormatVersion}, {"records", records}}.dump(2) + "\n";

  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path target(path);
  if (target.has_parent_path()) fs::create_directories(target.parent_path(), ec);
  static std::atomic<int> counter{0};
  // A temp file beside the target (rename is atomic within one file system).
  fs::path temp = target;
  temp += fmt::format(".tmp.{}.{}", ::getpid(), counter++);
  {
    std::ofstream f(temp, std::ios::binary);
    f << text;
    f.flush();
    if (!f) {
      fs::remove(temp, ec);
      throw Error(fmt::format("cannot write the tuning database {} (temp file {})", path, temp.string()));
    }
  }
  fs::rename(temp, target, ec);
  if (ec) {
    std::error_code ignored;
    fs::remove(temp, ignored);
    throw Error(fmt::format("cannot write the tuning database {}: {}", path, ec.message()));
  }
}

void TuningDb::record(const std::string& path, const std::vector<TuningRecord>& records) {
  if (records.empty()) return;
  std::error_code ec;
  std::filesystem::path target(path);
  if (target.has_parent_path()) std::filesystem::create_directories(target.parent_path(), ec);
  const FileLock lock(path + ".lock");
  TuningDb db = load(path);  // what other processes recorded since this one last read
  for (const TuningRecord& r : records) db.put(r);
  db.save(path);
}

const TuningRecord* TuningDb::find(const TuningKey& key) const {
  for (const TuningRecord& r : records_)
    if (r.key.signature == key.signature && device_matches(key.device, r.key.device) && r.key.arch == key.arch &&
        r.key.nvrtc_version == key.nvrtc_version && r.key.kiln_version == key.kiln_version)
      return &r;
  return nullptr;
}

std::string TuningDb::explain_miss(const TuningKey& key) const {
  if (find(key)) return "a record matches";
  // The first record with this signature tells which other field differs; the fields
  // are checked in key order, so the message names the first one that misses.
  for (const TuningRecord& r : records_) {
    if (r.key.signature != key.signature) continue;
    auto differs = [](std::string_view field, const std::string& recorded, const std::string& wanted) {
      return fmt::format("signature matches but {} differs (record {}, device {})", field, recorded, wanted);
    };
    if (!device_matches(key.device, r.key.device)) return differs("device", r.key.device, key.device);
    if (r.key.arch != key.arch) return differs("arch", r.key.arch, key.arch);
    if (r.key.nvrtc_version != key.nvrtc_version)
      return differs("NVRTC version", std::to_string(r.key.nvrtc_version), std::to_string(key.nvrtc_version));
    return differs("Kiln version", r.key.kiln_version, key.kiln_version);
  }
  return fmt::format("no record with this signature ({} records in the database)", records_.size());
}

void TuningDb::put(TuningRecord r) {
  for (TuningRecord& old : records_) {
    if (old.key.signature == r.key.signature && old.key.device == r.key.device && old.key.arch == r.key.arch &&
        old.key.nvrtc_version == r.key.nvrtc_version && old.key.kiln_version == r.key.kiln_version) {
      old = std::move(r);
      return;
    }
  }
  records_.push_back(std::move(r));
}

}  // namespace kiln::runtime
