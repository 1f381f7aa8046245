// Hypothesis tests and intervals for comparing timings across commits and GPU models: the
// distributions they need (normal, Student's t), the Mann–Whitney U test on raw samples, the
// Benjamini–Hochberg adjustment, a t prediction interval for the next point of a series (used by
// the regression detector on log medians), distribution-free intervals for a median and for the
// ratio of two medians, and the verdict of `kb compare`.
//
// Conventions: p-values are in [0, 1]; "alpha" is a tail probability; inputs with too few values
// for a statistic give the neutral answer documented on the function (never NaN).
//
// Thread safety: pure functions.
#pragma once

#include <string>
#include <vector>

namespace kb {

double normal_cdf(double z);
// The inverse of normal_cdf, for p in (0, 1).
double normal_quantile(double p);
// Student's t with `dof` > 0 degrees of freedom (fractional allowed).
double student_t_cdf(double t, double dof);
double student_t_quantile(double p, double dof);

struct MannWhitneyResult {
  double u = 0;        // U of the first sample: pairs (a_i, b_j) with a_i > b_j, ties count 1/2
  double z = 0;        // the normal approximation's statistic (continuity and tie corrected)
  double p_value = 1;  // two-sided
  bool exact = false;  // p from the exact distribution (small samples without ties)
};

// Two-sided Mann–Whitney U test. Exact when both samples have at most kMannWhitneyExactMax values
// and there are no ties; otherwise the normal approximation with tie correction and continuity
// correction (as scipy.stats.mannwhitneyu, method "asymptotic"). An empty sample gives p = 1.
inline constexpr int kMannWhitneyExactMax = 20;
MannWhitneyResult mann_whitney_u(const std::vector<double>& a, const std::vector<double>& b);

// Benjamini–Hochberg adjusted p-values (q-values), in the input's order: rejecting every q <= alpha
// controls the false discovery rate at alpha for independent tests.
std::vector<double> benjamini_hochberg(const std::vector<double>& p_values);

// The t prediction interval for one new draw from the distribution of `values` (assumed normal and
// independent): mean ± t_{1-alpha}(n-1) * s * sqrt(1 + 1/n). One-sided bounds at level alpha each.
// `min_stddev` floors s so that a constant history does not give a zero-width interval.
// Needs n >= 2; with fewer values the bounds are -inf/+inf.
struct PredictionInterval {
  int n = 0;
  double mean = 0, stddev = 0;
  double lower = 0, upper = 0;
};
PredictionInterval prediction_interval(const std::vector<double>& values, double alpha,
                                       double min_stddev = 0);
// One-sided p-value that `x` is above the distribution of `values`: P(T_{n-1} >= t) with
// t = (x - mean) / (s * sqrt(1 + 1/n)). 1 with fewer than 2 values.
double prediction_p_value_above(const std::vector<double>& values, double x,
                                double min_stddev = 0);

// A distribution-free 95% interval for the median of one sample (order statistics at
// n/2 ∓ 0.98 sqrt(n), normal approximation of the binomial). Empty: all zero.
struct MedianInterval {
  double median = 0, low = 0, high = 0;
};
MedianInterval median_interval(const std::vector<double>& samples);

// head / base as a ratio of medians with a bootstrap-free 95% interval (Price & Bonett 2002):
// exp(log(m_h / m_b) ± 1.96 sqrt(se_b² + se_h²)), each se the McKean–Schrader order-statistic
// standard error of a log median. Samples must be positive. With fewer than 2 samples on either
// side the interval is [0, inf).
struct RatioEstimate {
  double ratio = 0;  // median(head) / median(base)
  double ci_low = 0, ci_high = 0;
};
RatioEstimate ratio_of_medians(const std::vector<double>& base, const std::vector<double>& head);

// `kb compare`'s verdict for head against base (times, so a ratio above 1 is slower):
//   same       the whole interval lies within ±threshold;
//   slower     q <= alpha, the interval excludes 1 and the ratio exceeds 1 + threshold;
//   faster     q <= alpha, the interval excludes 1 and the ratio is below 1 / (1 + threshold);
//   ambiguous  anything else (too noisy to say, or significant but within the practical band).
enum class ChangeVerdict { kFaster, kSlower, kSame, kAmbiguous };
std::string to_string(ChangeVerdict verdict);
ChangeVerdict classify_change(const RatioEstimate& change, double q_value, double alpha,
                              double threshold);

}  // namespace kb
