// Statistics of timing samples: summaries, the speedup of one variant over another with a 95%
// confidence interval, and the stopping rule of the timing loop.
//
// The speedup is estimated from paired rounds (A B B A): each round gives one ratio
// r_i = mean(reference samples of round i) / mean(custom samples of round i); the interval is a
// t interval on log r_i (rounds are independent; pairing cancels slow drifts such as clock
// changes), reported as exp(mean log r ± t * se). The point estimate is the ratio of medians
// (DESIGN.md); it may sit slightly off the interval's centre, the geometric mean of the rounds.
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
  double speedup = 0;  // median(reference) / median(custom)
  double ci_low = 0, ci_high = 0;
  // exp(t * se) - 1: the interval's relative half-width.
  double relative_half_width = 0;
};

// `round_ratios`: reference/custom per round (>= 2 rounds for an interval).
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
