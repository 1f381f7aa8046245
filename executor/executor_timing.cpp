// The timing phase (executor.h, step 3): rounds of two timed pairs on fresh contents, every timed
// custom call checked as strictly as a correctness trial, launches traced per round.
#include <algorithm>
#include <chrono>
#include <cmath>

#include "executor/executor_job.h"
#include "executor/verification.h"

namespace kb::detail {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Timing contents are drawn from trial numbers above every correctness trial's, one per timed
// pair and never reused in the job.
constexpr uint32_t kTimingTrialBase = 1000;

// Ends an open trace on every way out of a traced round, a verdict mid-round included.
class TraceGuard {
 public:
  TraceGuard(ExecutionDevice& device, bool active) : device_(device), active_(active) {}
  TraceGuard(const TraceGuard&) = delete;
  TraceGuard& operator=(const TraceGuard&) = delete;
  ~TraceGuard() {
    if (active_) (void)device_.end_trace();
  }
  Result<LaunchTrace> end() {
    active_ = false;
    return device_.end_trace();
  }

 private:
  ExecutionDevice& device_;
  bool active_;
};

}  // namespace

// Both pairs of a round run in the same input set (regenerated in place between them), and the
// sets rotate by round. A set's placement changes call times by ~0.1% (addresses, pages), and
// rotating by pair put every A B pair in the even sets and every B A pair in the odd ones: the
// round ratio then carried that placement difference, and A/A intervals of +-0.05% missed 1.0 by
// up to 0.14% (2026-12-01, 5 of 22). In one set, the round's two orders cancel it.
int Job::round_set(int round) const {
  return round % input_sets_;
}

Status Job::fresh_contents(int set) {
  contents_key_ = next_timing_key();
  return make_contents(set);
}

Status Job::make_contents(int set) {
  return costed(costs_.generate, [&] { return device_.generate(set, problem_, contents_key_); });
}

Result<double> Job::timed_call(Slot slot, int set) {
  Result<TimedCall> call = costed(costs_.calls, [&] { return device_.run_timed(slot, set); });
  if (!call.is_ok()) return call.status();
  round_void_ = round_void_ || call.value().void_sample;
  late_work_ = call.value().late_work;
  if (!call.value().void_sample)
    host_issue_ms_[static_cast<int>(slot)].push_back(call.value().host_ms);
  return call.value().ms;
}

// Work on the job stream behind a timed call's stop event is not the executor's: a host thread the
// custom left behind queued it (behind the custom's own call, to finish its output untimed; behind
// the reference's, to slow the calls that follow).
bool Job::no_late_work(Slot slot, const std::string& where) {
  if (!late_work_) return true;
  const char* after = slot == Slot::kCustom ? "custom" : "reference";
  return fail(JobStatus::kForeignStream,
              where + "work reached the job stream after the " + after +
                  " call returned, outside its timing events (launched from a host thread the "
                  "custom left behind?)");
}

GeneratorKey Job::next_timing_key() {
  return GeneratorKey{timing_secret_, next_timing_trial_++};
}

Status Job::warm_up(Slot slot) {
  Clock::time_point start = Clock::now();
  for (int calls = 0; calls < request_.config.warmup_calls ||
                      seconds_since(start) * 1e3 < request_.config.warmup_ms;
       ++calls) {
    KB_TRY(device_.run(slot, 0));
    KB_TRY(device_.synchronize());
  }
  return Status::ok();
}

bool Job::prepare_timing() {
  next_timing_trial_ = std::max<uint32_t>(
      kTimingTrialBase, static_cast<uint32_t>(request_.config.correctness_trials));
  double set_bytes = 0;
  for (const Shape& s : problem_.input_shapes())
    set_bytes += 4.0 * static_cast<double>(element_count(s));
  for (const Shape& s : problem_.param_shapes())
    set_bytes += 4.0 * static_cast<double>(element_count(s));
  input_sets_ =
      std::max(1, std::min(request_.config.max_input_sets, device_.max_input_sets(set_bytes)));
  // Warm-up runs on contents of its own: what a variant does to them cannot reach a timed call.
  if (Status s = device_.generate(0, problem_, next_timing_key()); !s.is_ok())
    return fail_error("warm-up: ", s);
  for (Slot slot : {Slot::kReference, Slot::kCustom}) {
    if (slot == Slot::kCustom && (!has_custom_ || request_.config.aa)) continue;
    if (Status s = warm_up(slot); !s.is_ok()) return fail_error("warm-up: ", s);
  }
  return true;
}

