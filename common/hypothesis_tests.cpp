#include "common/hypothesis_tests.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <numeric>
#include <utility>

#include "common/statistics.h"

namespace kb {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kZ975 = 1.959963984540054;

// The continued fraction of the regularized incomplete beta function (Lentz's method).
double beta_continued_fraction(double a, double b, double x) {
  constexpr double kTiny = 1e-300;
  double c = 1, d = 1 - (a + b) * x / (a + 1);
  if (std::fabs(d) < kTiny) d = kTiny;
  d = 1 / d;
  double h = d;
  for (int m = 1; m <= 300; ++m) {
    const double m2 = 2.0 * m;
    double aa = m * (b - m) * x / ((a + m2 - 1) * (a + m2));
    d = 1 + aa * d;
    c = 1 + aa / c;
    if (std::fabs(d) < kTiny) d = kTiny;
    if (std::fabs(c) < kTiny) c = kTiny;
    d = 1 / d;
    h *= d * c;
    aa = -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1));
    d = 1 + aa * d;
    c = 1 + aa / c;
    if (std::fabs(d) < kTiny) d = kTiny;
    if (std::fabs(c) < kTiny) c = kTiny;
    d = 1 / d;
    const double delta = d * c;
    h *= delta;
    if (std::fabs(delta - 1) < 1e-15) break;
  }
  return h;
}

double regularized_incomplete_beta(double a, double b, double x) {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  const double log_front = std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) +
                           a * std::log(x) + b * std::log1p(-x);
  if (x < (a + 1) / (a + b + 2)) return std::exp(log_front) * beta_continued_fraction(a, b, x) / a;
  return 1 - std::exp(log_front) * beta_continued_fraction(b, a, 1 - x) / b;
}

// Counts of the exact null distribution of U for sample sizes (m, n): counts[u] arrangements.
std::vector<double> mann_whitney_counts(int m, int n) {
  // f[i][j][u] = f[i-1][j][u-j] + f[i][j-1][u]: the largest value is an a (beating all j b's) or a b.
  std::vector<std::vector<std::vector<double>>> f(m + 1, std::vector<std::vector<double>>(n + 1));
  for (int i = 0; i <= m; ++i) {
    for (int j = 0; j <= n; ++j) {
      std::vector<double>& cur = f[i][j];
      cur.assign(static_cast<size_t>(i * j + 1), 0.0);
      if (i == 0 || j == 0) {
        cur[0] = 1;
        continue;
      }
      const std::vector<double>& with_a = f[i - 1][j];
      const std::vector<double>& with_b = f[i][j - 1];
      for (size_t u = 0; u < with_a.size(); ++u) cur[u + static_cast<size_t>(j)] += with_a[u];
      for (size_t u = 0; u < with_b.size(); ++u) cur[u] += with_b[u];
    }
  }
  return f[m][n];
}

double exact_two_sided_p(double u, int m, int n) {
  const std::vector<double> counts = mann_whitney_counts(m, n);
  const double total = std::accumulate(counts.begin(), counts.end(), 0.0);
  const auto k = static_cast<size_t>(std::llround(u));
  double below = 0, above = 0;  // P(U <= u), P(U >= u)
  for (size_t i = 0; i < counts.size(); ++i) {
    if (i <= k) below += counts[i];
    if (i >= k) above += counts[i];
  }
  return std::min(1.0, 2 * std::min(below, above) / total);
}

// The McKean–Schrader standard error of the median of `sorted` (ascending), at 95%.
double median_standard_error(const std::vector<double>& sorted) {
  const double n = static_cast<double>(sorted.size());
  long c = std::lround((n + 1) / 2 - kZ975 * std::sqrt(n / 4));
  c = std::clamp<long>(c, 1, static_cast<long>(sorted.size()));
  const double lo = sorted[static_cast<size_t>(c - 1)];
  const double hi = sorted[sorted.size() - static_cast<size_t>(c)];
  return (hi - lo) / (2 * kZ975);
}

}  // namespace

double normal_cdf(double z) { return 0.5 * std::erfc(-z / std::sqrt(2.0)); }

