// kb-coordinator: applies the schema migrations, takes the database's coordinator lock, loads the
// open jobs and serves workers and clients until SIGTERM/SIGINT (coordinator.h); SIGHUP re-reads
// the allow-lists. `--migrate` only applies the migrations (run it once with an admin URL; the
// runtime role then needs no CREATEROLE: docs/security.md). Flags: schemas/protocol.md, README.
// Configuration: /etc/kbfleet/coordinator.yaml (or --config), the environment, flags (common/
// config_file.h; keys in deploy/README.md).
#include <CLI/CLI.hpp>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "common/config_file.h"
#include "common/log.h"
#include "coordinator/coordinator.h"
#include "coordinator/instance_lock.h"
#include "coordinator/migrations.h"
#include "coordinator/pg_job_store.h"

namespace {

struct Settings {
  std::string db_url, schemas_dir, config = "/etc/kbfleet/coordinator.yaml", log_format = "text",
                      log_level = "info";
  int64_t heartbeat_ms = 1000, lease_grace_ms = 10000;
};

kb::ConfigSchema config_schema(Settings& s, kb::coord::CoordinatorConfig& c) {
  kb::ConfigSchema schema;
  schema.text("db", &s.db_url, "KB_DB_URL")
      .text("schemas_dir", &s.schemas_dir, "KB_SCHEMAS_DIR")
      .text("problems_dir", &c.problems_dir, "KB_PROBLEMS_DIR")
      .text("workers_bind", &c.workers_bind)
      .text("clients_bind", &c.clients_bind)
      .text("http_bind", &c.http_bind)
      .text("dashboard_db", &c.dashboard_db, "KB_DASHBOARD_DB_URL")
      .text("endpoints_file", &c.endpoints_file)
      .text("curve_secret_key", &c.curve_secret_key_file)
      .text("allow_workers", &c.allow_lists.workers)
      .text("allow_submitters", &c.allow_lists.submitters)
      .text("allow_admins", &c.allow_lists.admins)
      .integer("heartbeat_ms", &s.heartbeat_ms, 50, 60000)
      .integer("liveness", &c.scheduler.liveness, 2, 100)
      .integer("lease_grace_ms", &s.lease_grace_ms, 0, 3600000)
      .choice("log_format", &s.log_format, {"text", "json"}, "KB_LOG_FORMAT")
      .choice("log_level", &s.log_level, {"trace", "debug", "info", "warn", "error"});
  return schema;
}

// The token's first line; "" (and a message) when the file cannot be read or is empty.
std::string read_token(const std::string& path) {
  std::ifstream in(path);
  std::string token;
  std::getline(in, token);
  while (!token.empty() && (token.back() == '\r' || token.back() == ' ')) token.pop_back();
  if (token.size() < 16) std::fprintf(stderr, "kb-coordinator: %s: expected a token of 16+ characters\n", path.c_str());
  return token.size() < 16 ? "" : token;
}

}  // namespace

