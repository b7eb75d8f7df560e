#include "runtime/knobs.h"

#include <fmt/format.h>

#include <cstdlib>

#include "ir/error.h"

namespace kiln::knobs {

namespace {

std::optional<std::string> env(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v) return std::nullopt;
  return std::string(v);
}

}  // namespace

std::string cache_dir() {
  if (auto v = env("KILN_CACHE_DIR")) return *v;
  if (auto xdg = env("XDG_CACHE_HOME")) return *xdg + "/kiln";
  if (auto home = env("HOME")) return *home + "/.cache/kiln";
  return "/tmp/kiln-cache";
}

std::optional<std::string> dump_dir() { return env("KILN_DUMP_DIR"); }

TuneMode tune_mode() {
  auto v = env("KILN_TUNE");
  if (!v || *v == "use") return TuneMode::Use;
  if (*v == "off") return TuneMode::Off;
  if (*v == "refresh") return TuneMode::Refresh;
  throw Error(fmt::format("KILN_TUNE must be off, use or refresh, got '{}'", *v));
}

std::string tune_db() {
  if (auto v = env("KILN_TUNE_DB")) return *v;
  return cache_dir() + "/tuning.json";
}

std::optional<std::string> arch() { return env("KILN_ARCH"); }

int debug_level() {
  auto v = env("KILN_DEBUG");
  if (!v) return 0;
  char* end = nullptr;
  long n = std::strtol(v->c_str(), &end, 10);
  if (*end != '\0' || n < 0) throw Error(fmt::format("KILN_DEBUG must be a level 0-4, got '{}'", *v));
  return static_cast<int>(n);
}

bool tf32() {
  auto v = env("KILN_TF32");
  if (!v || *v == "0") return false;
  if (*v == "1") return true;
  throw Error(fmt::format("KILN_TF32 must be 0 or 1, got '{}'", *v));
}

std::optional<int> max_fused_ops() {
  auto v = env("KILN_MAX_FUSED_OPS");
  if (!v) return std::nullopt;
  char* end = nullptr;
  long n = std::strtol(v->c_str(), &end, 10);
  if (*end != '\0' || n < 1 || n > 1000000)
    throw Error(fmt::format("KILN_MAX_FUSED_OPS must be a count of ops from 1 to 1000000, got '{}'", *v));
  return static_cast<int>(n);
}

std::string describe() {
  auto show = [](const char* name) { return env(name).value_or("(unset)"); };
  std::string out;
  for (const char* name : {"KILN_CACHE_DIR", "KILN_DUMP_DIR", "KILN_TUNE", "KILN_TUNE_DB", "KILN_ARCH", "KILN_DEBUG",
                           "KILN_THREADS", "KILN_TF32", "KILN_MAX_FUSED_OPS"})
    out += fmt::format("  {:<18} {}\n", name, show(name));
  return out;
}

}  // namespace kiln::knobs
