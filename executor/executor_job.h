// Private to the executor (executor.cpp: creation, correctness trials, figures, policy;
// executor_timing.cpp: the timing phase and its per-call checks): one job's state and steps.
//
// Thread safety: one thread.
#pragma once

#include <chrono>
#include <random>
#include <string>
#include <vector>

#include "executor/executor.h"

namespace kb::detail {

class Job {
 public:
  Job(ExecutionDevice& device, const JobRequest& request, const ProblemInstance& problem,
      JobResult& result);

  // Each step returns false when the job has its verdict and must stop.
  bool create_variants();
  bool check_correctness();
  bool time_variants();
  bool check_floor();
  bool check_traced_work();
  void derive_figures();

 private:
  // Wall time the timing phase spent per kind of step, in ms (JobResult::overhead_ms
  // "timing_*"): what the checks around the timed calls cost, and where a suite's seconds go.
  struct TimingCosts {
    double generate = 0, calls = 0, trace = 0, clocks = 0;  // checks: the rest of "timing"
  };
  // Runs f() and adds its wall time to `into`.
  template <class F>
  static auto costed(double& into, F&& f) {
    const auto start = std::chrono::steady_clock::now();
    auto value = f();
    into +=
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    return value;
  }

  // One timed pair of calls on fresh contents: milliseconds of each variant.
  struct PairTimes {
    double reference_ms = 0, custom_ms = 0;
  };

  bool fail(JobStatus status, const std::string& message);
  bool fail_error(const std::string& where, const Status& status);
  bool judge_errors(const ErrorStats& errors, const std::string& where);
  // `trial`: the correctness trial whose tensors are exported when the config asks.
  bool compare_trial_outputs(int trial);
  bool check_custom_call(const CallTrace& call, const std::string& where);
  bool check_trace(const LaunchTrace& trace, const std::string& where);

  bool prepare_timing();
  Status warm_up(Slot slot);
  bool timed_round(int round, bool traced, bool keep);
  bool timed_round_once(int round, bool traced, bool keep);
  bool timed_pair(int round, bool reference_first, PairTimes& times);
  bool timed_reference_pair(int round, bool reference_first, PairTimes& times);
  bool timed_custom_pair(int round, bool reference_first, PairTimes& times);
  bool next_round_traced();
  GeneratorKey next_timing_key();
  int round_set(int round) const;
  // New contents for input set `set` (a trial key never used before), off the clock.
  Status fresh_contents(int set);
  // The contents of fresh_contents' latest key, made in `set` (again for a B A pair's reference).
  Status make_contents(int set);
  // One timed call of the slot's variant on input set `set`; a void sample marks the round void;
  // late_work_ holds what the call reported.
  Result<double> timed_call(Slot slot, int set);
  // False (foreign_stream) when the latest timed call of `slot` reported late work.
  bool no_late_work(Slot slot, const std::string& where);

  ExecutionDevice& device_;
  const JobRequest& request_;
  const ProblemInstance& problem_;
  JobResult& result_;
  bool has_custom_ = false;
  int input_sets_ = 1;
  uint32_t next_timing_trial_ = 0;
  GeneratorKey contents_key_;             // fresh_contents' latest key
  bool trace_unavailable_ = false;        // the device cannot trace (the CPU device)
  std::vector<double> host_issue_ms_[2];  // per Slot: TimedCall::host_ms of each sample not void
  bool round_void_ = false;               // a timed call of this round returned a void sample
  bool late_work_ = false;                // the latest timed call's TimedCall::late_work
  double void_seconds_ = 0;               // wall time of the void rounds (outside the time cap)
  uint64_t timing_secret_;  // JobRequest::timing_secret or a fresh draw: the timed inputs' seed
  std::mt19937_64 trace_rng_;
  std::mt19937_64 hash_salts_;  // one salt per hash pair around a custom call (input_hash)
  std::vector<double> round_ratios_;
  std::vector<double> traced_custom_busy_ms_;  // CallTrace::busy_ms of the traced timed customs
  TimingCosts costs_;
};

}  // namespace kb::detail
