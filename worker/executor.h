// The executor: runs one job — one problem, one preset (or dims), one seed — on an
// ExecutionDevice and returns its JobResult. The policy of DESIGN.md lives here:
//
//  1. Correctness trials (default 5), each with fresh inputs (trial t of the run's seed): run the
//     reference; fill the custom output with NaN; hash the inputs; run the custom variant (the
//     first trial traced); check the inputs are unchanged; compare outputs.
//  2. The trace of the custom call: at least one kernel of our own (no_custom_kernel otherwise),
//     nothing on another stream (foreign_stream).
//  3. Timing: warm-up (>= 3 calls and >= 200 ms per variant), then rounds A B B A (A reference,
//     B custom), each sample timed alone with a cold L2, input sets rotated; stop when the
//     speedup's 95% CI is within ±1% after >= 10 rounds, or at the time cap.
//  4. The outputs of the last timed calls are compared again (state-dependent tricks fail).
//  5. Derived figures: TFLOP/s, GB/s, the ratio to the roofline floor.
//
// A problem without a custom variant still gets its reference timed (status not_implemented).
// With `aa` the reference is timed against a second instance of itself (an A/A check).
//
// Thread safety: one job at a time per device.
#pragma once

#include <memory>
#include <string>

#include "common/job_result.h"
#include "common/problem_spec.h"
#include "common/statistics.h"
#include "worker/execution_device.h"

namespace kb {

struct ExecutorConfig {
  int correctness_trials = 5;
  StoppingRule stopping;
  int warmup_calls = 3;
  double warmup_ms = 200;
  int max_input_sets = 4;
  bool aa = false;
  std::string export_dir;  // non-empty: write every correctness trial's tensors here (.npy)
  // Skip the CUPTI launch trace (own-kernel and side-stream checks), so that a profiler such as
  // Nsight Compute, which needs CUPTI for itself, can run the job. Recorded in the result's
  // environment ("launch_trace": "disabled"); never the default.
  bool no_launch_trace = false;
};

struct JobRequest {
  std::shared_ptr<const ProblemSpec> spec;
  std::string spec_yaml;  // the spec document, handed to the pack
  std::string preset;     // "" when dims are given explicitly
  Dims dims;
  uint64_t seed = 0;
  ExecutorConfig config;
};

JobResult execute_job(ExecutionDevice& device, const JobRequest& request);

}  // namespace kb
