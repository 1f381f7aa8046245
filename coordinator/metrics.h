// The coordinator's counters and their Prometheus text rendering (/metrics). Counters are bumped
// by the event loop; the database thread's figures come in as a DbStats snapshot at render time.
//
// Exposed (all prefixed kb_): queue_depth, jobs_leased, workers{state=busy|idle|lost},
// jobs_completed_total, jobs_failed_total, results_stored_total, jobs_per_second,
// results_per_second (over the last kRateWindow), dropped_messages_total{reason=...} (one per wire
// DecodeError kind, plus unknown_peer, wrong_direction, send_failed, forbidden), auth_rejected_total,
// db_batches_total, db_batch_seconds (sum, count), db_up, regressions_open (flagged or confirmed,
// not cleared) and regressions_flagged_total (points flagged since start).
//
// Thread safety: none; owned by the event loop.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/wire_protocol.h"
#include "coordinator/scheduler.h"

namespace kb::coord {

inline constexpr std::string_view kDropUnknownPeer = "unknown_peer";
inline constexpr std::string_view kDropWrongDirection = "wrong_direction";
inline constexpr std::string_view kDropSendFailed = "send_failed";
// A request its key's role may not make (access_control.h), or a READY under another's name.
inline constexpr std::string_view kDropForbidden = "forbidden";

struct DbStats {
  bool up = true;
  uint64_t batches = 0;
  double batch_seconds = 0;  // total time spent in apply()
  uint64_t queued_ops = 0;   // waiting on the database thread
};

class Metrics {
 public:
  static constexpr std::chrono::seconds kRateWindow{5};

  Metrics();
  void count_dropped(std::string_view reason);
  void count_dropped(wire::DecodeError error) { count_dropped(wire::to_string(error)); }
  void count_auth_rejected() { ++auth_rejected_; }
  void count_results_stored(uint64_t n) { results_stored_ += n; }
  void set_open_regressions(int64_t n) { open_regressions_ = n; }
  void count_backpressure() { ++backpressure_pauses_; }
  void count_regressions_flagged(int64_t n) { regressions_flagged_ += static_cast<uint64_t>(n); }
  // A RESULT refused by lease fencing (scheduler.h) or from another database epoch.
  void count_result_rejected(std::string_view reason);
  uint64_t results_rejected(std::string_view reason) const;
  uint64_t dropped(std::string_view reason) const;
  uint64_t dropped_total() const;
  uint64_t auth_rejected() const { return auth_rejected_; }
  uint64_t results_stored() const { return results_stored_; }

  // Once a second: remembers the counters to compute the rates.
  void sample(std::chrono::steady_clock::time_point now, uint64_t jobs_completed);

  // quarantined: the names of the quarantined workers (one gauge series each).
  std::string render(const SchedulerStats& scheduler, const DbStats& db,
                     const std::vector<std::string>& quarantined = {}) const;

 private:
  struct Sample {
    std::chrono::steady_clock::time_point at;
    uint64_t jobs, results;
  };
  std::pair<double, double> rates() const;  // jobs/s, results/s

  std::map<std::string, uint64_t, std::less<>> dropped_, rejected_;
  uint64_t auth_rejected_ = 0, results_stored_ = 0, regressions_flagged_ = 0, backpressure_pauses_ = 0;
  int64_t open_regressions_ = 0;
  std::deque<Sample> samples_;
};

}  // namespace kb::coord
