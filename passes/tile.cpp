// The `tile` pass: gives every kernel group a tile config.
//
// Configs live on the graph, in ir::Group::tile, so that they are visible next to the
// kernel they belong to, survive between passes, and can be pinned by hand; lowering
// reads them back (and falls back to the heuristic for a group without one). A config
// that is already there (written by a user, or by an earlier run) is kept and checked.
//
// Otherwise the tuning database decides (KILN_TUNE=use or refresh): each group is
// lowered to learn its kernel's signature, and a record matching every key field
// gives the config. With no record (or KILN_TUNE=off) the heuristic's config is used;
// nothing is ever tuned here (runtime::Program does that when asked).
#include <fmt/format.h>

#include <iostream>
#include <optional>

#include "ir/error.h"
#include "ir/printer.h"
#include "passes/lower.h"
#include "passes/pass.h"
#include "runtime/knobs.h"
#include "runtime/tuning_db.h"

namespace kiln::passes {

namespace {

// The recorded config of `k`, when the database holds one that is still legal.
std::optional<ir::TileConfig> recorded_config(const runtime::TuningDb& db, const ir::Kernel& k, int debug) {
  runtime::TuningKey key = runtime::current_key(k, ir::target_arch());
  const runtime::TuningRecord* record = db.find(key);
  if (!record) {
    if (debug >= 2) std::cerr << fmt::format("kiln: {}: no tuning record: {}\n", k.name, db.explain_miss(key));
    return std::nullopt;
  }
  try {
    ir::validate(k, record->chosen);
  } catch (const Error& e) {
    if (debug >= 2) std::cerr << fmt::format("kiln: {}: tuning record ignored: {}\n", k.name, e.what());
    return std::nullopt;
  }
  if (debug >= 2) std::cerr << fmt::format("kiln: {}: tuned config {} from the tuning database\n", k.name,
                                           record->chosen.str());
  return record->chosen;
}

class Tile : public Pass {
public:
  std::string_view name() const override { return "tile"; }
  bool run(ir::Graph& g) override {
    auto names = ir::value_names(g);
    const bool use_db = knobs::tune_mode() != knobs::TuneMode::Off;
    const int debug = knobs::debug_level();
    std::optional<runtime::TuningDb> db;
    bool changed = false;
    for (int i = 0; i < static_cast<int>(g.groups().size()); ++i) {
      // lower_group validates a config already there and picks the heuristic's otherwise.
      ir::Kernel k = lower_group(g, i, names);
      if (!g.groups()[i].tile.empty()) continue;
      if (use_db && !db) db = runtime::TuningDb::load(knobs::tune_db());
      std::optional<ir::TileConfig> tuned = use_db ? recorded_config(*db, k, debug) : std::nullopt;
      g.group(i).tile = tuned.value_or(k.config).to_attrs();
      changed = true;
    }
    return changed;
  }
};

}  // namespace

std::unique_ptr<Pass> make_Tile() { return std::make_unique<Tile>(); }

}  // namespace kiln::passes
