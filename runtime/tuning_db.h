// The tuning database: what the autotuner measured, kept in one JSON file
// (knobs::tune_db(), default $KILN_CACHE_DIR/tuning.json) so that later compiles pick
// the tuned config without timing anything. One record per kernel signature and
// device; a record matches only when every key field does (signature, device name,
// arch, NVRTC version, Kiln version). The file is written atomically (temp + rename),
// new records are merged into it under a file lock (record()), and a damaged file is
// a warning, read as empty, never a crash.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "ir/kernel.h"
#include "ir/tile_config.h"

namespace kiln::runtime {

// SHA-256 (hex) of the kernel's IR text without its config and name: the args with
// their shapes, dtypes and strides, and the scalar body.
std::string kernel_signature(const ir::Kernel& k);

struct TuningKey {
  std::string signature;
  std::string device;  // the GPU's name; empty in a lookup matches any device (no GPU here)
  std::string arch;    // the compile target, "sm_90a"
  int nvrtc_version = 0;
  std::string kiln_version;
};

// The key of `k` on the device that records are looked up for: the GPU when there is
// one, else an empty device name and the arch KILN_ARCH names (sm_90a when unset).
// `arch`: the target the kernel is compiled for (empty: the GPU's own, else KILN_ARCH or
// sm_90a); records tuned for one target are found only when compiling for it.
TuningKey current_key(const ir::Kernel& k, const std::string& arch = "");

// How one candidate fared. A time of infinity means it cannot be used.
enum class TrialStatus { Ok, CompileFailed, OutOfResources, CheckFailed, StoppedEarly, OverBudget, NotTimed };
std::string_view trial_status_name(TrialStatus s);  // "ok", "out of resources", ...

struct Trial {
  ir::TileConfig config;
  TrialStatus status = TrialStatus::NotTimed;
  double median_ms = 0;  // infinity unless status is Ok or StoppedEarly
  double compile_ms = 0;
  std::string detail;  // the check's figures, the error, ...
};

// The index of the trial to keep: the fastest Ok one, except that within `tie`
// (relative) of the fastest the `preferred` trial (the kernel's default config) wins,
// else the one listed first, so that tuning twice picks the same config despite noise
// and a tie never trades the default for a config no faster. -1 when no trial is Ok.
int choose_best(const std::vector<Trial>& trials, double tie = 0.02, int preferred = -1);

struct TuningRecord {
  TuningKey key;
  std::string kernel;  // the kernel's IR text, for people reading the file
  std::vector<Trial> trials;
  ir::TileConfig chosen;
};

class TuningDb {
public:
  // Reads `path`. A missing file is an empty database; a damaged one is too, after a
  // warning on stderr naming the file and what is wrong with it.
  static TuningDb load(const std::string& path);

  // Writes the whole database to `path` atomically. Throws kiln::Error when it cannot.
  // Another process's records written since this one loaded are lost: to add records
  // to a file that others may be writing, use record().
  void save(const std::string& path) const;

  // Adds `records` to the database file at `path` (each replacing the record with its
  // key): under an exclusive lock on `path`.lock, it reads the file as it is now,
  // merges, and writes it atomically. Processes that tune at once so keep every record,
  // and a reader never sees a partial file. Throws kiln::Error when it cannot.
  static void record(const std::string& path, const std::vector<TuningRecord>& records);

  // The record whose key matches `key` in every field (an empty key.device matches any).
  const TuningRecord* find(const TuningKey& key) const;
  // Why find() fails: "no record with this signature", or "signature matches but arch
  // differs (record sm_80, device sm_90a)", naming the closest record's first differing field.
  std::string explain_miss(const TuningKey& key) const;
  // Adds `r`, replacing the record with the same key.
  void put(TuningRecord r);

  const std::vector<TuningRecord>& records() const { return records_; }

private:
  std::vector<TuningRecord> records_;
};

}  // namespace kiln::runtime
