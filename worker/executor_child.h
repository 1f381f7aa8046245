// Runs kb-executor as a child process for one job, with a deadline, and turns whatever happens
// into a JobResult: the child's JSON when it finishes; `crashed` (with the signal or exit code)
// when it dies; `timeout` when it outlives the deadline (it is killed, with its process group).
//
// The child runs in its own process group (a kill reaches its children) and gets SIGKILL when
// the thread that started it dies (PR_SET_PDEATHSIG): a kill -9 of the worker ends its job too.
//
// The result comes back through a file made with mkstemp and unlinked at once (no name anyone can
// guess or race for), passed to the child as an inherited descriptor (`--output-fd N`). Files
// named in `fd_args` go in the same way, opened read-only by this process (`--pack
// /proc/self/fd/N`), so a sandboxed child reads the packs without seeing the worker's state dir.
// With a sandbox (worker/sandbox.h) the child is `bwrap ... kb-executor ...`, with its rlimits and
// uid set between fork and exec.
//
// Two forms: ExecutorChild is non-blocking (start, then poll() from an event loop until it
// returns the result); run_executor_child() blocks until the result.
//
// Thread safety: each ExecutorChild belongs to one thread, the one that started it (the death
// signal is tied to that thread); the free functions are independent calls, safe from several
// threads.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/job_result.h"
#include "common/status.h"
#include "worker/sandbox.h"

namespace kb {

struct ExecutorLaunch {
  std::string executable;         // path of kb-executor
  std::vector<std::string> args;  // its arguments (without --output-fd, which this adds)
  // {flag, path}: path opened read-only here and passed as `flag /proc/self/fd/N` under a
  // sandbox, as `flag path` without one.
  std::vector<std::pair<std::string, std::string>> fd_args;
  SandboxConfig sandbox;
  double timeout_s = 600;
  std::string problem_id, preset, device_kind;  // for the result when the child gives none
};

class ExecutorChild {
 public:
  // Spawns the child now. A spawn failure is not an error here: poll() returns it as a
  // runtime_error result ("cannot start ...").
  explicit ExecutorChild(ExecutorLaunch launch);
  ~ExecutorChild();  // kills the child's group when it is still running
  ExecutorChild(const ExecutorChild&) = delete;
  ExecutorChild& operator=(const ExecutorChild&) = delete;

  // nullopt while the child runs; then its result, once. Past the deadline the child's group is
  // killed and the result is `timeout`.
  std::optional<JobResult> poll();
  // Kills the child's group and reaps it; poll() returns nothing afterwards.
  void kill();
  bool finished() const { return done_; }
  // The child could not be started (poll() then returns a runtime_error): an infrastructure
  // failure of this host, not the kernel's behaviour.
  bool spawn_failed() const { return pid_ <= 0; }

 private:
  JobResult finish(int wait_status);

  ExecutorLaunch launch_;
  int output_fd_ = -1;  // the unlinked result file
  pid_t pid_ = -1;
  std::string spawn_error_;
  std::chrono::steady_clock::time_point deadline_;
  bool done_ = false;
};

JobResult run_executor_child(const ExecutorLaunch& launch);

// Runs `executable args... --output-fd N` within launch.timeout_s and returns what it wrote (for
// `kb-executor --describe`); an error when it cannot start, dies, exits non-zero, times out or
// writes nothing.
Result<std::string> run_for_output(const ExecutorLaunch& launch);

}  // namespace kb
