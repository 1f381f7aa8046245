#include "cli/fleet_options.h"

#include "cli/cli_app.h"

namespace kb::cli {

void add_fleet_options(CLI::App* command, FleetOptions& o, Needs needs) {
  const int n = static_cast<int>(needs);
  if (n & static_cast<int>(Needs::kCoordinator)) {
    command->add_option("--coordinator", o.flags.coordinator,
                        "Coordinator's client endpoint tcp://HOST:PORT (env KB_COORDINATOR)");
    command->add_option("--curve-key", o.flags.curve_key,
                        "Our CURVE key file from `kb keygen` (env KB_CURVE_KEY)");
    command->add_option("--coordinator-key", o.flags.coordinator_key,
                        "The coordinator's public key file (env KB_COORDINATOR_KEY)");
    command->add_option("--timeout", o.timeout_s, "Seconds to wait for the coordinator's answer")
        ->check(CLI::PositiveNumber)
        ->capture_default_str();
  }
  if (n & static_cast<int>(Needs::kDatabase)) {
    command->add_option("--db", o.flags.db, "PostgreSQL URL of the read-only role (env KB_DB_URL)");
  }
  command->add_option("--config", o.flags.config_file,
                      "Config file (default ~/.config/kbfleet/config.yaml when it exists)");
  command->add_flag("--json", o.json, "Print JSON instead of a table");
}

void add_run_argument(CLI::App* command, int64_t& run_id) {
  const CLI::Validator positive_id(
      [](std::string& text) -> std::string {
        char* end = nullptr;
        const long long value = std::strtoll(text.c_str(), &end, 10);
        if (text.empty() || *end != '\0' || value <= 0) {
          return "a run id is a positive integer (see `kb runs`), got '" + text + "'";
        }
        return "";
      },
      "RUN");
  command->add_option("run", run_id, "Run id (see `kb runs`)")->required()->check(positive_id);
}

FleetConfig resolve_or_fail(const FleetOptions& options, Needs needs) {
  auto config = resolve_config(options.flags);
  if (!config.is_ok()) fail(kExitUsage, config.status().message());
  const int n = static_cast<int>(needs);
  if (n & static_cast<int>(Needs::kCoordinator)) {
    if (Status s = require_coordinator(config.value()); !s.is_ok()) fail(kExitUsage, s.message());
  }
  if (n & static_cast<int>(Needs::kDatabase)) {
    if (Status s = require_db(config.value()); !s.is_ok()) fail(kExitUsage, s.message());
  }
  return config.value();
}

std::unique_ptr<FleetClient> connect_or_fail(const FleetConfig& config) {
  auto client = FleetClient::connect(config);
  if (!client.is_ok()) fail(client.status());
  return std::move(client).value();
}

std::unique_ptr<ResultsReader> open_db_or_fail(const FleetConfig& config) {
  auto reader = ResultsReader::connect(config.db);
  if (!reader.is_ok()) fail(kExitFailure, reader.status().message());
  return std::move(reader).value();
}

std::chrono::milliseconds request_timeout(const FleetOptions& options) {
  return std::chrono::milliseconds(static_cast<int64_t>(options.timeout_s * 1000));
}

}  // namespace kb::cli