// The reference alone (not_implemented) or against itself (A/A): fresh contents, no checks.
bool Job::timed_reference_pair(int round, bool reference_first, PairTimes& times) {
  const std::string where = "timed round " + std::to_string(round) + ": ";
  const int set = round_set(round);
  if (Status s = fresh_contents(set); !s.is_ok()) return fail_error(where, s);
  Result<double> first = timed_call(Slot::kReference, set);
  if (!first.is_ok()) return fail_error(where + "reference: ", first.status());
  if (!request_.config.aa) {
    times.reference_ms = first.value();
    return true;
  }
  Result<double> second = timed_call(Slot::kReference, set);
  if (!second.is_ok()) return fail_error(where + "reference: ", second.status());
  times.reference_ms = reference_first ? first.value() : second.value();
  times.custom_ms = reference_first ? second.value() : first.value();
  return true;
}

// Reference then custom (reference_first) or custom then reference, on contents no other call
// saw. Around the custom call: its output poisoned, no answer left in the reference slot (the
// reference's output of these contents, when it ran first, kept in a private copy), the inputs
// and the reference slot hashed; after it, its output compared with the reference's.
bool Job::timed_custom_pair(int round, bool reference_first, PairTimes& times) {
  const std::string where = "timed round " + std::to_string(round) + ": ";
  const int set = round_set(round);
  if (Status s = fresh_contents(set); !s.is_ok()) return fail_error(where, s);
  const uint64_t inputs_salt = hash_salts_(), reference_salt = hash_salts_();
  Result<uint64_t> inputs_before = device_.input_hash(set, inputs_salt);
  if (!inputs_before.is_ok()) return fail_error(where, inputs_before.status());
  Status s = Status::ok();
  if (reference_first) {
    Result<double> ms = timed_call(Slot::kReference, set);
    if (!ms.is_ok()) return fail_error(where + "reference: ", ms.status());
    if (!no_late_work(Slot::kReference, where)) return false;
    times.reference_ms = ms.value();
    s = device_.stash_reference();
  } else {
    s = device_.poison_output(Slot::kReference);
  }
  if (s.is_ok()) s = device_.poison_output(Slot::kCustom);
  if (!s.is_ok()) return fail_error(where, s);
  Result<uint64_t> reference_before = device_.output_hash(Slot::kReference, reference_salt);
  if (!reference_before.is_ok()) return fail_error(where, reference_before.status());

  Result<double> ms = timed_call(Slot::kCustom, set);
  if (!ms.is_ok()) return fail_error(where + "custom: ", ms.status());
  times.custom_ms = ms.value();
  if (!no_late_work(Slot::kCustom, where)) return false;

  Result<uint64_t> inputs_after = device_.input_hash(set, inputs_salt);
  if (!inputs_after.is_ok()) return fail_error(where, inputs_after.status());
  if (inputs_after.value() != inputs_before.value()) {
    return fail(JobStatus::kInputMutated,
                where + "the custom call changed its inputs or parameters");
  }
  Result<uint64_t> reference_after = device_.output_hash(Slot::kReference, reference_salt);
  if (!reference_after.is_ok()) return fail_error(where, reference_after.status());
  if (reference_after.value() != reference_before.value()) {
    return fail(JobStatus::kInputMutated,
                where + "the custom call wrote into the reference's output buffer");
  }
  if (!reference_first) {
    // The reference computes on the contents as generated, whatever the custom did to them: a
    // change the hash missed (additive; a pack that reads the executor's memory knows the salt)
    // cannot put both variants on the same degenerate data.
    if (Status r = make_contents(set); !r.is_ok()) return fail_error(where, r);
    Result<double> ref_ms = timed_call(Slot::kReference, set);
    if (!ref_ms.is_ok()) return fail_error(where + "reference: ", ref_ms.status());
    if (!no_late_work(Slot::kReference, where)) return false;
    times.reference_ms = ref_ms.value();
  }
  Result<ErrorStats> errors = reference_first ? device_.compare_with_stash(request_.spec->tolerance)
                                              : device_.compare_slots(request_.spec->tolerance);
  if (!errors.is_ok()) return fail_error(where, errors.status());
  return judge_errors(errors.value(), where);
}

bool Job::timed_pair(int round, bool reference_first, PairTimes& times) {
  const bool checked = has_custom_ && !request_.config.aa;
  return checked ? timed_custom_pair(round, reference_first, times)
                 : timed_reference_pair(round, reference_first, times);
}

bool Job::next_round_traced() {
  const ExecutorConfig& c = request_.config;
  if (c.no_launch_trace || !has_custom_ || c.aa) return false;
  if (c.trace_fraction >= 1) return true;
  return std::uniform_real_distribution<double>(0, 1)(trace_rng_) <
         std::max(c.trace_fraction, kMinTraceFraction);
}

// A B on contents c1, B A on contents c2. `keep`: the samples count (a traced round's are
// discarded when only a fraction of rounds is traced). A round with a void sample (TimedCall) is
// taken again, whole, on fresh contents: once, since the device has dropped its gate.
// The void attempt's wall time (the gate's timeout) is not the job's: time_variants leaves it out
// of the time cap.
bool Job::timed_round(int round, bool traced, bool keep) {
  const Clock::time_point start = Clock::now();
  if (!timed_round_once(round, traced, keep)) return false;
  if (!round_void_) return true;
  round_void_ = false;
  void_seconds_ += seconds_since(start);
  if (!timed_round_once(round, traced, keep)) return false;
  if (round_void_) {
    return fail_error("timed round " + std::to_string(round) + ": ",
                      Status::internal("the device voided the samples of a round taken again"));
  }
  return true;
}

