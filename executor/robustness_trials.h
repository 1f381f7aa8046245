// Robustness trials: after timing, extra correctness trials on inputs and parameters moved away
// from the spec's defaults (common/tensor_generator.h: shift, scale, centered, random_affine),
// judged against the golden model rather than against the fp32 reference.
//
// Why against the golden model: with inputs in [100, 101) or x 1000, fp32 itself loses digits
// where large terms cancel (a norm's variance, a conv of large same-sign values), so the fp32
// reference can be as wrong as the custom kernel. Each trial runs reference and custom on the
// device at the job's own shape where the golden model affords it (<= kRobustJobMaxFlops: a
// custom cannot keep fragile numerics to shapes the trials never see, e.g. a sweep's hidden
// ones), else at a mid-size preset (the spec's `robust` preset, else `small`), the pack's golden
// model (double, rounded once to fp32 by the pack ABI) on the CPU on the same inputs, and judges:
//   pass             the custom is within the spec's tolerance of the golden model;
//   fragile          the custom is outside, and its error is > kFragileFactor x the reference's:
//                    the kernel's own numerics (a one-pass variance, an unshifted sum) -> the
//                    job's status becomes `fragile`, with a message naming the distribution and
//                    both errors;
//   ill_conditioned  both are outside: fp32 cannot meet the tolerance there; recorded, no failure;
//   marginal         the custom is outside, the reference inside, but the custom's error is
//                    within kFragileFactor x the reference's: at fp32's edge; recorded, no failure.
// Kinds the spec lists under robustness.skip are not tried, nor random_affine where no parameter
// is initialized to ones or zeros (it would move nothing).
//
// Thread safety: one job at a time per device, like the executor.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/job_result.h"
#include "executor/executor.h"

namespace kb {

// Robustness trial k draws trial number kRobustTrialBase + k of the run's seed.
constexpr uint32_t kRobustTrialBase = 500;
constexpr double kFragileFactor = 10;
// The most FLOPs at which the trials run at the job's own shape: the golden model (double, one
// CPU thread) then adds well under a second a trial.
constexpr double kRobustJobMaxFlops = 5e7;

// One variant's output against the golden output.
struct GoldenErrors {
  double max_abs = 0;  // max |v - g|; infinite where v is non-finite and g is not (or the reverse)
  double max_excess = 0;  // max |v - g| / (atol + rtol |g|): > 1 is outside the tolerance
};
GoldenErrors errors_against_golden(const std::vector<float>& out, const std::vector<float>& golden,
                                   const Tolerance& tolerance);

// "pass", "fragile", "ill_conditioned" or "marginal" (see above).
std::string judge_robustness(const GoldenErrors& reference, const GoldenErrors& custom);

// Where the trials run without the job's shape: the spec's `robust` preset (one that takes the
// custom's fast path, say), else `small`; mid-size either way, so that the golden model answers
// in seconds.
std::string robustness_preset(const ProblemSpec& spec);

// Where the trials of `request` run: its own shape when that costs <= kRobustJobMaxFlops, else
// robustness_preset().
struct RobustnessShape {
  std::string label;  // a preset's name, or the job's own dims ("N=2,C_in=3,...")
  bool is_preset = true;
  Dims dims;  // the job's own dims where !is_preset
};
RobustnessShape robustness_shape(const JobRequest& request);

// The kinds tried for this problem, in order: every robustness distribution, less the spec's
// skips and a random_affine that would move nothing.
std::vector<Distribution> robustness_kinds(const ProblemSpec& spec);

// Runs the trials with `golden` as the golden model's device; appends to result.robustness, and
// sets result.status (fragile, or runtime_error when a variant fails to run) and message. Where
// the trials cannot run (no mid-size preset, a variant or the golden model refuses the preset),
// result.robustness_note says why and the status is left as it was.
void run_robustness_trials(ExecutionDevice& device, ExecutionDevice& golden,
                           const JobRequest& request, JobResult& result);

// The executor's call, after timing: runs the trials when the job is still ok, has a custom
// variant and is not A/A, on device.make_golden_device() (a note when there is none).
void run_robustness_trials(ExecutionDevice& device, const JobRequest& request, JobResult& result);

}  // namespace kb
