// kb-coordinator: applies the schema migrations, loads the open jobs and serves workers and
// clients until SIGTERM/SIGINT (coordinator.h). Flags: schemas/protocol.md and README.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <cstdlib>

#include "coordinator/coordinator.h"
#include "coordinator/migrations.h"
#include "coordinator/pg_job_store.h"

namespace {

std::string env_or(const char* name, std::string fallback) {
  const char* value = std::getenv(name);
  return value && *value ? value : fallback;
}

}  // namespace

int main(int argc, char** argv) {
  using kb::coord::Coordinator;
  kb::coord::CoordinatorConfig config;
  std::string db_url = env_or("KB_DB_URL", "");
  std::string schemas_dir = kb::coord::default_schemas_dir();
  int64_t heartbeat_ms = 1000, lease_grace_ms = 10000;

  CLI::App app{"kb-coordinator: the kbfleet queue, scheduler and results store"};
  app.add_option("--db", db_url, "PostgreSQL URL with write rights (env KB_DB_URL)");
  app.add_option("--schemas-dir", schemas_dir, "Migrations directory (env KB_SCHEMAS_DIR)")->capture_default_str();
  app.add_option("--problems-dir", config.problems_dir, "Problem specs and suites.yaml (env KB_PROBLEMS_DIR)");
  app.add_option("--workers-bind", config.workers_bind, "ROUTER endpoint for workers")->capture_default_str();
  app.add_option("--clients-bind", config.clients_bind, "ROUTER endpoint for clients")->capture_default_str();
  app.add_option("--http-bind", config.http_bind, "HOST:PORT for /healthz and /metrics")->capture_default_str();
  app.add_option("--endpoints-file", config.endpoints_file, "Write the bound endpoints here (JSON)");
  app.add_option("--curve-secret-key", config.curve_secret_key_file, "Coordinator key file (CURVE)")->check(CLI::ExistingFile);
  app.add_option("--allow-keys", config.allow_keys_file, "Allowed worker/client public keys")->check(CLI::ExistingFile);
  app.add_option("--heartbeat-ms", heartbeat_ms, "Heartbeat interval")->capture_default_str()->check(CLI::Range(50, 60000));
  app.add_option("--liveness", config.scheduler.liveness, "Heartbeats missed before a worker is lost")
      ->capture_default_str()->check(CLI::Range(2, 100));
  app.add_option("--lease-grace-ms", lease_grace_ms, "After a restart, how long leases wait for their worker")
      ->capture_default_str()->check(CLI::Range(0, 3600000));
  CLI11_PARSE(app, argc, argv);
  config.scheduler.heartbeat = std::chrono::milliseconds(heartbeat_ms);
  config.scheduler.lease_grace = std::chrono::milliseconds(lease_grace_ms);
  if (db_url.empty()) {
    std::fprintf(stderr, "kb-coordinator: no database: give --db URL or set KB_DB_URL\n");
    return 2;
  }
  auto migrated = kb::coord::apply_migrations(db_url, schemas_dir);
  if (!migrated.is_ok()) {
    std::fprintf(stderr, "kb-coordinator: migrations from %s: %s\n", schemas_dir.c_str(),
                 migrated.status().to_string().c_str());
    return 1;
  }
  std::fprintf(stderr, "kb-coordinator: %zu migrations applied, %zu present\n",
               migrated->applied.size(), migrated->skipped.size());
  auto store = kb::coord::PgJobStore::open(db_url);
  if (!store.is_ok()) {
    std::fprintf(stderr, "kb-coordinator: %s\n", store.status().to_string().c_str());
    return 1;
  }
  auto coordinator = Coordinator::create(config, std::move(store.value()));
  if (!coordinator.is_ok()) {
    std::fprintf(stderr, "kb-coordinator: %s\n", coordinator.status().to_string().c_str());
    return coordinator.status().code() == kb::StatusCode::kInvalidArgument ? 2 : 1;
  }
  const auto& e = coordinator.value()->endpoints();
  std::fprintf(stderr, "kb-coordinator: workers %s, clients %s, http %s\n", e.workers.c_str(),
               e.clients.c_str(), e.http.c_str());
  return coordinator.value()->run();
}
