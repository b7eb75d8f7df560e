// Kernel parameter names and index width, shared by the emitters. See kernel_params.h.
#include "codegen/kernel_params.h"

#include <fmt/format.h>

#include <cctype>
#include <set>

namespace kiln::codegen {

std::vector<std::string> param_names(const ir::Kernel& k) {
  std::vector<std::string> names;
  std::set<std::string> taken;
  for (const ir::KernelArg& a : k.args) {
    std::string base = a.is_output ? "out_" : "in_";
    for (char ch : a.name) base += std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
    std::string name = base;
    for (int i = 1; !taken.insert(name).second; ++i) name = fmt::format("{}_{}", base, i);
    names.push_back(name);
  }
  return names;
}

bool is_c_identifier(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  for (char ch : s)
    if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '_') return false;
  return true;
}

bool needs_wide_index(const ir::Kernel& k) {
  constexpr int64_t kWideIndex = int64_t{1} << 31;
  bool wide = k.numel() >= kWideIndex;
  for (const ir::KernelArg& a : k.args) wide = wide || a.type.numel() >= kWideIndex;
  return wide;
}

}  // namespace kiln::codegen
