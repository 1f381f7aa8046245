#include "coordinator/metrics.h"

#include <cstdio>

namespace kb::coord {
namespace {

void line(std::string& out, const char* name, const std::string& labels, double value) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", value);
  out += name;
  out += labels;
  out += ' ';
  out += buf;
  out += '\n';
}

void header(std::string& out, const char* name, const char* type, const char* help) {
  out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
}

}  // namespace

Metrics::Metrics() {
  for (int e = 0; e <= static_cast<int>(wire::DecodeError::kMissingField); ++e) {
    dropped_[std::string(wire::to_string(static_cast<wire::DecodeError>(e)))] = 0;
  }
  for (std::string_view reason : {kDropUnknownPeer, kDropWrongDirection, kDropSendFailed, kDropForbidden}) {
    dropped_[std::string(reason)] = 0;
  }
  for (const char* reason : {"unknown_job", "not_leased", "not_holder", "stale_lease", "mismatch",
                             "done", "epoch"}) {
    rejected_[reason] = 0;
  }
}

void Metrics::count_result_rejected(std::string_view reason) {
  auto it = rejected_.find(reason);
  if (it == rejected_.end()) it = rejected_.emplace(std::string(reason), 0).first;
  ++it->second;
}

uint64_t Metrics::results_rejected(std::string_view reason) const {
  auto it = rejected_.find(reason);
  return it == rejected_.end() ? 0 : it->second;
}

void Metrics::count_dropped(std::string_view reason) {
  auto it = dropped_.find(reason);
  if (it == dropped_.end()) it = dropped_.emplace(std::string(reason), 0).first;
  ++it->second;
}

uint64_t Metrics::dropped(std::string_view reason) const {
  auto it = dropped_.find(reason);
  return it == dropped_.end() ? 0 : it->second;
}

uint64_t Metrics::dropped_total() const {
  uint64_t total = 0;
  for (const auto& [reason, n] : dropped_) total += n;
  return total;
}

void Metrics::sample(std::chrono::steady_clock::time_point now, uint64_t jobs_completed) {
  samples_.push_back({now, jobs_completed, results_stored_});
  while (samples_.size() > 2 && now - samples_.front().at > kRateWindow) samples_.pop_front();
}

std::pair<double, double> Metrics::rates() const {
  if (samples_.size() < 2) return {0, 0};
  const Sample& a = samples_.front();
  const Sample& b = samples_.back();
  const double seconds = std::chrono::duration<double>(b.at - a.at).count();
  if (seconds <= 0) return {0, 0};
  return {static_cast<double>(b.jobs - a.jobs) / seconds,
          static_cast<double>(b.results - a.results) / seconds};
}

