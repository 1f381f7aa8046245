#include "common/statistics.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace kb {

SampleSummary summarize(const std::vector<double>& samples) {
  SampleSummary s;
  s.count = static_cast<int>(samples.size());
  if (samples.empty()) return s;
  std::vector<double> sorted = samples;
  std::sort(sorted.begin(), sorted.end());
  const size_t n = sorted.size();
  s.median = n % 2 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
  s.mean = std::accumulate(sorted.begin(), sorted.end(), 0.0) / static_cast<double>(n);
  double ss = 0;
  for (double v : sorted) ss += (v - s.mean) * (v - s.mean);
  s.stddev = n > 1 ? std::sqrt(ss / static_cast<double>(n - 1)) : 0.0;
  s.min = sorted.front();
  s.max = sorted.back();
  return s;
}

double t_quantile_975(int dof) {
  // Exact table for small dof, then the Cornish-Fisher expansion (error < 1e-4 for dof > 30).
  static const double kTable[] = {12.7062, 4.3027, 3.1824, 2.7764, 2.5706, 2.4469, 2.3646, 2.3060,
                                  2.2622, 2.2281, 2.2010, 2.1788, 2.1604, 2.1448, 2.1314, 2.1199,
                                  2.1098, 2.1009, 2.0930, 2.0860, 2.0796, 2.0739, 2.0687, 2.0639,
                                  2.0595, 2.0555, 2.0518, 2.0484, 2.0452, 2.0423};
  if (dof < 1) dof = 1;
  if (dof <= 30) return kTable[dof - 1];
  const double z = 1.959963984540054, d = dof;
  const double z3 = z * z * z, z5 = z3 * z * z;
  return z + (z3 + z) / (4 * d) + (5 * z5 + 16 * z3 + 3 * z) / (96 * d * d);
}

SpeedupEstimate estimate_speedup(const std::vector<double>& reference_samples,
                                 const std::vector<double>& custom_samples,
                                 const std::vector<double>& round_ratios) {
  SpeedupEstimate e;
  const double custom_median = summarize(custom_samples).median;
  e.speedup = custom_median > 0 ? summarize(reference_samples).median / custom_median : 0;
  const int n = static_cast<int>(round_ratios.size());
  if (n < 2 || e.speedup <= 0) {
    e.ci_low = 0;
    e.ci_high = INFINITY;
    e.relative_half_width = INFINITY;
    return e;
  }
  std::vector<double> logs;
  for (double r : round_ratios) logs.push_back(std::log(r));
  SampleSummary s = summarize(logs);
  const double half = t_quantile_975(n - 1) * s.stddev / std::sqrt(static_cast<double>(n));
  // The interval is the paired rounds' own: exp(mean log r +- t se). Centring it on the ratio of
  // medians instead would let a skew between the two estimators exclude the truth.
  e.ci_low = std::exp(s.mean - half);
  e.ci_high = std::exp(s.mean + half);
  e.relative_half_width = std::expm1(half);
  return e;
}

std::string to_string(StopReason reason) {
  switch (reason) {
    case StopReason::kContinue: return "continue";
    case StopReason::kConverged: return "converged";
    case StopReason::kTimeCap: return "time_cap";
    case StopReason::kMaxRounds: return "max_rounds";
  }
  return "unknown";
}

StopReason should_stop(const StoppingRule& rule, int rounds, double elapsed_s,
                       double relative_half_width) {
  if (rounds >= rule.min_rounds && relative_half_width <= rule.target_relative_half_width) {
    return StopReason::kConverged;
  }
  if (rounds >= rule.max_rounds) return StopReason::kMaxRounds;
  if (elapsed_s >= rule.time_cap_s && rounds >= 2) return StopReason::kTimeCap;
  return StopReason::kContinue;
}

}  // namespace kb
