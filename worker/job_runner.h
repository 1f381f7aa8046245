// Runs one job at a time for a worker session, without blocking its event loop: start(), then
// poll() from the loop until it returns the outcome.
//
//   ChildProcessJobRunner  a kb-executor child per job (worker/executor_child.h), sandboxed as the
//                      config says (worker/sandbox.h), with the reference pack and the job's
//                      candidate pack, each checked against its hash before it loads: crash, hang
//                      and runtime errors become the job's result; the child's timeout is the job's
//                      deadline less a margin, so the worker reports `timeout` before the
//                      coordinator's lease ends. A child that cannot be spawned, or whose device
//                      fails to initialise (stop_reason device_init_failed), is an infrastructure
//                      failure (JobOutcome::infra_failure), not a result.
//   SimJobRunner       the benchmark's `sim` device: the job "runs" for params.sleep_ms on a
//                      timer (no process, no thread) and yields a result labelled sim.
//
// JobSpec is a JOB (common/protocol_messages.h) and what the worker adds to it; started/finished
// times are the steady clock, reported in RESULT for the dispatch-gap benchmark.
//
// Thread safety: a runner belongs to its session's thread.
#pragma once

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "common/job_result.h"
#include "common/protocol_messages.h"
#include "common/status.h"
#include "worker/executor_child.h"

namespace kb {

using SteadyClock = std::chrono::steady_clock;

struct JobSpec : wire::JobMessage {
  std::string epoch;      // the coordinator's database epoch when the JOB came (not in JOB)
  std::string pack_path;  // the cached .so, filled by the session before start()
};

struct JobOutcome {
  JobResult result;
  SteadyClock::time_point started_at, finished_at;
  // Not empty: the job could not run here ("spawn: ...", "device: ..."); the coordinator
  // requeues it elsewhere instead of storing `result` (schemas/protocol.md, Failures).
  std::string infra_failure;
};

class JobRunner {
 public:
  virtual ~JobRunner() = default;
  // Precondition: !busy().
  virtual void start(const JobSpec& job, SteadyClock::time_point now) = 0;
  // The outcome once the job has finished (then the runner is idle again), else nullopt.
  virtual std::optional<JobOutcome> poll(SteadyClock::time_point now) = 0;
  // Ends the running job (kills its child); no outcome follows.
  virtual void abort() = 0;
  virtual bool busy() const = 0;
  // When poll() should next be called; nullopt when idle.
  virtual std::optional<SteadyClock::time_point> next_poll() const = 0;
};

struct ExecutorRunnerConfig {
  std::string executable;      // kb-executor
  std::string device = "cpu";  // "cuda" or "cpu"
  int gpu = 0;
  std::string problems_dir;  // "" = the executor's default
  // The trusted reference pack and its pin (checked by the worker at start, re-checked by every
  // executor before it loads the pack); "" = the executor's default and the pin beside it.
  std::string reference_pack, reference_sha256;
  SandboxConfig sandbox;  // around every job's executor (it loads the job's candidate pack)
};

class ChildProcessJobRunner : public JobRunner {
 public:
  explicit ChildProcessJobRunner(ExecutorRunnerConfig config) : config_(std::move(config)) {}
  void start(const JobSpec& job, SteadyClock::time_point now) override;
  std::optional<JobOutcome> poll(SteadyClock::time_point now) override;
  void abort() override;
  bool busy() const override { return process_ != nullptr; }
  std::optional<SteadyClock::time_point> next_poll() const override;

  // The launch start() would make (exposed for tests).
  ExecutorLaunch launch_for(const JobSpec& job) const;

 private:
  void note_sandbox(JobResult& result) const;

  ExecutorRunnerConfig config_;
  std::unique_ptr<ExecutorChild> process_;
  SteadyClock::time_point started_at_, last_poll_;
};

class SimJobRunner : public JobRunner {
 public:
  void start(const JobSpec& job, SteadyClock::time_point now) override;
  std::optional<JobOutcome> poll(SteadyClock::time_point now) override;
  void abort() override { job_.reset(); }
  bool busy() const override { return job_.has_value(); }
  std::optional<SteadyClock::time_point> next_poll() const override;

 private:
  std::optional<JobSpec> job_;
  SteadyClock::time_point started_at_, finishes_at_;
};

}  // namespace kb
