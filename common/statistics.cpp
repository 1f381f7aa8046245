#include "common/statistics.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <utility>

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

namespace {

// P(Binomial(n, 1/2) = i), in log space (2^-n underflows past n = 1074).
double binomial_half_pmf(int n, int i) {
  return std::exp(std::lgamma(n + 1.0) - std::lgamma(i + 1.0) - std::lgamma(n - i + 1.0) - n * std::log(2.0));
}

double median_of_sorted(const std::vector<double>& v) {
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// The 95% interval of the median of sorted `x` (n >= 6): the sign test's order statistics
// [x_(k), x_(n+1-k)], k the largest with coverage >= 95%, interpolated towards the next pair in
// by Hettmansperger and Sheather (1986) so that the coverage is ~95% rather than the 96-98% the
// discrete ranks give (their interpolation is exact for symmetric laws).
std::pair<double, double> median_interval(const std::vector<double>& x) {
  const int n = static_cast<int>(x.size());
  int k = 0;          // 1-based rank
  double below = 0;   // P(Binomial <= k - 1)
  double tail = 0;    // P(Binomial <= j), summed as j grows (linear in n, not quadratic)
  for (int j = 0; j <= n / 2; ++j) {
    tail += binomial_half_pmf(n, j);
    if (2 * tail > 0.05) break;
    k = j + 1;
    below = tail;
  }
  const double gamma_k = 1 - 2 * below;  // coverage of [x_(k), x_(n+1-k)]
  if (k + 1 > n + 1 - (k + 1)) return {x[k - 1], x[n - k]};
  const double gamma_next = 1 - 2 * (below + binomial_half_pmf(n, k));  // of [x_(k+1), x_(n-k)]
  const double i = (gamma_k - 0.95) / (gamma_k - gamma_next);
  const double lambda = (n - k) * i / (k + (n - 2.0 * k) * i);
  const double low = lambda * x[k] + (1 - lambda) * x[k - 1];
  const double high = lambda * x[n - k - 1] + (1 - lambda) * x[n - k];
  return {low, high};
}

}  // namespace

SpeedupEstimate estimate_speedup(const std::vector<double>& reference_samples,
                                 const std::vector<double>& custom_samples,
                                 const std::vector<double>& round_ratios) {
  SpeedupEstimate e;
  e.ci_low = 0;
  e.ci_high = INFINITY;
  e.relative_half_width = INFINITY;
  std::vector<double> logs;
  for (double r : round_ratios) {
    if (r > 0 && std::isfinite(r)) logs.push_back(std::log(r));
  }
  if (reference_samples.empty() || custom_samples.empty() || logs.empty()) return e;
  std::sort(logs.begin(), logs.end());
  const double m = median_of_sorted(logs);
  e.speedup = std::exp(m);
  if (static_cast<int>(logs.size()) < kMinRoundsForInterval) return e;
  const auto [low, high] = median_interval(logs);
  // The interval's length, centred on the point: for a symmetric law the median is the centre of
  // [low, high] on average, and centring it makes the point the printed interval's centre. The
  // method's resolution is added in quadrature (independent error sources).
  const double resolution = std::log1p(kTimingResolution);
  const double half = std::hypot(0.5 * (high - low), resolution);
  e.ci_low = std::exp(m - half);
  e.ci_high = std::exp(m + half);
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
