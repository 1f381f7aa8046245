// Runs kb-executor as a child process for one job, with a deadline, and turns whatever happens
// into a JobResult: the child's JSON when it finishes; `crashed` (with the signal or exit code)
// when it dies; `timeout` when it outlives the deadline (it is killed, with its process group).
//
// Thread safety: each call is independent; safe from several threads.
#pragma once

#include <string>
#include <vector>

#include "common/job_result.h"

namespace kb {

struct ExecutorLaunch {
  std::string executable;         // path of kb-executor
  std::vector<std::string> args;  // its arguments (without --output, which this adds)
  double timeout_s = 600;
  std::string problem_id, preset, device_kind;  // for the result when the child gives none
};

JobResult run_executor_process(const ExecutorLaunch& launch);

// The kb-executor beside the running program (same directory), else "kb-executor" on PATH.
std::string default_executor_path();

}  // namespace kb
