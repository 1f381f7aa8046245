#include "coordinator/pg_job_store.h"

#include <pqxx/pqxx>

#include <algorithm>
#include <unordered_map>

#include "coordinator/pg_statements.h"
#include "coordinator/regression_store.h"
#include "coordinator/pg_status.h"

namespace kb::coord {
namespace {

using nlohmann::json;

const char* nullable(const std::optional<std::string>& value) {
  return value ? value->c_str() : nullptr;
}

json parse_or_empty(const pqxx::field& field) {
  if (field.is_null()) return json::object();
  json value = json::parse(field.c_str(), nullptr, /*allow_exceptions=*/false);
  return value.is_discarded() ? json::object() : value;
}

JobRecord record_of(const NewJob& job, int64_t id, int64_t run_id, const NewRun& run) {
  JobRecord r;
  r.id = id;
  r.run_id = run_id;
  r.problem_id = job.problem_id;
  r.preset = job.preset;
  r.gpu_model = job.gpu_model;
  r.seed = job.seed;
  r.predicted_ms = job.predicted_ms;
  r.params = job.params.is_null() ? json::object() : job.params;
  r.state = "queued";
  r.max_attempts = job.max_attempts;
  r.pack_hash = run.pack_hash;
  r.run_config = run.config;
  return r;
}

json jobs_json(const std::vector<NewJob>& jobs, const std::vector<int64_t>& ids) {
  json rows = json::array();
  for (size_t i = 0; i < jobs.size(); ++i) {
    const NewJob& job = jobs[i];
    rows.push_back({{"id", ids[i]},
                    {"problem_id", job.problem_id},
                    {"preset", job.preset},
                    {"gpu_model", job.gpu_model ? json(*job.gpu_model) : json()},
                    {"seed", static_cast<int64_t>(job.seed)},
                    {"predicted_ms", job.predicted_ms},
                    {"params", job.params},
                    {"max_attempts", job.max_attempts}});
  }
  return rows;
}

JobRecord record_of(const pqxx::row& row, std::unordered_map<int64_t, json>& configs) {
  JobRecord r;
  r.id = row[0].as<int64_t>();
  r.run_id = row[1].as<int64_t>();
  r.problem_id = row[2].as<std::string>();
  r.preset = row[3].as<std::string>();
  if (!row[4].is_null()) r.gpu_model = row[4].as<std::string>();
  r.seed = static_cast<uint64_t>(row[5].as<int64_t>());
  r.predicted_ms = row[6].as<double>();
  r.params = parse_or_empty(row[7]);
  r.state = row[8].as<std::string>();
  r.attempt = row[9].as<int>();
  r.max_attempts = row[10].as<int>();
  if (!row[11].is_null()) r.worker_id = row[11].as<int64_t>();
  if (!row[12].is_null()) {
    r.lease_deadline = SystemTime(std::chrono::milliseconds(row[12].as<int64_t>()));
  }
  r.pack_hash = row[13].as<std::string>();
  auto [config, inserted] = configs.try_emplace(r.run_id);
  if (inserted) config->second = parse_or_empty(row[14]);
  r.run_config = config->second;
  if (!row[15].is_null()) r.lease_id = static_cast<uint64_t>(row[15].as<int64_t>());
  return r;
}

}  // namespace

PgJobStore::PgJobStore(std::string db_url) : db_url_(std::move(db_url)) {}
PgJobStore::~PgJobStore() = default;

Result<std::unique_ptr<PgJobStore>> PgJobStore::open(const std::string& db_url) {
  auto store = std::make_unique<PgJobStore>(db_url);
  KB_TRY(store->reconnect());
  return store;
}

Status PgJobStore::reconnect() {
  conn_.reset();
  try {
    auto conn = std::make_unique<Connection>(with_connect_timeout(db_url_));
    conn->conn.set_variable("client_min_messages", "warning");
    sql::prepare_all(conn->conn);
    conn_ = std::move(conn);
  } catch (...) {
    Status status = current_pg_status("connect");
    // A refused or unreachable server is an outage, whatever libpq's wording.
    return status.code() == StatusCode::kInternal ? Status::io_error(status.message()) : status;
  }
  return Status::ok();
}

bool PgJobStore::is_connection_error(const Status& status) const {
  return status.code() == StatusCode::kIoError;
}

Status PgJobStore::require_connection() const {
  if (conn_ == nullptr || !conn_->conn.is_open())
    return Status::io_error("not connected to the database");
  return Status::ok();
}

Result<int64_t> PgJobStore::upsert_worker(const WorkerIdentity& w) {
  KB_TRY(require_connection());
  try {
    pqxx::work txn(conn_->conn);
    pqxx::row row =
        txn.exec_prepared1("kb_upsert_worker", w.name, w.device_kind, w.gpu_model, w.gpu_uuid,
                           w.memory_bytes, w.compute_capability, w.software.dump(), w.host);
    txn.commit();
    return row[0].as<int64_t>();
  } catch (...) {
    return current_pg_status("upsert worker " + w.name);
  }
}

Result<std::string> PgJobStore::database_epoch() {
  KB_TRY(require_connection());
  try {
    pqxx::work txn(conn_->conn);
    pqxx::row row = txn.exec_prepared1("kb_epoch");
    txn.commit();
    return row[0].as<std::string>();
  } catch (...) {
    return current_pg_status("read the database epoch");
  }
}

Result<bool> PgJobStore::has_pack(const std::string& hash) {
  KB_TRY(require_connection());
  try {
    pqxx::nontransaction txn(conn_->conn);
    return !txn.exec_prepared("kb_has_pack", hash).empty();
  } catch (...) {
    return current_pg_status("has pack " + hash);
  }
}

Status PgJobStore::store_pack(const PackInfo& info, const std::string& bytes) {
  KB_TRY(require_connection());
  try {
    pqxx::work txn(conn_->conn);
    txn.exec_prepared("kb_store_pack", info.hash, pqxx::binarystring(bytes),
                      static_cast<int64_t>(bytes.size()), info.commit_sha, info.build_info.dump());
    txn.commit();
  } catch (...) {
    return current_pg_status("store pack " + info.hash);
  }
  return Status::ok();
}

Result<std::string> PgJobStore::load_pack(const std::string& hash) {
  KB_TRY(require_connection());
  try {
    pqxx::nontransaction txn(conn_->conn);
    pqxx::result rows = txn.exec_prepared("kb_load_pack", hash);
    if (rows.empty()) return Status::not_found("no pack " + hash);
    return pqxx::binarystring(rows[0][0]).str();
  } catch (...) {
    return current_pg_status("load pack " + hash);
  }
}

Result<std::vector<JobRecord>> PgJobStore::create_run(const NewRun& run, int64_t* run_id) {
  KB_TRY(require_connection());
  try {
    pqxx::work txn(conn_->conn);
    const int64_t id =
        txn.exec_prepared1("kb_insert_run", run.submitted_by, run.suite, json(run.problems).dump(),
                           run.preset, json(run.gpu_models).dump(), run.commit_sha, run.branch,
                           nullable(run.commit_time), run.pack_hash, run.config.dump())[0]
            .as<int64_t>();
    std::vector<int64_t> ids;
    ids.reserve(run.jobs.size());
    if (!run.jobs.empty()) {
      for (const auto& row :
           txn.exec_prepared("kb_reserve_job_ids", static_cast<int64_t>(run.jobs.size()))) {
        ids.push_back(row[0].as<int64_t>());
      }
      txn.exec_prepared("kb_insert_jobs", id, jobs_json(run.jobs, ids).dump());
    }
    txn.commit();
    std::vector<JobRecord> records;
    records.reserve(run.jobs.size());
    for (size_t i = 0; i < run.jobs.size(); ++i) {
      records.push_back(record_of(run.jobs[i], ids[i], id, run));
    }
    if (run_id != nullptr) *run_id = id;
    return records;
  } catch (...) {
    return current_pg_status("create run");
  }
}

Status PgJobStore::store_problems(const std::vector<ProblemRow>& problems) {
  KB_TRY(require_connection());
  try {
    pqxx::work txn(conn_->conn);
    for (const ProblemRow& p : problems) {
      txn.exec_params(
          "INSERT INTO problems (id, name, level, family, spec_yaml, spec_hash) "
          "VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (id) DO UPDATE SET name = $2, level = $3, "
          "family = $4, spec_yaml = $5, spec_hash = $6, updated_at = now() "
          "WHERE problems.spec_hash <> $6",
          p.id, p.name, p.level, p.family, p.spec_yaml, p.spec_hash);
    }
    txn.commit();
    return Status::ok();
  } catch (...) {
    return current_pg_status("store problems");
  }
}

Result<std::string> PgJobStore::run_submitter(int64_t run_id) {
  KB_TRY(require_connection());
  try {
    pqxx::read_transaction txn(conn_->conn);
    const pqxx::result r = txn.exec_params("SELECT submitted_by FROM runs WHERE id = $1", run_id);
    if (r.empty()) return Status::not_found("no run " + std::to_string(run_id));
    return r[0][0].as<std::string>();
  } catch (...) {
    return current_pg_status("run " + std::to_string(run_id));
  }
}

Result<std::vector<int64_t>> PgJobStore::cancel_run(int64_t run_id) {
  KB_TRY(require_connection());
  try {
    pqxx::work txn(conn_->conn);
    if (txn.exec_prepared("kb_run_exists", run_id).empty()) {
      return Status::not_found("no run " + std::to_string(run_id));
    }
    txn.exec_prepared("kb_cancel_run", run_id);
    std::vector<int64_t> cancelled;
    for (const auto& row : txn.exec_prepared("kb_cancel_jobs", run_id)) {
      cancelled.push_back(row[0].as<int64_t>());
    }
    txn.commit();
    std::sort(cancelled.begin(), cancelled.end());
    return cancelled;
  } catch (...) {
    return current_pg_status("cancel run " + std::to_string(run_id));
  }
}

Result<std::vector<JobRecord>> PgJobStore::load_open_jobs() {
  KB_TRY(require_connection());
  try {
    pqxx::work txn(conn_->conn);
    pqxx::result rows = txn.exec_prepared("kb_load_open_jobs");
    txn.commit();
    std::vector<JobRecord> jobs;
    jobs.reserve(rows.size());
    std::unordered_map<int64_t, json> configs;
    for (const auto& row : rows) jobs.push_back(record_of(row, configs));
    return jobs;
  } catch (...) {
    return current_pg_status("load open jobs");
  }
}

Result<double> PgJobStore::predicted_wall_ms(const std::string& problem_id,
                                             const std::string& preset,
                                             const std::string& gpu_model) {
  KB_TRY(require_connection());
  try {
    pqxx::nontransaction txn(conn_->conn);
    pqxx::row row = txn.exec_prepared1("kb_predicted_wall", problem_id, preset, gpu_model);
    return row[0].is_null() ? 0.0 : row[0].as<double>();
  } catch (...) {
    return current_pg_status("predicted wall time of " + problem_id);
  }
}

Result<int> PgJobStore::detect_regressions(const std::vector<int64_t>& job_ids) {
  KB_TRY(require_connection());
  std::string ids = "{";
  for (size_t i = 0; i < job_ids.size(); ++i) ids += (i ? "," : "") + std::to_string(job_ids[i]);
  ids += "}";
  std::vector<int64_t> result_ids;
  try {
    pqxx::nontransaction txn(conn_->conn);
    for (const auto& row : txn.exec_params(
             "SELECT id FROM results WHERE job_id = ANY($1::bigint[]) AND device_kind <> 'sim' "
             "AND status = 'ok' ORDER BY id",
             ids)) {
      result_ids.push_back(row[0].as<int64_t>());
    }
  } catch (...) {
    return current_pg_status("results of " + std::to_string(job_ids.size()) + " jobs");
  }
  if (result_ids.empty()) return 0;
  int flagged = 0;
  KB_TRY(coord::detect_regressions(conn_->conn, result_ids, regression_config_, &flagged));
  return flagged;
}

Result<int64_t> PgJobStore::open_regressions() {
  KB_TRY(require_connection());
  return count_open_regressions(conn_->conn);
}

}  // namespace kb::coord
