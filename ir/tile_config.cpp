// Tile configs: their text and attribute forms, and the pointwise kind's rules
// (search space, legality, default).
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
};

constexpr std::string_view kScheduleNames[] = {"", "mma_sync", "simt"};

bool is_schedule(const Field& f) { return f.member == &TileConfig::schedule; }

constexpr int kMaxVectorBytes = 16;  // the widest load one thread issues (uint4)
constexpr int kMaxElems = 16;        // elements per thread: beyond this, registers run short
constexpr int64_t kMaxGrid = std::numeric_limits<int32_t>::max();  // gridDim.x limit

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The widest element among the arguments: it bounds the vector width.
const KernelArg& widest_arg(const Kernel& k) {
  const KernelArg* w = &k.args.at(0);
  for (const KernelArg& a : k.args)
    if (dtype_bytes(a.type.dtype) > dtype_bytes(w->type.dtype)) w = &a;
  return *w;
}

// Whether an argument can move `vec` consecutive elements as one vector: it is
// contiguous over the space, or every vector stays inside one row of the innermost
// dim where the argument is contiguous (stride 1, aligned) or constant (stride 0).
bool allows_vec(const std::vector<int64_t>& strides, const Shape& dims, int vec) {
  if (strides == row_major_strides(dims)) return true;
  if (dims.back() % vec != 0) return false;
  if (strides.back() != 0 && strides.back() != 1) return false;
  for (size_t d = 0; d + 1 < strides.size(); ++d)
    if (strides[d] % vec != 0) return false;
  return true;
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
        throw Error(fmt::format("tile config: unknown schedule \"{}\" (known: mma_sync, simt)", name));
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
  if (k.kind == KernelKind::Gemm) return validate_gemm(k, c);
  if (k.kind == KernelKind::RowReduce) return validate_row_reduce(k, c);
  if (k.kind == KernelKind::ColReduce) return validate_col_reduce(k, c);
  auto fail = [&](const std::string& rule) {
    throw Error(fmt::format("kernel @{}: tile config {}: {}", k.name, c.str(), rule));
  };
  if (c.threads < 32 || c.threads > 1024 || c.threads % 32 != 0)
    fail(fmt::format("threads = {}: threads per block must be a multiple of 32 between 32 and 1024", c.threads));
  if (c.vec != 1 && c.vec != 2 && c.vec != 4 && c.vec != 8)
    fail(fmt::format("vec = {}: vec must be 1, 2, 4 or 8", c.vec));
  const KernelArg& wide = widest_arg(k);
  const int bytes = dtype_bytes(wide.type.dtype);
  if (c.vec * bytes > kMaxVectorBytes)
    fail(fmt::format("vec = {} with {}-byte elements (%{}: {}) is a {}-byte vector; the widest load is {} bytes", c.vec,
                     bytes, wide.name, wide.type.str(), c.vec * bytes, kMaxVectorBytes));
  if (c.elems < 1 || c.elems > kMaxElems)
    fail(fmt::format("elems = {}: elements per thread must be between 1 and {}", c.elems, kMaxElems));
  if (c.elems % c.vec != 0)
    fail(fmt::format("elems = {} is not a multiple of vec = {}: a thread handles whole vectors", c.elems, c.vec));
  const int64_t grid = ceil_div(k.numel(), int64_t{c.threads} * c.elems);
  if (grid > kMaxGrid) fail(fmt::format("the grid needs {} blocks, more than the limit of {}", grid, kMaxGrid));
}

std::vector<TileConfig> candidates(const Kernel& k) {
  if (k.kind == KernelKind::Gemm) return gemm_candidates(k);
  if (k.kind == KernelKind::RowReduce) return row_reduce_candidates(k);
  if (k.kind == KernelKind::ColReduce) return col_reduce_candidates(k);
  std::vector<TileConfig> out;
  const int bytes = dtype_bytes(widest_arg(k).type.dtype);
  for (int threads : {64, 128, 256, 512, 1024})
    for (int elems : {1, 2, 4, 8, 16})
      for (int vec : {1, 2, 4, 8}) {
        if (vec * bytes > kMaxVectorBytes || elems % vec != 0) continue;
        if (ceil_div(k.numel(), int64_t{threads} * elems) > kMaxGrid) continue;
        out.push_back(TileConfig{threads, elems, vec});
      }
  return out;
}

TileConfig heuristic(const Kernel& k) {
  if (k.kind == KernelKind::Gemm) return gemm_heuristic(k);
  if (k.kind == KernelKind::RowReduce) return row_reduce_heuristic(k);
  if (k.kind == KernelKind::ColReduce) return col_reduce_heuristic(k);
  const int64_t n = k.numel();
  const int bytes = dtype_bytes(widest_arg(k).type.dtype);
  const CollapsedSpace space = collapse(k);

  // 16-byte vectors when every full-size argument can use them; a broadcast operand
  // is small and stays in cache, so it does not count.
  int vec = std::min(8, kMaxVectorBytes / bytes);
  auto full_size_allow = [&](int v) {
    for (size_t i = 0; i < k.args.size(); ++i)
      if (k.args[i].type.numel() == n && !allows_vec(space.arg_strides[i], space.dims, v)) return false;
    return true;
  };
  while (vec > 1 && (vec > n || !full_size_allow(vec))) vec /= 2;

  // Two 16-byte vectors in flight per thread and argument, then fewer elements per
  // thread and smaller blocks until the grid covers every SM a few times over.
  TileConfig c{256, std::clamp(2 * kMaxVectorBytes / bytes, vec, kMaxElems), vec};
  const int64_t min_blocks = 4 * kTargetSMs;
  auto blocks = [&] { return ceil_div(n, int64_t{c.threads} * c.elems); };
  while (c.elems > vec && blocks() < min_blocks) c.elems /= 2;
  while (c.threads > 64 && blocks() < min_blocks) c.threads /= 2;
  while (blocks() > kMaxGrid && c.threads < 1024) c.threads *= 2;  // sizes beyond 2^43 elements
  return c;
}

namespace {
thread_local int current_target_sm = 90;
}  // namespace

int target_sm() { return current_target_sm; }

int sm_of_arch(const std::string& arch) {
  size_t at = arch.find('_');
  if (at == std::string::npos) return 0;
  int sm = 0;
  for (size_t i = at + 1; i < arch.size() && std::isdigit(static_cast<unsigned char>(arch[i])); ++i)
    sm = sm * 10 + (arch[i] - '0');
  return sm;
}

TargetScope::TargetScope(const std::string& arch) : previous_(current_target_sm) {
  if (int sm = sm_of_arch(arch); sm > 0) current_target_sm = sm;
}

TargetScope::~TargetScope() { current_target_sm = previous_; }

}  // namespace kiln::ir
