#include "worker/executor.h"

#include <chrono>
#include <cmath>

#include "worker/robustness_trials.h"
#include "worker/trial_export.h"
#include "worker/verification.h"

namespace kb {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Timing inputs are drawn from trials far above the correctness trials' numbers.
constexpr uint32_t kTimingTrialBase = 1000;

class Job {
 public:
  Job(ExecutionDevice& device, const JobRequest& request, const ProblemInstance& problem,
      JobResult& result)
      : device_(device), request_(request), problem_(problem), result_(result) {}

  // Each step returns false when the job has its verdict and must stop.
  bool create_variants();
  bool check_correctness();
  void time_variants();
  void check_after_timing();
  void derive_figures();

 private:
  bool fail(JobStatus status, const std::string& message);
  // `trial` >= 0: a correctness trial (exported when the config asks); -1: the post-timing check.
  bool compare_current_outputs(int trial);
  bool check_trace(const LaunchTrace& trace);
  Status warm_up(Slot slot);
  Status timed_round(int round);

  ExecutionDevice& device_;
  const JobRequest& request_;
  const ProblemInstance& problem_;
  JobResult& result_;
  bool has_custom_ = false;
  int input_sets_ = 1;
  int last_custom_set_ = -1;
  std::vector<double> round_ratios_;
};

bool Job::fail(JobStatus status, const std::string& message) {
  result_.status = status;
  result_.message = message;
  return false;
}

bool Job::create_variants() {
  CreateOutcome ref = device_.create(Slot::kReference, device_.pack_variant(Slot::kReference), problem_,
                                     request_.spec_yaml);
  if (ref.code == KB_PACK_UNSUPPORTED) return fail(JobStatus::kUnsupported, "reference: " + ref.message);
  if (ref.code != KB_PACK_OK) return fail(JobStatus::kRuntimeError, "reference: " + ref.message);
  if (request_.config.aa) {
    has_custom_ = true;  // B samples run the reference instance itself (see timed_round)
    return true;
  }
  CreateOutcome custom = device_.create(Slot::kCustom, device_.pack_variant(Slot::kCustom), problem_,
                                        request_.spec_yaml);
  if (custom.code == KB_PACK_NOT_IMPLEMENTED) {
    result_.status = JobStatus::kNotImplemented;
    result_.message = custom.message;
    return true;  // the reference is still timed
  }
  if (custom.code == KB_PACK_UNSUPPORTED) return fail(JobStatus::kUnsupported, "custom: " + custom.message);
  if (custom.code != KB_PACK_OK) return fail(JobStatus::kRuntimeError, "custom: " + custom.message);
  has_custom_ = true;
  return true;
}

bool Job::compare_current_outputs(int trial) {
  if (trial >= 0 && !request_.config.export_dir.empty()) {
    Result<std::vector<float>> ref = device_.read_output(Slot::kReference);
    Result<std::vector<float>> custom = device_.read_output(Slot::kCustom);
    if (!ref.is_ok()) return fail(JobStatus::kRuntimeError, ref.status().message());
    if (!custom.is_ok()) return fail(JobStatus::kRuntimeError, custom.status().message());
    Status s = export_trial(request_.config.export_dir, problem_,
                            GeneratorKey{request_.seed, static_cast<uint32_t>(trial)}, ref.value(), custom.value());
    if (!s.is_ok()) return fail(JobStatus::kRuntimeError, "export: " + s.message());
  }
  Result<ErrorStats> e = device_.compare_slots(request_.spec->tolerance);
  if (!e.is_ok()) return fail(JobStatus::kRuntimeError, e.status().message());
  merge_errors(result_.errors, e.value());
  JobStatus verdict = verdict_of(result_.errors);
  if (verdict != JobStatus::kOk) {
    return fail(verdict, std::to_string(result_.errors.mismatches) + " of " + std::to_string(element_count(problem_.output_shape())) +
                             " outputs outside tolerance; first at index " +
                             std::to_string(result_.errors.first_mismatch_index));
  }
  return true;
}

bool Job::check_trace(const LaunchTrace& trace) {
  result_.custom_kernels = trace.kernel_names;
  if (!trace.available || request_.config.aa) return true;
  if (trace.own_kernels == 0) {
    return fail(JobStatus::kNoCustomKernel, "the custom call launched " + std::to_string(trace.library_kernels) +
                                                " library kernels and none of its own");
  }
  if (trace.foreign_stream_activities > 0) {
    return fail(JobStatus::kForeignStream, std::to_string(trace.foreign_stream_activities) +
                                               " kernels or copies ran on a stream other than the job's");
  }
  return true;
}

bool Job::check_correctness() {
  if (!has_custom_ || request_.config.aa) return true;
  for (int t = 0; t < request_.config.correctness_trials; ++t) {
    Status s = device_.generate(0, problem_, GeneratorKey{request_.seed, static_cast<uint32_t>(t)});
    if (s.is_ok()) s = device_.run(Slot::kReference, 0);
    if (s.is_ok()) s = device_.poison_output(Slot::kCustom);
    if (!s.is_ok()) return fail(JobStatus::kRuntimeError, s.message());
    Result<uint64_t> before = device_.input_hash(0);
    if (!before.is_ok()) return fail(JobStatus::kRuntimeError, before.status().message());
    const bool traced = t == 0 && !request_.config.no_launch_trace;
    if (traced && !(s = device_.begin_trace()).is_ok()) return fail(JobStatus::kRuntimeError, s.message());
    s = device_.run(Slot::kCustom, 0);
    if (!s.is_ok()) return fail(JobStatus::kRuntimeError, "custom: " + s.message());
    if (traced) {
      Result<LaunchTrace> trace = device_.end_trace();
      if (!trace.is_ok()) return fail(JobStatus::kRuntimeError, trace.status().message());
      if (!check_trace(trace.value())) return false;
    } else if (!(s = device_.synchronize()).is_ok()) {
      return fail(JobStatus::kRuntimeError, "custom: " + s.message());
    }
    Result<uint64_t> after = device_.input_hash(0);
    if (!after.is_ok()) return fail(JobStatus::kRuntimeError, after.status().message());
    if (after.value() != before.value()) {
      return fail(JobStatus::kInputMutated, "the custom call changed its inputs or parameters");
    }
    if (!compare_current_outputs(t)) return false;
    ++result_.correctness_trials;
  }
  return true;
}

Status Job::warm_up(Slot slot) {
  Clock::time_point start = Clock::now();
  for (int calls = 0; calls < request_.config.warmup_calls || seconds_since(start) * 1e3 < request_.config.warmup_ms;
       ++calls) {
    if (Status s = device_.run(slot, calls % input_sets_); !s.is_ok()) return s;
    if (Status s = device_.synchronize(); !s.is_ok()) return s;
  }
  return Status::ok();
}

// A B B A on one input set, the next set each round: both variants of a round see the same data
// at the same addresses, so a round's ratio compares like with like (the L2 is flushed before
// every sample, so reusing the set within a round warms nothing). In A/A mode B is the reference
// instance itself, so that the comparison measures nothing but the timing method.
Status Job::timed_round(int round) {
  const Slot order[4] = {Slot::kReference, Slot::kCustom, Slot::kCustom, Slot::kReference};
  double ref_ms = 0, custom_ms = 0;
  for (int i = 0; i < (has_custom_ ? 4 : 2); ++i) {
    const Slot slot = has_custom_ ? order[i] : Slot::kReference;
    const int set = round % input_sets_;
    const Slot runs = request_.config.aa ? Slot::kReference : slot;
    Result<double> ms = device_.run_timed(runs, set);
    if (!ms.is_ok()) return ms.status();
    (slot == Slot::kReference ? result_.reference : result_.custom).samples_ms.push_back(ms.value());
    (slot == Slot::kReference ? ref_ms : custom_ms) += ms.value();
    if (slot == Slot::kCustom && !request_.config.aa) last_custom_set_ = set;
  }
  round_ratios_.push_back(has_custom_ ? ref_ms / custom_ms : 1.0);
  return Status::ok();
}

void Job::time_variants() {
  double set_bytes = 0;
  for (const Shape& s : problem_.input_shapes()) set_bytes += 4.0 * static_cast<double>(element_count(s));
  for (const Shape& s : problem_.param_shapes()) set_bytes += 4.0 * static_cast<double>(element_count(s));
  input_sets_ = std::max(1, std::min(request_.config.max_input_sets, device_.max_input_sets(set_bytes)));
  for (int k = 0; k < input_sets_; ++k) {
    Status s = device_.generate(k, problem_, GeneratorKey{request_.seed, kTimingTrialBase + static_cast<uint32_t>(k)});
    if (!s.is_ok()) return (void)fail(JobStatus::kRuntimeError, s.message());
  }
  for (Slot slot : {Slot::kReference, Slot::kCustom}) {
    if (slot == Slot::kCustom && (!has_custom_ || request_.config.aa)) continue;
    if (Status s = warm_up(slot); !s.is_ok()) return (void)fail(JobStatus::kRuntimeError, s.message());
  }
  Clock::time_point start = Clock::now();
  StopReason stop = StopReason::kContinue;
  for (int round = 0; stop == StopReason::kContinue; ++round) {
    if (Status s = timed_round(round); !s.is_ok()) return (void)fail(JobStatus::kRuntimeError, s.message());
    device_.sample_clocks();
    result_.rounds = round + 1;
    if (has_custom_) {
      result_.speedup = estimate_speedup(result_.reference.samples_ms, result_.custom.samples_ms, round_ratios_);
      stop = should_stop(request_.config.stopping, result_.rounds, seconds_since(start),
                         result_.speedup.relative_half_width);
    } else {
      // Reference alone: stop when its median is known to ±1% (t interval on the mean).
      SampleSummary s = summarize(result_.reference.samples_ms);
      double half = s.count > 1 ? t_quantile_975(s.count - 1) * s.stddev / std::sqrt(s.count) / s.mean : INFINITY;
      stop = should_stop(request_.config.stopping, result_.rounds, seconds_since(start), half);
    }
  }
  result_.stop_reason = to_string(stop);
  result_.reference.summary = summarize(result_.reference.samples_ms);
  result_.custom.summary = summarize(result_.custom.samples_ms);
}

void Job::check_after_timing() {
  if (!has_custom_ || last_custom_set_ < 0) return;
  // The custom slot still holds the output of its last timed call, on last_custom_set_.
  Status s = device_.run(Slot::kReference, last_custom_set_);
  if (s.is_ok()) s = device_.synchronize();
  if (!s.is_ok()) return (void)fail(JobStatus::kRuntimeError, s.message());
  if (compare_current_outputs(-1)) return;
  result_.message = "after timing: " + result_.message;
}

void Job::derive_figures() {
  result_.flops = problem_.cost().flops;
  result_.min_bytes = problem_.cost().min_bytes;
  result_.floor_ms = 1e3 * std::max(result_.flops / device_.peak_flops(), result_.min_bytes / device_.peak_bytes_per_s());
  if (result_.reference.summary.median > 0) {
    result_.reference_over_floor = result_.reference.summary.median / result_.floor_ms;
  }
  const double custom_ms = result_.custom.summary.median;
  if (custom_ms > 0) {
    result_.custom_tflops = result_.flops / (custom_ms * 1e-3) / 1e12;
    result_.custom_gbps = result_.min_bytes / (custom_ms * 1e-3) / 1e9;
    result_.custom_over_floor = custom_ms / result_.floor_ms;
  }
}

}  // namespace

JobResult execute_job(ExecutionDevice& device, const JobRequest& request) {
  JobResult result;
  result.problem_id = request.spec->id;
  result.preset = request.preset;
  result.device_kind = device.kind();
  result.environment = device.environment();
  Result<ProblemInstance> problem = request.preset.empty()
                                        ? ProblemInstance::create(request.spec, request.dims)
                                        : ProblemInstance::create(request.spec, request.preset);
  if (!problem.is_ok()) {
    result.status = JobStatus::kUnsupported;
    result.message = problem.status().message();
    return result;
  }
  result.dims = problem->dims();
  Job job(device, request, problem.value(), result);
  if (!job.create_variants() || !job.check_correctness()) return result;
  job.time_variants();
  if (result.status == JobStatus::kOk) job.check_after_timing();
  run_robustness_trials(device, request, result);  // worker/robustness_trials.h
  job.derive_figures();
  result.environment["clocks"] = device.clock_report();
  if (request.config.no_launch_trace) result.environment["launch_trace"] = "disabled";
  return result;
}

}  // namespace kb
