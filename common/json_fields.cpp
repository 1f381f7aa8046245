#include "common/json_fields.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace kb::json_fields {
namespace {

using nlohmann::json;

// nullptr when absent or null.
const json* find(const json& object, std::string_view name) {
  if (!object.is_object()) return nullptr;
  auto it = object.find(name);
  return it == object.end() || it->is_null() ? nullptr : &*it;
}

template <typename Int>
bool convert_integer(const json& v, Int* out) {
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<Int>::max())) return false;
    *out = static_cast<Int>(u);
    return true;
  }
  if (!v.is_number_integer()) return false;
  const int64_t i = v.get<int64_t>();
  if constexpr (std::is_unsigned_v<Int>) {
    if (i < 0) return false;
  } else if constexpr (sizeof(Int) < sizeof(int64_t)) {
    if (i < std::numeric_limits<Int>::min() || i > std::numeric_limits<Int>::max()) return false;
  }
  *out = static_cast<Int>(i);
  return true;
}

template <typename T>
bool convert(const json& v, ValueOfT<T>* out);

template <>
bool convert<bool>(const json& v, bool* out) {
  if (!v.is_boolean()) return false;
  *out = v.get<bool>();
  return true;
}
template <>
bool convert<int>(const json& v, int* out) {
  return convert_integer(v, out);
}
template <>
bool convert<int64_t>(const json& v, int64_t* out) {
  return convert_integer(v, out);
}
template <>
bool convert<uint64_t>(const json& v, uint64_t* out) {
  return convert_integer(v, out);
}
template <>
bool convert<double>(const json& v, double* out) {
  if (!v.is_number()) return false;
  *out = v.get<double>();
  return true;
}
template <>
bool convert<std::string>(const json& v, std::string* out) {
  if (!v.is_string()) return false;
  *out = v.get<std::string>();
  return true;
}
template <>
bool convert<std::vector<std::string>>(const json& v, std::vector<std::string>* out) {
  if (!v.is_array()) return false;
  std::vector<std::string> items;
  for (const json& item : v) {
    if (!item.is_string()) return false;
    items.push_back(item.get<std::string>());
  }
  *out = std::move(items);
  return true;
}
template <>
bool convert<std::vector<double>>(const json& v, std::vector<double>* out) {
  if (!v.is_array()) return false;
  std::vector<double> items;
  for (const json& item : v) {
    if (!item.is_number()) return false;
    items.push_back(item.get<double>());
  }
  *out = std::move(items);
  return true;
}
template <>
bool convert<Object>(const json& v, json* out) {
  if (!v.is_object()) return false;
  *out = v;
  return true;
}
template <>
bool convert<json>(const json& v, json* out) {
  *out = v;
  return true;
}

template <typename T>
Status wrong_type(std::string_view name, const json& v) {
  return Status::invalid_argument("field '" + std::string(name) + "': expected " +
                                  std::string(type_name<T>()) + ", got " + std::string(kind_of(v)));
}

}  // namespace

std::string_view kind_of(const json& value) {
  switch (value.type()) {
    case json::value_t::null:
      return "null";
    case json::value_t::object:
      return "an object";
    case json::value_t::array:
      return "a list";
    case json::value_t::string:
      return "a string";
    case json::value_t::boolean:
      return "a boolean";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
      return "an integer";
    case json::value_t::number_float:
      return "a fractional number";
    case json::value_t::binary:
      return "binary data";
    case json::value_t::discarded:
      return "nothing";
  }
  return "an unknown value";
}

template <>
std::string_view type_name<bool>() {
  return "a boolean";
}
template <>
std::string_view type_name<int>() {
  return "an integer (int)";
}
template <>
std::string_view type_name<int64_t>() {
  return "an integer (int64)";
}
template <>
std::string_view type_name<uint64_t>() {
  return "a non-negative integer (uint64)";
}
template <>
std::string_view type_name<double>() {
  return "a number";
}
template <>
std::string_view type_name<std::string>() {
  return "a string";
}
template <>
std::string_view type_name<std::vector<std::string>>() {
  return "a list of strings";
}
template <>
std::string_view type_name<std::vector<double>>() {
  return "a list of numbers";
}
template <>
std::string_view type_name<Object>() {
  return "an object";
}
template <>
std::string_view type_name<json>() {
  return "a value";
}

