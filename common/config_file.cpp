#include "common/config_file.h"

#include <yaml-cpp/yaml.h>

#include <charconv>
#include <cstdlib>
#include <filesystem>
#include <map>

namespace kb {
namespace {

std::optional<int64_t> parse_int(const std::string& text) {
  int64_t value = 0;
  const char* end = text.data() + text.size();
  auto [stop, error] = std::from_chars(text.data(), end, value);
  if (error != std::errc() || stop != end || text.empty()) return std::nullopt;
  return value;
}

// The file's key -> scalar text; an error for anything that is not a map of scalars.
Result<std::map<std::string, std::string>> read_yaml(const std::string& path) {
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::Exception& e) {
    return Status::invalid_argument(path + ": not a readable YAML file: " + e.what());
  }
  std::map<std::string, std::string> values;
  if (root.IsNull()) return values;
  if (!root.IsMap()) return Status::invalid_argument(path + ": expected a YAML map of key: value");
  for (const auto& entry : root) {
    const std::string key = entry.first.as<std::string>();
    if (!entry.second.IsScalar()) {
      return Status::invalid_argument(path + ": key '" + key +
                                      "': expected a single value (string, number or boolean)");
    }
    values[key] = entry.second.as<std::string>();
  }
  return values;
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

// Parses an integer in [min, max] into *target (of any integer type that holds the range), or
// says what was expected.
template <class Int>
ConfigSchema::Setter integer_setter(Int* target, int64_t min, int64_t max) {
  return [target, min, max](const std::string& text) -> std::optional<std::string> {
    std::optional<int64_t> value = parse_int(text);
    if (!value || *value < min || *value > max) {
      return "an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "]";
    }
    *target = static_cast<Int>(*value);
    return std::nullopt;
  };
}

}  // namespace

std::optional<std::string> process_env_value(const std::string& name) {
  const char* value = std::getenv(name.c_str());
  if (value == nullptr || *value == '\0') return std::nullopt;
  return std::string(value);
}

std::optional<std::string> installed_data_path(const std::string& relative) {
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec || self.parent_path().filename() != "bin") return std::nullopt;
  const std::filesystem::path data = self.parent_path().parent_path() / "share/kbfleet" / relative;
  if (!std::filesystem::is_directory(data, ec)) return std::nullopt;
  return data.string();
}

ConfigSchema& ConfigSchema::custom(const std::string& key, Setter setter, const std::string& env) {
  entries_.push_back({key, env, std::move(setter)});
  return *this;
}

ConfigSchema& ConfigSchema::text(const std::string& key, std::string* target,
                                 const std::string& env) {
  return custom(
      key,
      [target](const std::string& text) -> std::optional<std::string> {
        *target = text;
        return std::nullopt;
      },
      env);
}

ConfigSchema& ConfigSchema::choice(const std::string& key, std::string* target,
                                   std::vector<std::string> choices, const std::string& env) {
  return custom(
      key,
      [target, choices](const std::string& text) -> std::optional<std::string> {
        for (const std::string& c : choices) {
          if (c == text) {
            *target = text;
            return std::nullopt;
          }
        }
        return "one of " + join(choices);
      },
      env);
}

ConfigSchema& ConfigSchema::integer(const std::string& key, int64_t* target, int64_t min,
                                    int64_t max, const std::string& env) {
  return custom(key, integer_setter(target, min, max), env);
}

ConfigSchema& ConfigSchema::integer(const std::string& key, int* target, int min, int max,
                                    const std::string& env) {
  return custom(key, integer_setter(target, min, max), env);
}

ConfigSchema& ConfigSchema::boolean(const std::string& key, bool* target, const std::string& env) {
  return custom(
      key,
      [target](const std::string& text) -> std::optional<std::string> {
        if (text == "true" || text == "1" || text == "yes") {
          *target = true;
        } else if (text == "false" || text == "0" || text == "no") {
          *target = false;
        } else {
          return std::string("true or false");
        }
        return std::nullopt;
      },
      env);
}

const ConfigSchema::Entry* ConfigSchema::find(const std::string& key) const {
  for (const Entry& e : entries_) {
    if (e.key == key) return &e;
  }
  return nullptr;
}

std::vector<std::string> ConfigSchema::keys() const {
  std::vector<std::string> out;
  for (const Entry& e : entries_) out.push_back(e.key);
  return out;
}

Status ConfigSchema::apply(const std::string& path, bool path_is_explicit,
                           const std::set<std::string>& given, const EnvLookup& env) const {
  std::map<std::string, std::string> file;
  std::error_code ec;
  if (!path.empty() && std::filesystem::exists(path, ec)) {
    KB_ASSIGN_OR_RETURN(file, read_yaml(path));
  } else if (path_is_explicit) {
    return Status::not_found("config file " + path + " does not exist");
  }
  for (const auto& [key, value] : file) {
    if (!find(key)) {
      return Status::invalid_argument(path + ": unknown key '" + key + "' (known: " +
                                      join(keys()) + ")");
    }
  }
  for (const Entry& e : entries_) {
    if (given.count(e.key)) continue;
    if (!e.env.empty()) {
      if (std::optional<std::string> value = env(e.env)) {
        if (auto expected = e.set(*value)) {
          return Status::invalid_argument("environment " + e.env + ": expected " + *expected +
                                          ", got '" + *value + "'");
        }
        continue;
      }
    }
    if (auto it = file.find(e.key); it != file.end()) {
      if (auto expected = e.set(it->second)) {
        return Status::invalid_argument(path + ": key '" + e.key + "': expected " + *expected +
                                        ", got '" + it->second + "'");
      }
    }
  }
  return Status::ok();
}

}  // namespace kb