bool Job::timed_round_once(int round, bool traced, bool keep) {
  const std::string where = "timed round " + std::to_string(round) + ": ";
  if (traced) {
    if (Status s = costed(costs_.trace, [&] { return device_.begin_trace(); }); !s.is_ok())
      return fail_error(where, s);
  }
  TraceGuard guard(device_, traced);
  PairTimes ab, ba;
  if (!timed_pair(round, true, ab) || !timed_pair(round, false, ba)) return false;
  if (round_void_) return true;  // the guard ends the trace unread; the round is taken again
  if (traced) {
    Result<LaunchTrace> trace = costed(costs_.trace, [&] { return guard.end(); });
    if (!trace.is_ok()) return fail_error(where, trace.status());
    if (!check_trace(trace.value(), where)) return false;
    if (trace.value().available) ++result_.traced_rounds;
    for (const CallTrace& call : trace.value().calls) {
      if (call.slot == Slot::kCustom) traced_custom_busy_ms_.push_back(call.busy_ms);
    }
    trace_unavailable_ = !trace.value().available;
  }
  if (!keep) return true;
  result_.reference.samples_ms.insert(result_.reference.samples_ms.end(),
                                      {ab.reference_ms, ba.reference_ms});
  if (has_custom_) {
    result_.custom.samples_ms.insert(result_.custom.samples_ms.end(), {ab.custom_ms, ba.custom_ms});
    // The geometric mean of the two pairs' ratios: each pair compares like with like.
    round_ratios_.push_back(
        std::sqrt(ab.reference_ms / ab.custom_ms * (ba.reference_ms / ba.custom_ms)));
  }
  return true;
}

bool Job::time_variants() {
  if (!prepare_timing()) return false;
  const ExecutorConfig& c = request_.config;
  const bool discard_traced = c.trace_fraction < 1;
  Clock::time_point start = Clock::now();
  StopReason stop = StopReason::kContinue;
  bool force_trace = false;
  for (int round = 0; stop == StopReason::kContinue; ++round) {
    const bool traced = force_trace || next_round_traced();
    const bool keep = !(traced && discard_traced);
    if (!timed_round(round, traced, keep)) return false;
    costed(costs_.clocks, [&] {
      device_.sample_clocks();
      return 0;
    });
    if (keep) ++result_.rounds;
    double half_width = INFINITY;
    if (has_custom_ && !round_ratios_.empty()) {
      result_.speedup =
          estimate_speedup(result_.reference.samples_ms, result_.custom.samples_ms, round_ratios_);
      half_width = result_.speedup.relative_half_width;
    } else if (!has_custom_) {
      // Reference alone: stop when its median is known to ±1% (t interval on the mean).
      SampleSummary s = summarize(result_.reference.samples_ms);
      if (s.count > 1)
        half_width = t_quantile_975(s.count - 1) * s.stddev / std::sqrt(s.count) / s.mean;
    }
    stop =
        should_stop(c.stopping, result_.rounds, seconds_since(start) - void_seconds_, half_width);
    // A job whose rounds are traced at random still gets at least one traced round.
    const bool tracing = !c.no_launch_trace && has_custom_ && !c.aa && !trace_unavailable_;
    if (stop != StopReason::kContinue && tracing && result_.traced_rounds == 0 && !force_trace) {
      force_trace = true;
      stop = StopReason::kContinue;
    }
  }
  result_.stop_reason = to_string(stop);
  result_.overhead_ms["timing_generate"] = costs_.generate;
  result_.overhead_ms["timing_calls"] = costs_.calls;
  result_.overhead_ms["timing_trace"] = costs_.trace;
  result_.overhead_ms["timing_clocks"] = costs_.clocks;
  result_.reference.summary = summarize(result_.reference.samples_ms);
  result_.custom.summary = summarize(result_.custom.samples_ms);
  // The host's time issuing each call, which the timing gate keeps out of the samples: a custom
  // whose run() takes longer on the host than its kernels on the GPU would be host-bound in a
  // real loop, and is reported here (docs/verification.md).
  nlohmann::json issue = nlohmann::json::object();
  for (Slot slot : {Slot::kReference, Slot::kCustom}) {
    const std::vector<double>& ms = host_issue_ms_[static_cast<int>(slot)];
    if (!ms.empty())
      issue[slot == Slot::kReference ? "reference" : "custom"] = summarize(ms).median;
  }
  result_.environment["host_issue_ms"] = issue;
  return true;
}

}  // namespace kb::detail