template <typename T>
Result<ValueOfT<T>> required(const json& object, std::string_view name) {
  const json* v = find(object, name);
  if (!v) {
    return Status::invalid_argument("field '" + std::string(name) + "': missing (expected " +
                                    std::string(type_name<T>()) + ")");
  }
  ValueOfT<T> out{};
  if (!convert<T>(*v, &out)) return wrong_type<T>(name, *v);
  return out;
}

template <typename T>
Result<ValueOfT<T>> optional(const json& object, std::string_view name, ValueOfT<T> fallback) {
  const json* v = find(object, name);
  if (!v) return fallback;
  ValueOfT<T> out{};
  if (!convert<T>(*v, &out)) return wrong_type<T>(name, *v);
  return out;
}

template <typename T>
ValueOfT<T> value_or(const json& object, std::string_view name, ValueOfT<T> fallback) {
  const json* v = find(object, name);
  ValueOfT<T> out{};
  return v && convert<T>(*v, &out) ? out : fallback;
}

#define KB_JSON_FIELDS_INSTANTIATE(T)                                                   \
  template Result<ValueOfT<T>> required<T>(const json&, std::string_view);              \
  template Result<ValueOfT<T>> optional<T>(const json&, std::string_view, ValueOfT<T>); \
  template ValueOfT<T> value_or<T>(const json&, std::string_view, ValueOfT<T>);
KB_JSON_FIELDS_INSTANTIATE(bool)
KB_JSON_FIELDS_INSTANTIATE(int)
KB_JSON_FIELDS_INSTANTIATE(int64_t)
KB_JSON_FIELDS_INSTANTIATE(uint64_t)
KB_JSON_FIELDS_INSTANTIATE(double)
KB_JSON_FIELDS_INSTANTIATE(std::string)
KB_JSON_FIELDS_INSTANTIATE(std::vector<std::string>)
KB_JSON_FIELDS_INSTANTIATE(std::vector<double>)
KB_JSON_FIELDS_INSTANTIATE(Object)
KB_JSON_FIELDS_INSTANTIATE(json)
#undef KB_JSON_FIELDS_INSTANTIATE

int nesting_depth(std::string_view text, int limit) {
  int depth = 0, deepest = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\')
        ++i;  // the escaped character cannot end the string
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
      if (deepest > limit) return deepest;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return deepest;
}

namespace {

// U+0000 as U+FFFD (the replacement character, UTF-8) in every string and key of `value`, which
// nests at most kMaxDepth deep.
void replace_nul(json& value) {
  static const std::string kReplacement = "\xEF\xBF\xBD";
  auto scrub = [](std::string& text) {
    for (size_t at = text.find('\0'); at != std::string::npos; at = text.find('\0', at + 3))
      text.replace(at, 1, kReplacement);
  };
  if (value.is_string()) {
    scrub(value.get_ref<std::string&>());
  } else if (value.is_array()) {
    for (json& element : value) replace_nul(element);
  } else if (value.is_object()) {
    json scrubbed = json::object();
    for (auto& [key, element] : value.items()) {
      std::string name = key;
      scrub(name);
      replace_nul(element);
      scrubbed[name] = std::move(element);
    }
    value = std::move(scrubbed);
  }
}

}  // namespace

json parse_untrusted(std::string_view text) {
  if (nesting_depth(text) > kMaxDepth) return json(json::value_t::discarded);
  json value = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!value.is_discarded() && text.find("\\u0000") != std::string_view::npos) replace_nul(value);
  return value;
}

}  // namespace kb::json_fields
