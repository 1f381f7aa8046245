// kb-worker's counters and its Prometheus text (/metrics on the worker's HTTP endpoint), plus the
// log line for each job's start and end (common/log.h: "job=ID attempt=N ...").
//
// Exposed (prefix kb_worker_): jobs_total{status=...}, job_seconds (summary), executor_spawn_seconds
// (summary: the time to start a kb-executor child), pack_cache_hits_total, pack_cache_misses_total,
// pack_cache_bytes, spool_depth (results written and not yet acknowledged), sessions{state=...},
// up, and with NVML gpu_temperature_celsius, gpu_sm_clock_mhz, gpu_max_sm_clock_mhz.
//
// One object per process (global()): the event loop bumps it, the HTTP thread renders it.
// Thread safety: every method is thread-safe (one mutex; nothing here is hot).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include <spdlog/spdlog.h>

namespace kb {

struct WorkerGauges {  // sampled when /metrics is read
  int64_t spool_depth = 0;
  int64_t pack_cache_bytes = 0;
  struct Gpu {
    std::string uuid;
    double temperature_c = 0, sm_mhz = 0, max_sm_mhz = 0;
  };
  std::optional<Gpu> gpu;  // with NVML only
};

class WorkerMetrics {
 public:
  static WorkerMetrics& global();

  void job_started(const std::string& worker, int64_t job_id, int64_t attempt,
                   const std::string& problem);
  void job_finished(const std::string& worker, int64_t job_id, int64_t attempt,
                    const std::string& status, double seconds);
  void executor_spawned(double seconds);
  void pack_lookup(bool hit);
  // The benchmark's simulated workers run thousands of jobs a second: their job lines go to debug.
  void set_job_log_level(spdlog::level::level_enum level);
  // From the event loop (at most a few times a second): the sessions' states; /healthz is 200
  // while this was called within `within`.
  void loop_tick(std::map<std::string, int64_t> session_states);
  bool loop_alive(std::chrono::steady_clock::duration within) const;

  std::string render(const WorkerGauges& gauges) const;

 private:
  mutable std::mutex mutex_;
  std::map<std::string, uint64_t> jobs_;  // status -> count
  double job_seconds_ = 0, spawn_seconds_ = 0;
  uint64_t spawns_ = 0, pack_hits_ = 0, pack_misses_ = 0;
  spdlog::level::level_enum job_log_level_ = spdlog::level::info;
  std::map<std::string, int64_t> sessions_;  // state -> count
  std::chrono::steady_clock::time_point last_tick_{};
};

// Sizes on disk for the gauges: files directly in `dir` (the spool), bytes under `dir`.
int64_t count_files(const std::string& dir);
int64_t directory_bytes(const std::string& dir);

}  // namespace kb
