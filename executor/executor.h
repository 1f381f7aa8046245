// The executor: runs one job — one problem, one preset (or dims), one seed — on an
// ExecutionDevice and returns its JobResult. The policy of docs/design.md#executor and
// docs/verification.md lives here:
//
//  1. Correctness trials (default 5), each with fresh inputs (trial t of the run's seed): run the
//     reference; fill the custom output with NaN; hash the inputs; run the custom variant under
//     the launch trace; check the inputs are unchanged; check the trace; compare outputs.
//  2. The trace of every traced custom call: work only on the job stream and nothing launched by
//     another host thread (foreign_stream), a kernel of our own (no_custom_kernel), own kernels
//     carrying >= the spec's share of the call's GPU time (library_dominated).
//  3. Timing: warm-up (>= 3 calls and >= 50 ms per variant), then rounds of two pairs, A B on
//     fresh contents c1 and B A on fresh contents c2 (A reference, B custom; every pair's inputs
//     and parameters regenerated on the device with a trial key never used before, off the
//     clock), each sample timed alone with a cold L2. Every timed custom call is checked as the
//     trials check it: poisoned output, input hash, reference-output hash, output compared with
//     the reference's on the same contents (a private copy when the reference ran first, its
//     slot poisoned), and its launches traced (every round, or a random fraction of rounds whose
//     samples are discarded). The first failure ends the job, naming its round. Stop when the
//     speedup's 95% CI is within ±1% after >= 10 rounds, or at the time cap.
//  4. Derived figures: TFLOP/s, GB/s, the fp32 roofline ratio, the hard physical floor — a
//     custom median below it is `implausible`, as is one below kMinShareOfTracedWork of the GPU
//     time its work kept the GPU busy in the traced timed calls (a custom that works less when
//     untraced).
//  5. The result is labelled unverified when the config is weaker than the fleet's policy
//     (< 3 correctness trials, or the launch trace off).
//
// A problem without a custom variant still gets its reference timed (status not_implemented).
// With `aa` the reference is timed against a second instance of itself (an A/A check).
//
// Thread safety: one job at a time per device.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "common/job_result.h"
#include "common/problem_spec.h"
#include "common/statistics.h"
#include "executor/execution_device.h"

namespace kb {

// The least share of the GPU time its work kept busy in traced timed calls (CallTrace::busy_ms,
// median) that a custom's timed median may be; below it the job is `implausible`. An honest call's
// events on one stream span at least its activities; a half leaves room for clock and data
// variation, and bounds what a custom that behaves only when traced can gain to 2x.
inline constexpr double kMinShareOfTracedWork = 0.5;

struct ExecutorConfig {
  int correctness_trials = 5;
  StoppingRule stopping;
  // Warm-up before the timed rounds, per variant: at least this many calls and milliseconds. The
  // correctness trials have just run both variants at full size (modules loaded, clocks up), so
  // the warm-up only settles caches and clocks; 200 ms cost a 22-problem suite ~9 s.
  int warmup_calls = 3;
  double warmup_ms = 50;
  int max_input_sets = 4;
  bool aa = false;
  std::string export_dir;  // non-empty: write every correctness trial's tensors here (.npy)
  // Skip the CUPTI launch trace (own-kernel and side-stream checks), so that a profiler such as
  // Nsight Compute, which needs CUPTI for itself, can run the job. Recorded in the result's
  // environment ("launch_trace": "disabled"); never the default.
  bool no_launch_trace = false;
  // The share of timing rounds run under the launch trace. 1: every round, its samples kept. In
  // [0.25, 1): a random choice of rounds (JobRequest::timing_secret), whose samples are discarded,
  // so that tracing costs the kept samples nothing. The default is the least, 0.25: CUPTI's API
  // callbacks slow the references with many launches (cuDNN plus eager ops) far more than the
  // customs (H200, 2026-12-01: L1_081's reference 1.308 ms traced vs 1.260 ms untraced, its custom
  // 0.3637 vs 0.3625), so traced samples overstate speedups; every call is still checked.
  double trace_fraction = kMinTraceFraction;
};

struct JobRequest {
  std::shared_ptr<const ProblemSpec> spec;
  std::string spec_yaml;  // the spec document, handed to the pack
  std::string preset;     // "" when dims are given explicitly
  Dims dims;
  uint64_t seed = 0;  // the correctness and robustness trials' inputs (reproducible per run)
  ExecutorConfig config;
  // The timing phase's inputs and its traced rounds draw from this, not from `seed`: the run seed
  // is on the executor's command line, where a pack could read it and compute the timed calls'
  // answers in advance, off the clock (docs/verification.md). Absent: drawn from the kernel's
  // random source for this job; tests fix it.
  std::optional<uint64_t> timing_secret;
};

JobResult execute_job(ExecutionDevice& device, const JobRequest& request);

}  // namespace kb
