// PgJobStore::apply (pg_job_store.h): a Batch as six set-based statements in one transaction.
#include <pqxx/pqxx>

#include <charconv>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "common/json_fields.h"
#include "coordinator/pg_job_store.h"
#include "coordinator/pg_statements.h"
#include "coordinator/pg_status.h"

namespace kb::coord {
namespace {

using nlohmann::json;

double epoch_ms(SystemTime t) {
  return static_cast<double>(
      std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count());
}

// Indices of the entries to send: the last entry of each key (a later change supersedes).
template <typename T, typename Key>
std::vector<size_t> last_per_key(const std::vector<T>& items, Key key) {
  std::unordered_set<int64_t> seen;
  std::vector<size_t> keep;
  for (size_t i = items.size(); i-- > 0;) {
    if (seen.insert(key(items[i])).second) keep.push_back(i);
  }
  return {keep.rbegin(), keep.rend()};
}

// A JSON value at `path` when it is a number, else null: a malformed result from one worker must
// not fail the whole batch, so every column is type-checked here rather than cast in SQL.
json number_at(const json& j, std::initializer_list<const char*> path) {
  const json* node = &j;
  for (const char* key : path) {
    if (!node->is_object()) return nullptr;
    auto it = node->find(key);
    if (it == node->end()) return nullptr;
    node = &*it;
  }
  return node->is_number() ? *node : json();
}

// The numbers of j[variant].samples_ms as a float8[] literal ("{1.5,2}"); other elements are
// dropped.
std::string samples_at(const json& j, const char* variant) {
  std::string literal = "{";
  auto it = j.is_object() ? j.find(variant) : j.end();
  if (it != j.end() && it->is_object()) {
    auto list = it->find("samples_ms");
    if (list != it->end() && list->is_array()) {
      char buffer[32];
      for (const json& v : *list) {
        if (!v.is_number()) continue;
        auto [end, error] = std::to_chars(buffer, buffer + sizeof buffer, v.get<double>());
        if (error != std::errc()) continue;
        if (literal.size() > 1) literal += ',';
        literal.append(buffer, end);
      }
    }
  }
  return literal + "}";
}

// One results row, columns as in sql::kResults (pg_statements.h), from the JobResult JSON
// (common/job_result.cpp to_json).
json result_row(const ResultRow& row) {
  const json& r = row.result;
  return {
      {"job_id", row.job_id},
      {"attempt", row.attempt},
      {"worker_id", row.worker_id},
      {"gpu_model", row.gpu_model},
      {"device_kind", row.device_kind.empty()
                          ? json_fields::value_or<std::string>(r, "device_kind", "")
                          : row.device_kind},
      {"wall_ms", row.wall_ms},
      {"status", json_fields::value_or<std::string>(r, "status", "runtime_error")},
      {"message", json_fields::value_or<std::string>(r, "message", "")},
      {"reference_median_ms", number_at(r, {"reference", "summary", "median"})},
      {"custom_median_ms", number_at(r, {"custom", "summary", "median"})},
      {"speedup", number_at(r, {"speedup", "value"})},
      {"speedup_ci_low", number_at(r, {"speedup", "ci_low"})},
      {"speedup_ci_high", number_at(r, {"speedup", "ci_high"})},
      {"custom_tflops", number_at(r, {"custom_tflops"})},
      {"custom_gbps", number_at(r, {"custom_gbps"})},
      {"floor_ms", number_at(r, {"floor_ms"})},
      {"max_abs_error", number_at(r, {"errors", "max_abs_error"})},
      {"max_rel_error", number_at(r, {"errors", "max_rel_error"})},
      {"reference_samples_ms", samples_at(r, "reference")},
      {"custom_samples_ms", samples_at(r, "custom")},
      {"environment", json_fields::value_or<json_fields::Object>(r, "environment", json::object())},
      {"result", r.is_null() ? json::object() : r}};
}

// PostgreSQL text cannot hold U+0000: a worker's message with a NUL byte would fail the whole
// batch. (A literal backslash followed by "u0000" becomes "\ufffd" text too; harmless.)
std::string without_nul(std::string text) {
  static constexpr std::string_view kNul = "\\u0000", kReplacement = "\\ufffd";
  for (size_t at = text.find(kNul); at != std::string::npos; at = text.find(kNul, at)) {
    text.replace(at, kNul.size(), kReplacement);
  }
  return text;
}

json leases_json(const std::vector<Lease>& leases) {
  json rows = json::array();
  for (size_t i : last_per_key(leases, [](const Lease& l) { return l.job_id; })) {
    const Lease& l = leases[i];
    rows.push_back({{"job_id", l.job_id},
                    {"attempt", l.attempt},
                    {"worker_id", l.worker_id},
                    {"deadline_ms", epoch_ms(l.deadline)},
                    {"lease_id", l.lease_id}});
  }
  return rows;
}

template <typename T>
json job_reasons_json(const std::vector<T>& items) {
  json rows = json::array();
  for (const T& item : items) rows.push_back({{"job_id", item.job_id}, {"reason", item.reason}});
  return rows;
}

json worker_states_json(const std::vector<WorkerState>& states) {
  json rows = json::array();
  for (size_t i : last_per_key(states, [](const WorkerState& s) { return s.worker_id; })) {
    rows.push_back({{"worker_id", states[i].worker_id}, {"state", states[i].state}});
  }
  return rows;
}

json run_states_json(const std::vector<RunState>& states) {
  json rows = json::array();
  for (size_t i : last_per_key(states, [](const RunState& s) { return s.run_id; })) {
    rows.push_back({{"run_id", states[i].run_id}, {"state", states[i].state}});
  }
  return rows;
}

// Inserts the results; result_inserted[i] is true for the first entry of each job whose row this
// statement inserted (a job repeated within the batch is a duplicate after its first entry).
std::vector<bool> insert_results(pqxx::work& txn, const std::vector<ResultRow>& results) {
  std::vector<bool> inserted(results.size(), false);
  std::unordered_map<int64_t, size_t> first;  // job_id -> index of its first entry
  json rows = json::array();
  for (size_t i = 0; i < results.size(); ++i) {
    if (first.try_emplace(results[i].job_id, i).second) rows.push_back(result_row(results[i]));
  }
  for (const auto& row : txn.exec_prepared("kb_results", without_nul(rows.dump()))) {
    inserted[first.at(row[0].as<int64_t>())] = true;
  }
  return inserted;
}

}  // namespace

Result<BatchOutcome> PgJobStore::apply(const Batch& batch) {
  KB_TRY(require_connection());
  BatchOutcome outcome;
  try {
    pqxx::work txn(conn_->conn);
    if (!batch.requeues.empty()) {
      txn.exec_prepared("kb_requeue", job_reasons_json(batch.requeues).dump());
    }
    if (!batch.leases.empty()) txn.exec_prepared("kb_lease", leases_json(batch.leases).dump());
    if (!batch.failures.empty()) {
      txn.exec_prepared("kb_fail", job_reasons_json(batch.failures).dump());
    }
    if (!batch.results.empty()) outcome.result_inserted = insert_results(txn, batch.results);
    if (!batch.worker_states.empty()) {
      txn.exec_prepared("kb_worker_states", worker_states_json(batch.worker_states).dump());
    }
    if (!batch.run_states.empty()) {
      txn.exec_prepared("kb_run_states", run_states_json(batch.run_states).dump());
    }
    txn.commit();
  } catch (...) {
    return current_pg_status("apply batch");
  }
  return outcome;
}

}  // namespace kb::coord
