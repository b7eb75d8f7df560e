// The pass registry: names and factories of every pass listed in passes.def.
#include <fmt/format.h>

#include "ir/error.h"
#include "passes/pass.h"
#include "passes/pass_manager.h"

namespace kiln::passes {

// Each pass's file defines its factory.
#define KILN_PASS(Class, text) std::unique_ptr<Pass> make_##Class();
#include "passes/passes.def"
#undef KILN_PASS

namespace {

struct Entry {
  std::string_view name;
  std::string_view class_name;
  std::unique_ptr<Pass> (*make)();
};

constexpr Entry kRegistry[] = {
#define KILN_PASS(Class, text) {text, #Class, &make_##Class},
#include "passes/passes.def"
#undef KILN_PASS
};

const Entry* find_entry(std::string_view name) {
  for (const Entry& e : kRegistry)
    if (e.name == name) return &e;
  return nullptr;
}

}  // namespace

std::vector<std::string_view> pass_names() {
  std::vector<std::string_view> names;
  for (const Entry& e : kRegistry) names.push_back(e.name);
  return names;
}

std::unique_ptr<Pass> create_pass(std::string_view name) {
  if (const Entry* e = find_entry(name)) return e->make();
  throw Error(fmt::format("unknown pass '{}' (known passes: {})", name, fmt::join(pass_names(), ", ")));
}

std::string_view pass_class_name(std::string_view name) {
  const Entry* e = find_entry(name);
  return e ? e->class_name : name;
}

}  // namespace kiln::passes