double normal_quantile(double p) {
  if (p <= 0) return -kInf;
  if (p >= 1) return kInf;
  // Acklam's rational approximation, then one Newton step on erfc for full double precision.
  static const double a[] = {-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02,
                             1.383577518672690e+02, -3.066479806614716e+01, 2.506628277459239e+00};
  static const double b[] = {-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
                             6.680131188771972e+01, -1.328068155288572e+01};
  static const double c[] = {-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
                             -2.549732539343734e+00, 4.374664141464968e+00, 2.938163982698783e+00};
  static const double d[] = {7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
                             3.754408661907416e+00};
  double x;
  if (p < 0.02425 || p > 1 - 0.02425) {
    const double q = std::sqrt(-2 * std::log(p < 0.5 ? p : 1 - p));
    x = (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
        ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
    if (p > 0.5) x = -x;
  } else {
    const double q = p - 0.5, r = q * q;
    x = (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
        (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
  }
  const double e = normal_cdf(x) - p;
  const double u = e * std::sqrt(2 * std::numbers::pi) * std::exp(x * x / 2);
  return x - u / (1 + x * u / 2);
}

double student_t_cdf(double t, double dof) {
  if (std::isinf(t)) return t > 0 ? 1 : 0;
  const double tail = 0.5 * regularized_incomplete_beta(dof / 2, 0.5, dof / (dof + t * t));
  return t > 0 ? 1 - tail : tail;
}

double student_t_quantile(double p, double dof) {
  if (p <= 0) return -kInf;
  if (p >= 1) return kInf;
  if (p < 0.5) return -student_t_quantile(1 - p, dof);
  double lo = 0, hi = std::max(1.0, 2 * normal_quantile(p));
  while (student_t_cdf(hi, dof) < p) hi *= 2;
  for (int i = 0; i < 200 && hi - lo > 1e-12 * hi; ++i) {
    const double mid = 0.5 * (lo + hi);
    (student_t_cdf(mid, dof) < p ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

MannWhitneyResult mann_whitney_u(const std::vector<double>& a, const std::vector<double>& b) {
  MannWhitneyResult r;
  const size_t m = a.size(), n = b.size();
  if (m == 0 || n == 0) return r;
  std::vector<std::pair<double, int>> all;  // (value, 0 for a / 1 for b)
  all.reserve(m + n);
  for (double v : a) all.emplace_back(v, 0);
  for (double v : b) all.emplace_back(v, 1);
  std::sort(all.begin(), all.end());
  double rank_sum_a = 0, tie_term = 0;
  for (size_t i = 0; i < all.size();) {
    size_t j = i;
    while (j < all.size() && all[j].first == all[i].first) ++j;
    const double avg_rank = 0.5 * static_cast<double>(i + 1 + j);  // ranks i+1..j
    for (size_t k = i; k < j; ++k) {
      if (all[k].second == 0) rank_sum_a += avg_rank;
    }
    const double t = static_cast<double>(j - i);
    tie_term += t * t * t - t;
    i = j;
  }
  const double dm = static_cast<double>(m), dn = static_cast<double>(n), big_n = dm + dn;
  r.u = rank_sum_a - dm * (dm + 1) / 2;
  const double mean = dm * dn / 2;
  const double var = dm * dn / 12 * ((big_n + 1) - tie_term / (big_n * (big_n - 1)));
  if (var > 0) {
    const double dev = std::fabs(r.u - mean);
    r.z = (r.u > mean ? 1 : -1) * std::max(0.0, dev - 0.5) / std::sqrt(var);
    r.p_value = std::min(1.0, std::erfc(std::fabs(r.z) / std::sqrt(2.0)));
  }
  if (tie_term == 0 && m <= kMannWhitneyExactMax && n <= kMannWhitneyExactMax) {
    r.exact = true;
    r.p_value = exact_two_sided_p(r.u, static_cast<int>(m), static_cast<int>(n));
  }
  return r;
}

std::vector<double> benjamini_hochberg(const std::vector<double>& p_values) {
  const size_t m = p_values.size();
  std::vector<size_t> order(m);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(),
            [&](size_t x, size_t y) { return p_values[x] < p_values[y]; });
  std::vector<double> q(m);
  double running = 1;
  for (size_t k = m; k-- > 0;) {
    const double scaled = p_values[order[k]] * static_cast<double>(m) / static_cast<double>(k + 1);
    running = std::min(running, scaled);
    q[order[k]] = running;
  }
  return q;
}

PredictionInterval prediction_interval(const std::vector<double>& values, double alpha,
                                       double min_stddev) {
  PredictionInterval pi;
  const SampleSummary s = summarize(values);
  pi.n = s.count;
  pi.mean = s.mean;
  pi.stddev = std::max(s.stddev, min_stddev);
  if (pi.n < 2) {
    pi.lower = -kInf;
    pi.upper = kInf;
    return pi;
  }
  const double half = student_t_quantile(1 - alpha, pi.n - 1) * pi.stddev *
                      std::sqrt(1 + 1.0 / pi.n);
  pi.lower = pi.mean - half;
  pi.upper = pi.mean + half;
  return pi;
}

double prediction_p_value_above(const std::vector<double>& values, double x, double min_stddev) {
  const SampleSummary s = summarize(values);
  const double sd = std::max(s.stddev, min_stddev);
  if (s.count < 2) return 1;
  if (sd <= 0) return x > s.mean ? 0 : 1;
  const double t = (x - s.mean) / (sd * std::sqrt(1 + 1.0 / s.count));
  return 1 - student_t_cdf(t, s.count - 1);
}

MedianInterval median_interval(const std::vector<double>& samples) {
  MedianInterval mi;
  if (samples.empty()) return mi;
  std::vector<double> sorted = samples;
  std::sort(sorted.begin(), sorted.end());
  const double n = static_cast<double>(sorted.size());
  mi.median = summarize(sorted).median;
  const long last = static_cast<long>(sorted.size());
  const long lo = std::clamp<long>(std::lround(std::floor(n / 2 - 0.98 * std::sqrt(n))), 1, last);
  const long hi =
      std::clamp<long>(std::lround(std::ceil(1 + n / 2 + 0.98 * std::sqrt(n))), 1, last);
  mi.low = sorted[static_cast<size_t>(lo - 1)];
  mi.high = sorted[static_cast<size_t>(hi - 1)];
  return mi;
}

RatioEstimate ratio_of_medians(const std::vector<double>& base, const std::vector<double>& head) {
  RatioEstimate e;
  if (base.empty() || head.empty()) return e;
  const double base_median = summarize(base).median;
  e.ratio = base_median > 0 ? summarize(head).median / base_median : 0;
  if (base.size() < 2 || head.size() < 2 || e.ratio <= 0) {
    e.ci_low = 0;
    e.ci_high = kInf;
    return e;
  }
  auto sorted_logs = [](const std::vector<double>& v) {
    std::vector<double> logs;
    logs.reserve(v.size());
    for (double x : v) logs.push_back(std::log(x));
    std::sort(logs.begin(), logs.end());
    return logs;
  };
  const double se_b = median_standard_error(sorted_logs(base));
  const double se_h = median_standard_error(sorted_logs(head));
  const double half = kZ975 * std::sqrt(se_b * se_b + se_h * se_h);
  e.ci_low = e.ratio * std::exp(-half);
  e.ci_high = e.ratio * std::exp(half);
  return e;
}

std::string to_string(ChangeVerdict verdict) {
  switch (verdict) {
    case ChangeVerdict::kFaster: return "faster";
    case ChangeVerdict::kSlower: return "slower";
    case ChangeVerdict::kSame: return "same";
    case ChangeVerdict::kAmbiguous: return "ambiguous";
  }
  return "ambiguous";
}

ChangeVerdict classify_change(const RatioEstimate& change, double q_value, double alpha,
                              double threshold) {
  const double up = 1 + threshold, down = 1 / (1 + threshold);
  if (change.ratio <= 0) return ChangeVerdict::kAmbiguous;
  if (change.ci_low >= down && change.ci_high <= up) return ChangeVerdict::kSame;
  if (q_value <= alpha && change.ci_low > 1 && change.ratio > up) return ChangeVerdict::kSlower;
  if (q_value <= alpha && change.ci_high < 1 && change.ratio < down) return ChangeVerdict::kFaster;
  return ChangeVerdict::kAmbiguous;
}

}  // namespace kb
