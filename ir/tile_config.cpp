// Tile configs: their text and attribute forms, the target GPU generation, and the
// entry points to the kinds' rules (ir/tile_config_<kind>.cpp), which only dispatch.
#include "ir/tile_config.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <limits>

#include "ir/error.h"
#include "ir/kernel.h"

namespace kiln::ir {

namespace {

struct Field {
  const char* name;
  int TileConfig::*member;
};

// Every field in print order; a kind's new fields join this list.
constexpr Field kFields[] = {
    {"threads", &TileConfig::threads},
    {"elems", &TileConfig::elems},
    {"vec", &TileConfig::vec},
    {"row_threads", &TileConfig::row_threads},
    {"rows", &TileConfig::rows},
    {"stream", &TileConfig::stream},
    {"shared_elems", &TileConfig::shared_elems},
    {"cluster", &TileConfig::cluster},
    {"cols", &TileConfig::cols},
    {"k_threads", &TileConfig::k_threads},
    {"k_split", &TileConfig::k_split},
    {"schedule", &TileConfig::schedule},
    {"bm", &TileConfig::bm},
    {"bn", &TileConfig::bn},
    {"bk", &TileConfig::bk},
    {"warps_m", &TileConfig::warps_m},
    {"warps_n", &TileConfig::warps_n},
    {"stages", &TileConfig::stages},
    {"group", &TileConfig::group},
    {"split_k", &TileConfig::split_k},
    {"handoff", &TileConfig::handoff},
    {"br", &TileConfig::br},
    {"bc", &TileConfig::bc},
    {"warps", &TileConfig::warps},
};

constexpr std::string_view kScheduleNames[] = {"", "mma_sync", "simt", "wgmma", "gemv", "dequant_wgmma", "dequant_mma"};

bool is_schedule(const Field& f) { return f.member == &TileConfig::schedule; }

// After a switch over every kind: a value outside KernelKind.
[[noreturn]] void no_rules(const Kernel& k) {
  throw Error(fmt::format("kernel @{}: no tile rules for kind {}", k.name, kernel_kind_name(k.kind)));
}

}  // namespace

std::string_view gemm_schedule_name(int schedule) {
  return schedule > 0 && schedule < static_cast<int>(std::size(kScheduleNames)) ? kScheduleNames[schedule] : "?";
}

std::string TileConfig::str() const {
  std::string s;
  for (const Field& f : kFields) {
    if (this->*f.member == 0) continue;
    s += fmt::format("{}{} = ", s.empty() ? "" : ", ", f.name);
    s += is_schedule(f) ? std::string(gemm_schedule_name(schedule)) : std::to_string(this->*f.member);
  }
  return "{" + s + "}";
}

Attrs TileConfig::to_attrs() const {
  Attrs a;
  for (const Field& f : kFields) {
    if (this->*f.member == 0) continue;
    if (is_schedule(f)) a.set(f.name, std::string(gemm_schedule_name(schedule)));
    else a.set(f.name, int64_t{this->*f.member});
  }
  return a;
}

TileConfig TileConfig::from_attrs(const Attrs& attrs) {
  TileConfig c;
  for (const auto& item : attrs.items()) {
    const std::string& key = item.first;
    const AttrValue& value = item.second;
    auto named = [&](const Field& x) { return key == x.name; };
    const Field* f = std::find_if(std::begin(kFields), std::end(kFields), named);
    if (f == std::end(kFields)) {
      std::string known;
      for (const Field& x : kFields) known += (known.empty() ? "" : ", ") + std::string(x.name);
      throw Error(fmt::format("tile config: unknown field '{}' (known: {})", key, known));
    }
    if (is_schedule(*f) && attr_kind_of(value) == AttrKind::String) {
      const std::string& name = std::get<std::string>(value);
      auto at = std::find(std::begin(kScheduleNames) + 1, std::end(kScheduleNames), name);
      if (at == std::end(kScheduleNames))
        throw Error(fmt::format("tile config: unknown schedule \"{}\" (known: mma_sync, simt, wgmma, gemv, dequant_wgmma, dequant_mma)", name));
      c.schedule = static_cast<int>(at - std::begin(kScheduleNames));
      continue;
    }
    if (attr_kind_of(value) != AttrKind::Int)
      throw Error(fmt::format("tile config: '{}' must be an integer{}", key, is_schedule(*f) ? " or a name" : ""));
    int64_t v = std::get<int64_t>(value);
    if (v < 0 || v > std::numeric_limits<int>::max())
      throw Error(fmt::format("tile config: '{}' = {} is out of range", key, v));
    c.*(f->member) = static_cast<int>(v);
  }
  return c;
}

void validate(const Kernel& k, const TileConfig& c) {
  switch (k.kind) {
    case KernelKind::Pointwise: return validate_pointwise(k, c);
    case KernelKind::RowReduce: return validate_row_reduce(k, c);
    case KernelKind::ColReduce: return validate_col_reduce(k, c);
    case KernelKind::Gemm: return validate_gemm(k, c);
    case KernelKind::Attention: return validate_attention(k, c);
  }
  no_rules(k);
}

std::vector<TileConfig> candidates(const Kernel& k) {
  switch (k.kind) {
    case KernelKind::Pointwise: return pointwise_candidates(k);
    case KernelKind::RowReduce: return row_reduce_candidates(k);
    case KernelKind::ColReduce: return col_reduce_candidates(k);
    case KernelKind::Gemm: return gemm_candidates(k);
    case KernelKind::Attention: return attention_candidates(k);
  }
  no_rules(k);
}

TileConfig heuristic(const Kernel& k) {
  switch (k.kind) {
    case KernelKind::Pointwise: return pointwise_heuristic(k);
    case KernelKind::RowReduce: return row_reduce_heuristic(k);
    case KernelKind::ColReduce: return col_reduce_heuristic(k);
    case KernelKind::Gemm: return gemm_heuristic(k);
    case KernelKind::Attention: return attention_heuristic(k);
  }
  no_rules(k);
}

namespace {
thread_local int current_target_sm = 90;
thread_local bool current_arch_specific = true;  // the H200's sm_90a
}  // namespace

int target_sm() { return current_target_sm; }

int64_t max_block_shared_bytes() {
  const int sm = target_sm();
  if (sm >= 90) return 232448;
  if (sm == 80) return 166912;
  return 101376;
}
bool target_arch_specific() { return current_arch_specific; }
std::string target_arch() {
  return "sm_" + std::to_string(current_target_sm) + (current_arch_specific ? "a" : "");
}

int sm_of_arch(const std::string& arch) {
  size_t at = arch.find('_');
  if (at == std::string::npos) return 0;
  int sm = 0;
  for (size_t i = at + 1; i < arch.size() && std::isdigit(static_cast<unsigned char>(arch[i])); ++i)
    sm = sm * 10 + (arch[i] - '0');
  return sm;
}

TargetScope::TargetScope(const std::string& arch)
    : previous_(current_target_sm), previous_specific_(current_arch_specific) {
  if (int sm = sm_of_arch(arch); sm > 0) {
    current_target_sm = sm;
    current_arch_specific = arch.back() == 'a';
  }
}

TargetScope::~TargetScope() {
  current_target_sm = previous_;
  current_arch_specific = previous_specific_;
}

}  // namespace kiln::ir
