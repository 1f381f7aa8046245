#include "cli/cli_config.h"

#include <yaml-cpp/yaml.h>

#include <cstdlib>
#include <filesystem>
#include <map>

namespace kb::cli {
namespace {

namespace fs = std::filesystem;

const char* const kConfigKeys[] = {"coordinator", "db", "curve_key", "coordinator_key"};

using FileValues = std::map<std::string, std::string>;

Result<FileValues> read_config_file(const std::string& path) {
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::Exception& e) {
    return Status::invalid_argument(path + ": not a readable YAML file: " + e.what());
  }
  FileValues values;
  if (root.IsNull()) return values;  // an empty file
  if (!root.IsMap()) return Status::invalid_argument(path + ": expected a YAML map of key: value");
  for (const auto& entry : root) {
    const std::string key = entry.first.as<std::string>();
    bool known = false;
    for (const char* k : kConfigKeys) known = known || key == k;
    if (!known) {
      return Status::invalid_argument(path + ": unknown key '" + key +
                                      "' (known: coordinator, db, curve_key, coordinator_key)");
    }
    if (!entry.second.IsScalar()) {
      return Status::invalid_argument(path + ": '" + key + "' must be a string");
    }
    values[key] = entry.second.as<std::string>();
  }
  return values;
}

// The first of flag, environment variable, file value that is set.
std::string pick(const std::string& flag, const EnvLookup& env, const std::string& env_name,
                 const FileValues& file, const std::string& key) {
  if (!flag.empty()) return flag;
  if (auto value = env(env_name)) return *value;
  const auto it = file.find(key);
  return it == file.end() ? std::string() : it->second;
}

}  // namespace

std::optional<std::string> process_env(const std::string& name) {
  const char* value = std::getenv(name.c_str());
  if (value == nullptr || *value == '\0') return std::nullopt;
  return std::string(value);
}

std::string default_config_path(const EnvLookup& env) {
  if (auto xdg = env("XDG_CONFIG_HOME")) return *xdg + "/kbfleet/config.yaml";
  return env("HOME").value_or("") + "/.config/kbfleet/config.yaml";
}

Result<FleetConfig> resolve_config(const ConfigFlags& flags, const EnvLookup& env) {
  FleetConfig config;
  std::string path = flags.config_file.empty() ? env("KB_CONFIG").value_or("") : flags.config_file;
  const bool explicit_file = !path.empty();
  if (!explicit_file) path = default_config_path(env);
  FileValues file;
  std::error_code ec;
  if (fs::exists(path, ec)) {
    KB_ASSIGN_OR_RETURN(file, read_config_file(path));
    config.config_file = path;
  } else if (explicit_file) {
    return Status::not_found("config file " + path + " does not exist");
  }
  config.coordinator = pick(flags.coordinator, env, "KB_COORDINATOR", file, "coordinator");
  config.db = pick(flags.db, env, "KB_DB_URL", file, "db");
  config.curve_key = pick(flags.curve_key, env, "KB_CURVE_KEY", file, "curve_key");
  config.coordinator_key =
      pick(flags.coordinator_key, env, "KB_COORDINATOR_KEY", file, "coordinator_key");
  if (config.curve_key.empty() != config.coordinator_key.empty()) {
    return Status::invalid_argument(
        "CURVE needs both keys: our key pair (--curve-key, KB_CURVE_KEY, `curve_key:`) and the "
        "coordinator's public key (--coordinator-key, KB_COORDINATOR_KEY, `coordinator_key:`); "
        "only " + std::string(config.curve_key.empty() ? "the coordinator's" : "ours") + " is set");
  }
  return config;
}

Status require_coordinator(const FleetConfig& config) {
  if (!config.coordinator.empty()) return Status::ok();
  return Status::invalid_argument(
      "no coordinator endpoint: pass --coordinator, set KB_COORDINATOR or add `coordinator:` to " +
      (config.config_file.empty() ? std::string("~/.config/kbfleet/config.yaml") : config.config_file));
}

Status require_db(const FleetConfig& config) {
  if (!config.db.empty()) return Status::ok();
  return Status::invalid_argument(
      "no database URL (the read-only role): pass --db, set KB_DB_URL or add `db:` to " +
      (config.config_file.empty() ? std::string("~/.config/kbfleet/config.yaml") : config.config_file));
}

}  // namespace kb::cli
