// The compile cache: key derivation, the on-disk entry format, and the lookup
// order memory -> disk -> NVRTC.
#include "runtime/compile_cache.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string_view>

#include "ir/error.h"
#include "runtime/knobs.h"
#include "runtime/sha256.h"

namespace kiln::runtime {

namespace fs = std::filesystem;

namespace {

// Entry header, little-endian: magic, format version, key (hex), PTX / cubin / log
// sizes, compile time (us), then SHA-256 over the header so far and the payload.
constexpr std::string_view kMagic = "KILNCUBN";
constexpr uint32_t kFormatVersion = 1;
constexpr size_t kKeyChars = 64;
constexpr size_t kChecksummedHeaderBytes = 8 + 4 + kKeyChars + 4 * 8;
constexpr size_t kHeaderBytes = kChecksummedHeaderBytes + 32;

void put_le(std::string& out, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out += static_cast<char>((value >> (8 * i)) & 0xff);
}

uint64_t get_le(const char* in, int bytes) {
  uint64_t value = 0;
  for (int i = 0; i < bytes; ++i) value |= uint64_t(static_cast<unsigned char>(in[i])) << (8 * i);
  return value;
}

Sha256::Digest entry_checksum(std::string_view header_prefix, std::string_view payload) {
  Sha256 hash;
  hash.update(header_prefix);
  hash.update(payload);
  return hash.finish();
}

// Writes `bytes` to a fresh temp file beside `path`, then renames it over `path`:
// a reader sees either the old file or the whole new one, never a partial write.
void write_file_atomically(const std::string& path, std::string_view bytes) {
  fs::path target(path);
  std::string temp = (target.parent_path() / ("." + target.filename().string() + ".XXXXXX")).string();
  int fd = mkstemp(temp.data());
  if (fd < 0) throw Error(fmt::format("cannot create a temp file beside {}: {}", path, std::strerror(errno)));
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      std::string reason = std::strerror(errno);
      ::close(fd);
      ::unlink(temp.c_str());
      throw Error(fmt::format("cannot write {}: {}", temp, reason));
    }
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  if (std::rename(temp.c_str(), path.c_str()) != 0) {
    std::string reason = std::strerror(errno);
    ::unlink(temp.c_str());
    throw Error(fmt::format("cannot rename {} to {}: {}", temp, path, reason));
  }
}

}  // namespace

std::string compile_cache_key(const std::string& source, const std::string& program_name, const std::string& arch,
                              const std::vector<std::string>& flags, int nvrtc_version) {
  Sha256 hash;
  // Length prefixes keep fields apart: ("ab", "c") and ("a", "bc") hash differently.
  auto field = [&hash](std::string_view text) {
    std::string length;
    put_le(length, text.size(), 8);
    hash.update(length);
    hash.update(text);
  };
  field("kiln compile cache key v1");
  field(std::to_string(nvrtc_version));
  field(arch);
  field(program_name);
  field(source);
  field(std::to_string(flags.size()));
  for (const std::string& flag : flags) field(flag);
  return to_hex(hash.finish());
}

void write_cache_entry(const std::string& path, const std::string& key, const CompileResult& result) {
  if (key.size() != kKeyChars)
    throw Error(fmt::format("compile cache key '{}' is not {} hex characters", key, kKeyChars));
  std::string payload = result.ptx;
  payload.append(result.cubin.data(), result.cubin.size());
  payload += result.log;

  std::string header(kMagic);
  put_le(header, kFormatVersion, 4);
  header += key;
  put_le(header, result.ptx.size(), 8);
  put_le(header, result.cubin.size(), 8);
  put_le(header, result.log.size(), 8);
  put_le(header, static_cast<uint64_t>(result.compile_ms * 1000.0), 8);
  Sha256::Digest checksum = entry_checksum(header, payload);
  header.append(reinterpret_cast<const char*>(checksum.data()), checksum.size());
  write_file_atomically(path, header + payload);
}

