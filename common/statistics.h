// Statistics of timing samples: summaries, the speedup of one variant over another with a 95%
// confidence interval, and the stopping rule of the timing loop.
//
// The speedup is estimated from paired rounds (A B B A, or one reference/custom pair): each round
// gives one ratio r_i = reference time / custom time of that round (pairing cancels slow drifts
// such as clock changes). One estimator gives both the point and the interval, on the log scale:
//   point    = exp(m), m = median of log r_i;
//   interval = exp(m ± h), h = sqrt(((U - L) / 2)^2 + log(1 + kTimingResolution)^2), where
//              [L, U] is the sign-test (order-statistic) 95% interval of the median of log r_i: [x_(k), x_(n+1-k)] with the largest k whose
//              coverage 1 - 2 P(Binomial(n, 1/2) < k) is >= 95%, interpolated towards
//              [x_(k+1), x_(n-k)] (Hettmansperger & Sheather 1986) to bring the coverage to ~95%;
//   relative_half_width = exp(h) - 1, the number the stopping rule compares with its target.
// Why this one:
// - The median is robust: rounds hit by a context switch or a clock drop, or a kernel that games
//   a few calls, cannot drag it (the old point, a ratio of medians beside a t interval on the
//   rounds' mean, could sit outside its own interval: "219.493x [72.394, 90.660]").
// - The order-statistic interval needs no normality: the round ratios are heavy-tailed.
// - Centring the interval's length on the median makes the printed point the centre of the
//   printed interval by construction. The paired round log-ratio is symmetric when both variants
//   share a noise law (A/A exactly), and for a symmetric law the median is on average the centre
//   of [L, U], so the centred interval keeps the coverage.
// - Cost: the median is 2/pi (64%) as efficient as the mean under Gaussian noise, so a job needs
//   ~1.5x the rounds of the old t interval to reach the same width when the noise is Gaussian;
//   with outliers it needs fewer.
// - The method's resolution, kTimingResolution, is added to the half-width in quadrature: the
//   same kernel timed against itself (A/A) on the H200 lands up to 0.25% from 1 while its
//   sign-test interval is +-0.1-0.2% wide (placement and order effects the rounds do not average
//   away; 3 of 47 A/A intervals missed 1.0 without it, 2026-12-01, docs/aa-h200-*.json). "Time
//   the same version twice; a difference smaller than that spread is noise" (METHOD.md): no
//   speedup interval is narrower than +-0.25%.
// Coverage by simulation (tests/unit/common/statistics_test.cpp, 1000 runs each): 93-96% under
// lognormal noise and A/A at 10-60 rounds, 94-99% with 10% of the samples slowed 1.2-3x.
// With fewer than 6 rounds no pair of order statistics reaches 95% (2/2^n > 0.05): unbounded.
//
// Thread safety: pure functions.
#pragma once

#include <string>
#include <vector>

namespace kb {

struct SampleSummary {
  int count = 0;
  double median = 0, mean = 0, stddev = 0, min = 0, max = 0;
};

SampleSummary summarize(const std::vector<double>& samples);

// The two-sided 95% quantile of Student's t with `dof` degrees of freedom (dof >= 1).
double t_quantile_975(int dof);

struct SpeedupEstimate {
  double speedup = 0;  // exp(median log r_i): the geometric centre of [ci_low, ci_high]
  double ci_low = 0, ci_high = 0;  // 0 and +inf when unbounded (fewer than 6 rounds)
  // exp(h) - 1: the interval's relative half-width (ci_high / speedup - 1).
  double relative_half_width = 0;
};

// The smallest number of rounds that gives a bounded interval.
inline constexpr int kMinRoundsForInterval = 6;

// The timing method's resolution as a relative half-width (see above).
inline constexpr double kTimingResolution = 0.0025;

// `round_ratios`: reference/custom per round (or per pair); non-positive or non-finite ratios are
// left out. The sample vectors only say whether both variants were timed at all (either empty:
// speedup 0, unbounded); the estimate comes from the paired ratios alone.
SpeedupEstimate estimate_speedup(const std::vector<double>& reference_samples,
                                 const std::vector<double>& custom_samples,
                                 const std::vector<double>& round_ratios);

struct StoppingRule {
  int min_rounds = 10;
  double target_relative_half_width = 0.01;  // ±1%
  double time_cap_s = 15.0;
  int max_rounds = 100000;
};

enum class StopReason { kContinue, kConverged, kTimeCap, kMaxRounds };
std::string to_string(StopReason reason);

StopReason should_stop(const StoppingRule& rule, int rounds, double elapsed_s,
                       double relative_half_width);

}  // namespace kb
