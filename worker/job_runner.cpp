#include "worker/job_runner.h"

#include "common/job_deadline.h"

#include <algorithm>

#include "worker/worker_metrics.h"
#include "worker/pack_cache.h"

namespace kb {
namespace {

// How often a running child is checked: a job takes seconds, so 10 ms is invisible in its wall
// time and costs nothing.
constexpr auto kChildPollInterval = std::chrono::milliseconds(10);

}  // namespace

ExecutorLaunch ChildProcessJobRunner::launch_for(const JobSpec& job) const {
  ExecutorLaunch launch;
  launch.executable = config_.executable;
  launch.args = {"--problem", job.problem, "--preset", job.preset, "--seed", std::to_string(job.seed),
                 "--device", config_.device};
  // The cached pack is named by its hash: the executor re-hashes the bytes it loads.
  if (PackCache::is_valid_hash(job.pack)) launch.args.insert(launch.args.end(), {"--pack-sha256", job.pack});
  launch.fd_args.emplace_back("--pack", job.pack_path);
  if (!config_.reference_pack.empty()) launch.fd_args.emplace_back("--reference-pack", config_.reference_pack);
  if (!config_.reference_sha256.empty()) {
    launch.args.insert(launch.args.end(), {"--reference-sha256", config_.reference_sha256});
  }
  launch.sandbox = config_.sandbox;
  if (config_.device == "cuda") {
    launch.args.insert(launch.args.end(), {"--gpu", std::to_string(config_.gpu)});
  }
  if (job.time_cap_s > 0) {
    launch.args.insert(launch.args.end(), {"--time-cap", std::to_string(job.time_cap_s)});
  }
  if (job.trials > 0)
    launch.args.insert(launch.args.end(), {"--trials", std::to_string(job.trials)});
  if (!config_.problems_dir.empty()) {
    launch.args.insert(launch.args.end(), {"--problems-dir", config_.problems_dir});
  }
  launch.timeout_s = child_timeout_s(job.deadline_ms);  // common/job_deadline.h
  launch.problem_id = job.problem;
  launch.preset = job.preset;
  launch.device_kind = config_.device;
  return launch;
}

// A failure under the sandbox says so, since a kernel that reaches for the network or writes
// outside /tmp fails there and nowhere else.
void ChildProcessJobRunner::note_sandbox(JobResult& result) const {
  if (config_.sandbox.mode == SandboxMode::kOff) return;
  if (!result.environment.is_object()) result.environment = nlohmann::json::object();
  result.environment["sandbox"] = describe_sandbox(config_.sandbox);
  if (result.status == JobStatus::kRuntimeError || result.status == JobStatus::kCrashed) {
    result.message += " [sandbox: no network; only /tmp is writable; the worker's files are hidden]";
  }
}

void ChildProcessJobRunner::start(const JobSpec& job, SteadyClock::time_point now) {
  started_at_ = now;
  last_poll_ = now;
  const SteadyClock::time_point spawn_start = SteadyClock::now();
  process_ = std::make_unique<ExecutorChild>(launch_for(job));
  WorkerMetrics::global().executor_spawned(
      std::chrono::duration<double>(SteadyClock::now() - spawn_start).count());
}

std::optional<JobOutcome> ChildProcessJobRunner::poll(SteadyClock::time_point now) {
  if (!process_) return std::nullopt;
  last_poll_ = now;
  std::optional<JobResult> result = process_->poll();
  if (!result) return std::nullopt;
  std::string infra;
  if (process_->spawn_failed()) {
    infra = "spawn: " + result->message;
  } else if (result->status == JobStatus::kRuntimeError && result->stop_reason == "device_init_failed") {
    infra = "device: " + result->message;
  }
  process_.reset();
  note_sandbox(*result);
  return JobOutcome{std::move(*result), started_at_, SteadyClock::now(), std::move(infra)};
}

void ChildProcessJobRunner::abort() {
  if (process_) process_->kill();
  process_.reset();
}

std::optional<SteadyClock::time_point> ChildProcessJobRunner::next_poll() const {
  if (!process_) return std::nullopt;
  return last_poll_ + kChildPollInterval;
}

void SimJobRunner::start(const JobSpec& job, SteadyClock::time_point now) {
  job_ = job;
  started_at_ = now;
  int64_t sleep_ms = 0;
  if (auto it = job.params.find("sleep_ms"); it != job.params.end() && it->is_number()) {
    sleep_ms = std::max<int64_t>(0, it->get<int64_t>());
  }
  finishes_at_ = now + std::chrono::milliseconds(sleep_ms);
}

std::optional<JobOutcome> SimJobRunner::poll(SteadyClock::time_point now) {
  if (!job_ || now < finishes_at_) return std::nullopt;
  const double slept_ms =
      std::chrono::duration<double, std::milli>(finishes_at_ - started_at_).count();
  JobResult r;
  r.problem_id = job_->problem.empty() ? "sim" : job_->problem;
  r.preset = job_->preset;
  r.device_kind = "sim";
  r.status = JobStatus::kOk;
  r.message =
      "sim device: slept " + std::to_string(static_cast<int64_t>(slept_ms)) + " ms; no kernel ran";
  // Synthetic samples, so that the result has the shape of a real one; labelled sim throughout.
  r.reference.samples_ms = {slept_ms, slept_ms};
  r.custom.samples_ms = {slept_ms, slept_ms};
  r.reference.summary = summarize(r.reference.samples_ms);
  r.custom.summary = summarize(r.custom.samples_ms);
  r.rounds = 2;
  r.stop_reason = "sim";
  r.environment = {{"device", "sim"}};
  job_.reset();
  return JobOutcome{std::move(r), started_at_, now, ""};
}

std::optional<SteadyClock::time_point> SimJobRunner::next_poll() const {
  if (!job_) return std::nullopt;
  return finishes_at_;
}

}  // namespace kb
