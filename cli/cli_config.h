// Where the fleet is and how to prove who we are: the coordinator's client endpoint, the
// read-only database URL and the CURVE key files, from (highest first)
//
//   1. flags        --coordinator --db --curve-key --coordinator-key
//   2. environment  KB_COORDINATOR KB_DB_URL KB_CURVE_KEY KB_COORDINATOR_KEY
//   3. config file  --config FILE (or KB_CONFIG), else ~/.config/kbfleet/config.yaml when it
//                   exists ($XDG_CONFIG_HOME/kbfleet/config.yaml when that is set); YAML keys
//                   coordinator, db, curve_key, coordinator_key
//
// Each value is resolved on its own (a flag for one does not hide the file's others). Errors:
// an explicit config file that is missing or not a YAML map, an unknown key (a typo would
// otherwise be silently ignored), only one of the two key files. require_coordinator/require_db
// say exactly how to supply a missing endpoint.
//
// Thread safety: pure functions; the environment is read through the given lookup.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "common/status.h"

namespace kb::cli {

struct ConfigFlags {  // as given on the command line; "" = not given
  std::string config_file, coordinator, db, curve_key, coordinator_key;
};

struct FleetConfig {
  std::string coordinator;      // "tcp://host:port" of the coordinator's clients ROUTER
  std::string db;               // PostgreSQL URL (the read-only role)
  std::string curve_key;        // our key file (public + secret), "" without CURVE
  std::string coordinator_key;  // the coordinator's public key file, "" without CURVE
  std::string config_file;      // the file that was read, "" when none
  bool use_curve() const { return !curve_key.empty(); }
};

using EnvLookup = std::function<std::optional<std::string>(const std::string& name)>;
std::optional<std::string> process_env(const std::string& name);  // getenv; "" counts as unset

std::string default_config_path(const EnvLookup& env = process_env);

Result<FleetConfig> resolve_config(const ConfigFlags& flags, const EnvLookup& env = process_env);

Status require_coordinator(const FleetConfig& config);
Status require_db(const FleetConfig& config);

}  // namespace kb::cli