std::optional<CompileResult> read_cache_entry(const std::string& path, const std::string& key, std::string* why) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto reject = [why](std::string reason) -> std::optional<CompileResult> {
    if (why) *why = std::move(reason);
    return std::nullopt;
  };
  if (bytes.size() < kHeaderBytes)
    return reject(fmt::format("truncated: {} bytes, the header alone is {}", bytes.size(), kHeaderBytes));
  const char* p = bytes.data();
  if (std::string_view(p, kMagic.size()) != kMagic) return reject("not a Kiln cache entry (bad magic)");
  p += kMagic.size();
  if (uint64_t version = get_le(p, 4); version != kFormatVersion)
    return reject(fmt::format("format version {}, expected {}", version, kFormatVersion));
  p += 4;
  if (std::string_view(p, kKeyChars) != key) return reject("written for another key");
  p += kKeyChars;
  uint64_t ptx_size = get_le(p, 8), cubin_size = get_le(p + 8, 8), log_size = get_le(p + 16, 8);
  uint64_t compile_us = get_le(p + 24, 8);
  size_t payload_size = bytes.size() - kHeaderBytes;
  // Compared one at a time so that huge sizes in a damaged header cannot overflow the sum.
  if (ptx_size > payload_size || cubin_size > payload_size - ptx_size ||
      log_size != payload_size - ptx_size - cubin_size)
    return reject(fmt::format("sizes {} + {} + {} do not match the {} payload bytes (truncated?)", ptx_size,
                              cubin_size, log_size, payload_size));
  std::string_view payload(bytes.data() + kHeaderBytes, payload_size);
  Sha256::Digest checksum = entry_checksum(std::string_view(bytes.data(), kChecksummedHeaderBytes), payload);
  if (std::memcmp(checksum.data(), bytes.data() + kChecksummedHeaderBytes, checksum.size()) != 0)
    return reject("checksum mismatch");

  CompileResult result;
  result.ptx.assign(payload.substr(0, ptx_size));
  result.cubin.assign(payload.begin() + ptx_size, payload.begin() + ptx_size + cubin_size);
  result.log.assign(payload.substr(ptx_size + cubin_size));
  result.compile_ms = static_cast<double>(compile_us) / 1000.0;
  result.from_cache = true;
  return result;
}

CompileCache::CompileCache() : CompileCache(knobs::cache_dir()) {}

CompileCache::CompileCache(std::string dir, int nvrtc_version) : dir_(std::move(dir)), nvrtc_version_(nvrtc_version) {
  std::string kernels = dir_ + "/kernels";
  std::error_code ec;
  fs::create_directories(kernels, ec);
  if (ec) {
    disable_disk(fmt::format("cannot create {}: {}", kernels, ec.message()));
    return;
  }
  // Permissions alone do not say whether a file can be made here (read-only mounts, root).
  std::string probe = kernels + "/.probe-XXXXXX";
  int fd = mkstemp(probe.data());
  if (fd < 0) {
    disable_disk(fmt::format("cannot write in {}: {}", kernels, std::strerror(errno)));
    return;
  }
  ::close(fd);
  ::unlink(probe.c_str());
}

CompileCache& CompileCache::global() {
  static CompileCache cache;
  return cache;
}

std::string CompileCache::key(const std::string& source, const std::string& program_name,
                              const CompileOptions& options) const {
  std::string arch = resolve_arch(options);
  return compile_cache_key(source, program_name, arch, nvrtc_flags(arch, options), nvrtc_version_);
}

std::string CompileCache::entry_stem(const std::string& key) const { return dir_ + "/kernels/" + key; }

CompileResult CompileCache::compile(const std::string& source, const std::string& program_name,
                                    const CompileOptions& options) {
  CompileOptions resolved = options;
  resolved.arch = resolve_arch(options);
  std::string key = compile_cache_key(source, program_name, resolved.arch, nvrtc_flags(resolved.arch, resolved),
                                      nvrtc_version_);
  {
    std::lock_guard lock(mutex_);
    if (auto found = memory_.find(key); found != memory_.end()) {
      ++stats_.memory_hits;
      return found->second;
    }
  }

  std::string stem = entry_stem(key);
  if (on_disk_) {
    std::string damage;
    if (auto entry = read_cache_entry(stem + ".entry", key, &damage)) {
      std::lock_guard lock(mutex_);
      ++stats_.disk_hits;
      memory_.insert_or_assign(key, *entry);
      return *entry;
    }
    if (!damage.empty()) {
      std::fprintf(stderr, "kiln: warning: compile cache entry %s.entry is damaged (%s); recompiling\n", stem.c_str(),
                   damage.c_str());
      std::lock_guard lock(mutex_);
      ++stats_.disk_rejected;
    }
  }

  CompileResult result = compile_cuda(source, program_name, resolved);
  if (on_disk_) {
    try {
      // The .cu and .ptx first: once the entry exists, the files beside it do too.
      write_file_atomically(stem + ".cu", source);
      write_file_atomically(stem + ".ptx", result.ptx);
      write_cache_entry(stem + ".entry", key, result);
    } catch (const Error& e) {
      disable_disk(e.what());
    }
  }
  std::lock_guard lock(mutex_);
  ++stats_.misses;
  CompileResult& kept = memory_.insert_or_assign(key, result).first->second;
  kept.from_cache = true;
  return result;
}

CacheStats CompileCache::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

void CompileCache::clear_memory() {
  std::lock_guard lock(mutex_);
  memory_.clear();
}

void CompileCache::disable_disk(const std::string& reason) {
  if (on_disk_.exchange(false))
    std::fprintf(stderr,
                 "kiln: warning: compile cache on disk disabled (%s); compiled kernels are kept in memory only\n",
                 reason.c_str());
}

}  // namespace kiln::runtime