std::string Metrics::render(const SchedulerStats& s, const DbStats& db,
                            const std::vector<std::string>& quarantined) const {
  std::string out;
  header(out, "kb_queue_depth", "gauge", "Jobs queued in memory, waiting for a worker.");
  line(out, "kb_queue_depth", "", static_cast<double>(s.queued));
  header(out, "kb_jobs_leased", "gauge", "Jobs leased to a worker.");
  line(out, "kb_jobs_leased", "", static_cast<double>(s.leased));
  header(out, "kb_workers", "gauge", "Worker sessions by state (lost: lost and not back).");
  line(out, "kb_workers", "{state=\"busy\"}", static_cast<double>(s.workers_busy));
  line(out, "kb_workers", "{state=\"idle\"}", static_cast<double>(s.workers_idle));
  line(out, "kb_workers", "{state=\"lost\"}", static_cast<double>(s.workers_lost));
  line(out, "kb_workers", "{state=\"draining\"}", static_cast<double>(s.workers_draining));
  line(out, "kb_workers", "{state=\"quarantined\"}", static_cast<double>(s.workers_quarantined));
  header(out, "kb_worker_quarantined", "gauge",
         "1 per quarantined worker (kb workers --release NAME lets it take jobs again).");
  for (const std::string& name : quarantined) {
    line(out, "kb_worker_quarantined", "{worker=\"" + name + "\"}", 1);
  }
  header(out, "kb_lease_expiries_total", "counter", "Leases ended by their deadline or lease grace.");
  line(out, "kb_lease_expiries_total", "", static_cast<double>(s.lease_expiries));
  header(out, "kb_requeues_total", "counter", "Jobs queued again after a lease ended without a result.");
  line(out, "kb_requeues_total", "", static_cast<double>(s.requeues));
  header(out, "kb_quarantines_total", "counter",
         "Workers quarantined after consecutive infrastructure failures.");
  line(out, "kb_quarantines_total", "", static_cast<double>(s.quarantines));
  header(out, "kb_results_rejected_total", "counter",
         "RESULTs refused by lease fencing or from another database epoch, by reason.");
  for (const auto& [reason, n] : rejected_) {
    line(out, "kb_results_rejected_total", "{reason=\"" + reason + "\"}", static_cast<double>(n));
  }
  header(out, "kb_jobs_completed_total", "counter", "Jobs done (first result accepted).");
  line(out, "kb_jobs_completed_total", "", static_cast<double>(s.jobs_completed));
  header(out, "kb_jobs_failed_total", "counter", "Jobs failed after their last attempt.");
  line(out, "kb_jobs_failed_total", "", static_cast<double>(s.jobs_failed));
  header(out, "kb_results_stored_total", "counter", "Result rows committed to PostgreSQL.");
  line(out, "kb_results_stored_total", "", static_cast<double>(results_stored_));
  const auto [jobs_rate, results_rate] = rates();
  header(out, "kb_jobs_per_second", "gauge", "Jobs completed per second (5 s window).");
  line(out, "kb_jobs_per_second", "", jobs_rate);
  header(out, "kb_results_per_second", "gauge", "Results stored per second (5 s window).");
  line(out, "kb_results_per_second", "", results_rate);
  header(out, "kb_dropped_messages_total", "counter", "Messages dropped, by reason.");
  for (const auto& [reason, n] : dropped_) {
    line(out, "kb_dropped_messages_total", "{reason=\"" + reason + "\"}", static_cast<double>(n));
  }
  header(out, "kb_auth_rejected_total", "counter", "CURVE peers refused by the allow-list.");
  line(out, "kb_auth_rejected_total", "", static_cast<double>(auth_rejected_));
  header(out, "kb_db_batches_total", "counter", "Batches committed by the database thread.");
  line(out, "kb_db_batches_total", "", static_cast<double>(db.batches));
  header(out, "kb_db_batch_seconds", "summary", "Time spent applying batches.");
  line(out, "kb_db_batch_seconds_sum", "", db.batch_seconds);
  line(out, "kb_db_batch_seconds_count", "", static_cast<double>(db.batches));
  header(out, "kb_db_queue", "gauge", "Operations waiting for the database thread.");
  line(out, "kb_db_queue", "", static_cast<double>(db.queued_ops));
  header(out, "kb_db_up", "gauge", "1 when the database thread's last call reached PostgreSQL.");
  line(out, "kb_db_up", "", db.up ? 1 : 0);
  header(out, "kb_dispatch_pauses_total", "counter",
         "Times dispatching paused because results waited for the database (backpressure).");
  line(out, "kb_dispatch_pauses_total", "", static_cast<double>(backpressure_pauses_));
  header(out, "kb_regressions_open", "gauge", "Regressions flagged or confirmed and not cleared.");
  line(out, "kb_regressions_open", "", static_cast<double>(open_regressions_));
  header(out, "kb_regressions_flagged_total", "counter", "Points flagged as regressions since start.");
  line(out, "kb_regressions_flagged_total", "", static_cast<double>(regressions_flagged_));
  return out;
}

}  // namespace kb::coord
