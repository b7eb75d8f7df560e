// CompileCache: NVRTC results kept in memory and on disk, keyed by a SHA-256 of
// everything that changes the binary (source, program name, every flag, the arch,
// the NVRTC version). Disk entries are written atomically (temp file + rename) and
// checked in full before use: a damaged entry is recompiled and overwritten, never
// loaded. A cache folder that cannot be used is a warning, not an error: the cache
// then works in memory only.
//
// Layout under the cache folder (knobs::cache_dir(), default ~/.cache/kiln):
//   kernels/<key>.entry   header + payload (PTX, cubin, log)
//   kernels/<key>.cu      the source, and kernels/<key>.ptx its PTX, for people and dumps
#pragma once
#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "runtime/nvrtc.h"

namespace kiln::runtime {

struct CacheStats {
  uint64_t memory_hits = 0;
  uint64_t disk_hits = 0;
  uint64_t misses = 0;          // each one an NVRTC compile
  uint64_t disk_rejected = 0;   // entries found on disk but damaged (then recompiled)
};

// The cache key: 64 hex characters of SHA-256 over the inputs, each length-prefixed.
std::string compile_cache_key(const std::string& source, const std::string& program_name, const std::string& arch,
                              const std::vector<std::string>& flags, int nvrtc_version);

// Writes an entry atomically: a temp file in the same folder, then rename(). Throws
// kiln::Error when the file cannot be written.
void write_cache_entry(const std::string& path, const std::string& key, const CompileResult& result);
// Reads and checks an entry; nullopt when the file is absent or damaged. When
// damaged, *why (if given) says how (bad magic, wrong key, truncated, checksum...).
std::optional<CompileResult> read_cache_entry(const std::string& path, const std::string& key,
                                              std::string* why = nullptr);

class CompileCache {
public:
  // Uses knobs::cache_dir().
  CompileCache();
  // `nvrtc_version` is part of every key; other values than the linked NVRTC's are for tests.
  explicit CompileCache(std::string dir, int nvrtc_version = runtime::nvrtc_version());

  // The process-wide cache, under knobs::cache_dir().
  static CompileCache& global();

  // Thread-safe; NVRTC runs without holding the cache's lock, so that several
  // threads compile at once. A result from memory or disk has from_cache = true.
  CompileResult compile(const std::string& source, const std::string& program_name, const CompileOptions& options);

  std::string key(const std::string& source, const std::string& program_name, const CompileOptions& options) const;
  // <dir>/kernels/<key>: add ".entry", ".cu" or ".ptx".
  std::string entry_stem(const std::string& key) const;
  const std::string& dir() const { return dir_; }
  bool on_disk() const { return on_disk_; }
  CacheStats stats() const;
  // Forgets what is held in memory (the disk is untouched).
  void clear_memory();

private:
  void disable_disk(const std::string& reason);

  std::string dir_;
  int nvrtc_version_;
  std::atomic<bool> on_disk_{true};
  mutable std::mutex mutex_;
  std::unordered_map<std::string, CompileResult> memory_;
  CacheStats stats_;
};

}  // namespace kiln::runtime
