// Op attributes: a small ordered name -> value list (bool, int, float, string, int list).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace kiln::ir {

using AttrValue = std::variant<bool, int64_t, double, std::string, std::vector<int64_t>>;
enum class AttrKind { Bool, Int, Float, String, IntList };

std::string_view attr_kind_name(AttrKind k);
AttrKind attr_kind_of(const AttrValue& v);
std::string attr_value_str(const AttrValue& v);  // as written in the text form

class Attrs {
public:
  void set(const std::string& name, AttrValue v);
  const AttrValue* find(const std::string& name) const;
  bool has(const std::string& name) const { return find(name) != nullptr; }

  // Typed getters; they throw kiln::Error when the attribute is missing or of
  // another kind (the op table's schema normally guarantees both).
  bool get_bool(const std::string& name) const;
  int64_t get_int(const std::string& name) const;
  double get_float(const std::string& name) const;
  const std::string& get_string(const std::string& name) const;
  const std::vector<int64_t>& get_ints(const std::string& name) const;

  const std::vector<std::pair<std::string, AttrValue>>& items() const { return items_; }
  bool empty() const { return items_.empty(); }
  bool operator==(const Attrs&) const = default;

private:
  std::vector<std::pair<std::string, AttrValue>> items_;
};

}  // namespace kiln::ir
