#include "ir/attrs.h"

#include <fmt/format.h>

#include "ir/error.h"

namespace kiln::ir {

std::string_view attr_kind_name(AttrKind k) {
  switch (k) {
    case AttrKind::Bool: return "bool";
    case AttrKind::Int: return "int";
    case AttrKind::Float: return "float";
    case AttrKind::String: return "string";
    case AttrKind::IntList: return "int list";
  }
  return "?";
}

AttrKind attr_kind_of(const AttrValue& v) { return static_cast<AttrKind>(v.index()); }

std::string attr_value_str(const AttrValue& v) {
  switch (attr_kind_of(v)) {
    case AttrKind::Bool: return std::get<bool>(v) ? "true" : "false";
    case AttrKind::Int: return std::to_string(std::get<int64_t>(v));
    case AttrKind::Float: {
      // Shortest text that reads back to the same double; keep a '.' or 'e'
      // so that the value stays visibly a float.
      std::string s = fmt::format("{}", std::get<double>(v));
      if (s.find_first_of(".eni") == std::string::npos) s += ".0";
      return s;
    }
    case AttrKind::String: return "\"" + std::get<std::string>(v) + "\"";
    case AttrKind::IntList: {
      std::string s = "[";
      const auto& xs = std::get<std::vector<int64_t>>(v);
      for (size_t i = 0; i < xs.size(); ++i) {
        if (i) s += ", ";
        s += std::to_string(xs[i]);
      }
      return s + "]";
    }
  }
  return "?";
}

void Attrs::set(const std::string& name, AttrValue v) {
  for (auto& [k, old] : items_)
    if (k == name) {
      old = std::move(v);
      return;
    }
  items_.emplace_back(name, std::move(v));
}

const AttrValue* Attrs::find(const std::string& name) const {
  for (const auto& [k, v] : items_)
    if (k == name) return &v;
  return nullptr;
}

template <typename T>
static const T& get_as(const Attrs& a, const std::string& name, AttrKind want) {
  const AttrValue* v = a.find(name);
  if (!v) throw Error(fmt::format("missing attribute '{}'", name));
  if (!std::holds_alternative<T>(*v))
    throw Error(fmt::format("attribute '{}' must be {}, got {}", name, attr_kind_name(want),
                            attr_kind_name(attr_kind_of(*v))));
  return std::get<T>(*v);
}

bool Attrs::get_bool(const std::string& n) const { return get_as<bool>(*this, n, AttrKind::Bool); }
int64_t Attrs::get_int(const std::string& n) const { return get_as<int64_t>(*this, n, AttrKind::Int); }
double Attrs::get_float(const std::string& n) const { return get_as<double>(*this, n, AttrKind::Float); }
const std::string& Attrs::get_string(const std::string& n) const {
  return get_as<std::string>(*this, n, AttrKind::String);
}
const std::vector<int64_t>& Attrs::get_ints(const std::string& n) const {
  return get_as<std::vector<int64_t>>(*this, n, AttrKind::IntList);
}

}  // namespace kiln::ir
