#include "worker/worker_metrics.h"

#include <cstdio>
#include <filesystem>

#include "common/log.h"

namespace kb {
namespace {

namespace fs = std::filesystem;

void line(std::string& out, const std::string& name, const std::string& labels, double value) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", value);
  out += name + labels + " " + buf + "\n";
}

void header(std::string& out, const std::string& name, const char* type, const char* help) {
  out += "# HELP " + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
}

// Label values are quoted; a backslash, quote or newline in one (a GPU UUID never has them, but
// a status name comes from code we do not own here) is escaped as the text format asks.
std::string label(const std::string& key, const std::string& value) {
  std::string escaped;
  for (char c : value) {
    if (c == '\n') {
      escaped += "\\n";
      continue;
    }
    if (c == '\\' || c == '"') escaped += '\\';
    escaped += c;
  }
  return key + "=\"" + escaped + "\"";
}

}  // namespace

WorkerMetrics& WorkerMetrics::global() {
  static WorkerMetrics metrics;
  return metrics;
}

void WorkerMetrics::job_started(const std::string& worker, int64_t job_id, int64_t attempt,
                                const std::string& problem) {
  KB_LOG_JOB(job_log_level_, job_id, attempt, "{} started on {}", problem, worker);
}

void WorkerMetrics::job_finished(const std::string& worker, int64_t job_id, int64_t attempt,
                                 const std::string& status, double seconds) {
  KB_LOG_JOB(job_log_level_, job_id, attempt, "finished on {}: {} in {:.3f} s", worker, status,
             seconds);
  std::lock_guard lock(mutex_);
  ++jobs_[status];
  job_seconds_ += seconds;
}

void WorkerMetrics::executor_spawned(double seconds) {
  std::lock_guard lock(mutex_);
  ++spawns_;
  spawn_seconds_ += seconds;
}

void WorkerMetrics::set_job_log_level(spdlog::level::level_enum level) {
  std::lock_guard lock(mutex_);
  job_log_level_ = level;
}

void WorkerMetrics::loop_tick(std::map<std::string, int64_t> session_states) {
  std::lock_guard lock(mutex_);
  sessions_ = std::move(session_states);
  last_tick_ = std::chrono::steady_clock::now();
}

bool WorkerMetrics::loop_alive(std::chrono::steady_clock::duration within) const {
  std::lock_guard lock(mutex_);
  return std::chrono::steady_clock::now() - last_tick_ <= within;
}

void WorkerMetrics::pack_lookup(bool hit) {
  std::lock_guard lock(mutex_);
  ++(hit ? pack_hits_ : pack_misses_);
}

std::string WorkerMetrics::render(const WorkerGauges& g) const {
  std::lock_guard lock(mutex_);
  std::string out;
  header(out, "kb_worker_up", "gauge", "1 while the worker's event loop runs.");
  line(out, "kb_worker_up", "", 1);
  header(out, "kb_worker_jobs_total", "counter", "Jobs run to a result, by status.");
  if (jobs_.count("ok") == 0) line(out, "kb_worker_jobs_total", "{" + label("status", "ok") + "}", 0);
  for (const auto& [status, n] : jobs_) {
    line(out, "kb_worker_jobs_total", "{" + label("status", status) + "}", static_cast<double>(n));
  }
  uint64_t jobs = 0;
  for (const auto& [status, n] : jobs_) jobs += n;
  header(out, "kb_worker_job_seconds", "summary", "Wall time of jobs, start to result.");
  line(out, "kb_worker_job_seconds_sum", "", job_seconds_);
  line(out, "kb_worker_job_seconds_count", "", static_cast<double>(jobs));
  header(out, "kb_worker_executor_spawn_seconds", "summary", "Time to start a kb-executor child.");
  line(out, "kb_worker_executor_spawn_seconds_sum", "", spawn_seconds_);
  line(out, "kb_worker_executor_spawn_seconds_count", "", static_cast<double>(spawns_));
  header(out, "kb_worker_pack_cache_hits_total", "counter", "Jobs whose kernel pack was cached.");
  line(out, "kb_worker_pack_cache_hits_total", "", static_cast<double>(pack_hits_));
  header(out, "kb_worker_pack_cache_misses_total", "counter",
         "Jobs whose kernel pack had to be fetched from the coordinator.");
  line(out, "kb_worker_pack_cache_misses_total", "", static_cast<double>(pack_misses_));
  header(out, "kb_worker_pack_cache_bytes", "gauge", "Bytes of kernel packs cached on disk.");
  line(out, "kb_worker_pack_cache_bytes", "", static_cast<double>(g.pack_cache_bytes));
  header(out, "kb_worker_spool_depth", "gauge", "Results on disk not yet acknowledged.");
  line(out, "kb_worker_spool_depth", "", static_cast<double>(g.spool_depth));
  header(out, "kb_worker_sessions", "gauge", "Worker sessions by protocol state.");
  for (const auto& [state, n] : sessions_) {
    line(out, "kb_worker_sessions", "{" + label("state", state) + "}", static_cast<double>(n));
  }
  if (g.gpu) {
    const std::string gpu = "{" + label("uuid", g.gpu->uuid) + "}";
    header(out, "kb_worker_gpu_temperature_celsius", "gauge", "GPU temperature (NVML).");
    line(out, "kb_worker_gpu_temperature_celsius", gpu, g.gpu->temperature_c);
    header(out, "kb_worker_gpu_sm_clock_mhz", "gauge", "Current SM clock (NVML).");
    line(out, "kb_worker_gpu_sm_clock_mhz", gpu, g.gpu->sm_mhz);
    header(out, "kb_worker_gpu_max_sm_clock_mhz", "gauge", "Maximum SM clock (NVML).");
    line(out, "kb_worker_gpu_max_sm_clock_mhz", gpu, g.gpu->max_sm_mhz);
  }
  return out;
}

int64_t count_files(const std::string& dir) {
  std::error_code ec;
  int64_t n = 0;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().extension() == ".json") ++n;
  }
  return n;
}

int64_t directory_bytes(const std::string& dir) {
  std::error_code ec;
  int64_t bytes = 0;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code size_ec;
    if (it->is_regular_file(size_ec)) {
      const auto size = it->file_size(size_ec);
      if (!size_ec) bytes += static_cast<int64_t>(size);
    }
  }
  return bytes;
}

}  // namespace kb