int main(int argc, char** argv) {
  using kb::coord::Coordinator;
  kb::coord::CoordinatorConfig config;
  Settings settings;
  settings.schemas_dir = kb::coord::default_schemas_dir();
  std::string& db_url = settings.db_url;
  std::string& schemas_dir = settings.schemas_dir;
  int64_t& heartbeat_ms = settings.heartbeat_ms;
  int64_t& lease_grace_ms = settings.lease_grace_ms;

  CLI::App app{"kb-coordinator: the kbfleet queue, scheduler and results store"};
  app.set_version_flag("--version", std::string("kb-coordinator ") + KB_VERSION);
  app.add_option("--config", settings.config, "YAML config file (keys: deploy/README.md)")
      ->capture_default_str();
  app.add_option("--log-format", settings.log_format, "text or json (env KB_LOG_FORMAT)")
      ->check(CLI::IsMember({"text", "json"}))->capture_default_str();
  app.add_option("--log-level", settings.log_level, "trace, debug, info, warn or error")
      ->capture_default_str();
  bool check_config = false;
  app.add_flag("--check-config", check_config, "Check the config file, environment and flags, then exit");
  app.add_option("--db", db_url, "PostgreSQL URL with write rights (env KB_DB_URL)");
  app.add_option("--schemas-dir", schemas_dir, "Migrations directory (env KB_SCHEMAS_DIR)")->capture_default_str();
  app.add_option("--problems-dir", config.problems_dir, "Problem specs and suites.yaml (env KB_PROBLEMS_DIR)");
  app.add_option("--workers-bind", config.workers_bind, "ROUTER endpoint for workers")->capture_default_str();
  app.add_option("--clients-bind", config.clients_bind, "ROUTER endpoint for clients")->capture_default_str();
  app.add_option("--http-bind", config.http_bind,
                 "HOST:PORT for /healthz, /metrics and the dashboard")
      ->capture_default_str();
  app.add_option("--dashboard-db", config.dashboard_db,
                 "Read-only role's PostgreSQL URL: serve the dashboard on the HTTP endpoint (env "
                 "KB_DASHBOARD_DB_URL)");
  app.add_option("--endpoints-file", config.endpoints_file, "Write the bound endpoints here (JSON)");
  app.add_option("--curve-secret-key", config.curve_secret_key_file, "Coordinator key file (CURVE)")->check(CLI::ExistingFile);
  std::string allow_dir, http_token_file;
  bool migrate_only = false;
  app.add_option("--allow-dir", allow_dir, "Allow-lists per role: DIR/workers.txt, submitters.txt, admins.txt")
      ->check(CLI::ExistingDirectory);
  app.add_option("--allow-workers", config.allow_lists.workers, "Worker keys: '<Z85 key> <worker name>' a line")->check(CLI::ExistingFile);
  app.add_option("--allow-submitters", config.allow_lists.submitters, "Submitter keys: '<Z85 key> <name>' a line")->check(CLI::ExistingFile);
  app.add_option("--allow-admins", config.allow_lists.admins, "Admin keys: '<Z85 key> <name>' a line")->check(CLI::ExistingFile);
  app.add_option("--http-token-file", http_token_file, "Bearer token for /metrics and /healthz (needed off loopback)")
      ->check(CLI::ExistingFile);
  app.add_option("--pack-max-bytes", config.pack_quota.max_pack_bytes, "Largest pack upload")->capture_default_str();
  app.add_option("--pack-uploads-per-hour", config.pack_quota.uploads_per_hour, "Pack uploads per submitter per hour")
      ->capture_default_str()->check(CLI::Range(0, 100000));
  app.add_option("--pack-bytes-per-hour", config.pack_quota.bytes_per_hour, "Pack bytes per submitter per hour")
      ->capture_default_str();
  app.add_flag("--migrate", migrate_only, "Apply the schema migrations and exit (with an admin URL)");
  app.add_option("--heartbeat-ms", heartbeat_ms, "Heartbeat interval")->capture_default_str()->check(CLI::Range(50, 60000));
  app.add_option("--liveness", config.scheduler.liveness, "Heartbeats missed before a worker is lost")
      ->capture_default_str()->check(CLI::Range(2, 100));
  app.add_option("--lease-grace-ms", lease_grace_ms, "After a restart, how long leases wait for their worker")
      ->capture_default_str()->check(CLI::Range(0, 3600000));
  CLI11_PARSE(app, argc, argv);
  if (kb::Status s = config_schema(settings, config)
                         .apply(settings.config, app.count("--config") > 0, kb::keys_given(app));
      !s.is_ok()) {
    std::fprintf(stderr, "kb-coordinator: %s\n", s.message().c_str());
    return 2;
  }
  if (check_config) {
    std::printf("kb-coordinator: configuration ok\n");
    return 0;
  }
  if (kb::Status s = kb::logging::init("kb-coordinator",
                                   kb::logging::parse_format(settings.log_format).value(),
                                   settings.log_level);
      !s.is_ok()) {
    std::fprintf(stderr, "kb-coordinator: %s\n", s.message().c_str());
    return 2;
  }
  if (!allow_dir.empty()) {
    const kb::coord::AllowListFiles in_dir = kb::coord::allow_list_files_in(allow_dir);
    for (auto [flag, dir_file] : {std::pair{&config.allow_lists.workers, in_dir.workers},
                                  std::pair{&config.allow_lists.submitters, in_dir.submitters},
                                  std::pair{&config.allow_lists.admins, in_dir.admins}}) {
      if (flag->empty()) *flag = dir_file;
    }
    if (!config.allow_lists.any()) {
      std::fprintf(stderr, "kb-coordinator: --allow-dir %s has none of workers.txt, submitters.txt, admins.txt\n",
                   allow_dir.c_str());
      return 2;
    }
  }
  if (!http_token_file.empty() && (config.http_token = read_token(http_token_file)).empty()) return 2;
  // Before touching the database: a refused bind is a usage error (Coordinator::create checks again).
  const bool curve = !config.curve_secret_key_file.empty() || config.allow_lists.any();
  if (kb::Status binds = kb::coord::check_binds({config.workers_bind, config.clients_bind,
                                                 config.http_bind, curve, !config.http_token.empty()});
      !binds.is_ok()) {
    std::fprintf(stderr, "kb-coordinator: %s\n", binds.message().c_str());
    return 2;
  }
  config.scheduler.heartbeat = std::chrono::milliseconds(heartbeat_ms);
  config.scheduler.lease_grace = std::chrono::milliseconds(lease_grace_ms);
  if (db_url.empty()) {
    KB_LOG_ERROR("no database: give --db URL, set KB_DB_URL or db: in {}", settings.config);
    return 2;
  }
  auto migrated = kb::coord::apply_migrations(db_url, schemas_dir);
  if (!migrated.is_ok()) {
    KB_LOG_ERROR("migrations from {}: {}", schemas_dir, migrated.status().to_string());
    return 1;
  }
  KB_LOG_INFO("{} migrations applied, {} present", migrated->applied.size(),
              migrated->skipped.size());
  if (migrate_only) return 0;
  auto lock = kb::coord::InstanceLock::acquire(db_url);
  if (!lock.is_ok()) {
    std::fprintf(stderr, "kb-coordinator: %s\n", lock.status().message().c_str());
    return 3;
  }
  auto store = kb::coord::PgJobStore::open(db_url);
  if (!store.is_ok()) {
    KB_LOG_ERROR("{}", store.status().to_string());
    return 1;
  }
  auto coordinator = Coordinator::create(config, std::move(store.value()));
  if (!coordinator.is_ok()) {
    KB_LOG_ERROR("{}", coordinator.status().to_string());
    return coordinator.status().code() == kb::StatusCode::kInvalidArgument ? 2 : 1;
  }
  Coordinator* running = coordinator.value().get();
  lock.value()->watch(std::chrono::seconds(2), [running](const std::string& why) {
    std::fprintf(stderr, "kb-coordinator: lost the database's coordinator lock: %s\n", why.c_str());
    running->request_stop();
  });
  const auto& e = coordinator.value()->endpoints();
  KB_LOG_INFO("workers {}, clients {}, http {}", e.workers, e.clients, e.http);
  const int code = coordinator.value()->run();
  lock.value().reset();  // joins the watcher before the coordinator it may stop goes away
  return code;
}
