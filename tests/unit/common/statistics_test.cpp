// The timing statistics: sample summaries, Student's t quantiles, the speedup estimate with its
// 95% interval (the point is the interval's centre; a seeded Monte Carlo of its coverage under
// lognormal noise, outlier contamination and A/A) and the timing loop's stopping rule.
#include "common/statistics.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <random>
#include <vector>

namespace kb {
namespace {

TEST(Summarize, EmptyIsAllZero) {
  SampleSummary s = summarize({});
  EXPECT_EQ(s.count, 0);
  EXPECT_EQ(s.median, 0);
  EXPECT_EQ(s.mean, 0);
  EXPECT_EQ(s.stddev, 0);
}

TEST(Summarize, OddCountTakesTheMiddleOfTheSortedSamples) {
  SampleSummary s = summarize({5, 1, 4, 2, 3});
  EXPECT_EQ(s.count, 5);
  EXPECT_DOUBLE_EQ(s.median, 3);
  EXPECT_DOUBLE_EQ(s.mean, 3);
  EXPECT_DOUBLE_EQ(s.min, 1);
  EXPECT_DOUBLE_EQ(s.max, 5);
}

TEST(Summarize, EvenCountAveragesTheTwoMiddleSamples) {
  SampleSummary s = summarize({4, 1, 10, 2});
  EXPECT_DOUBLE_EQ(s.median, 3);
  EXPECT_DOUBLE_EQ(s.mean, 4.25);
}

TEST(Summarize, StddevIsTheSampleStddev) {
  // Sum of squared deviations from the mean 5 is 32; n - 1 = 7.
  SampleSummary s = summarize({2, 4, 4, 4, 5, 5, 7, 9});
  EXPECT_DOUBLE_EQ(s.mean, 5);
  EXPECT_NEAR(s.stddev, std::sqrt(32.0 / 7.0), 1e-12);
}

TEST(Summarize, OneSampleHasNoSpread) {
  SampleSummary s = summarize({1.5});
  EXPECT_EQ(s.count, 1);
  EXPECT_DOUBLE_EQ(s.median, 1.5);
  EXPECT_EQ(s.stddev, 0);
}

TEST(TQuantile975, MatchesTheTable) {
  // Student's t, two-sided 95% (upper 0.975 quantile).
  EXPECT_NEAR(t_quantile_975(1), 12.7062, 1e-4);
  EXPECT_NEAR(t_quantile_975(2), 4.3027, 1e-4);
  EXPECT_NEAR(t_quantile_975(9), 2.2622, 1e-4);
  EXPECT_NEAR(t_quantile_975(10), 2.2281, 1e-4);
  EXPECT_NEAR(t_quantile_975(30), 2.0423, 1e-4);
}

TEST(TQuantile975, LargeDofFollowsTheExpansion) {
  EXPECT_NEAR(t_quantile_975(31), 2.0395, 2e-4);
  EXPECT_NEAR(t_quantile_975(40), 2.0211, 2e-4);
  EXPECT_NEAR(t_quantile_975(60), 2.0003, 2e-4);
  EXPECT_NEAR(t_quantile_975(120), 1.9799, 2e-4);
  EXPECT_NEAR(t_quantile_975(1000000), 1.959964, 1e-5);
}

TEST(TQuantile975, DecreasesAcrossTheTableBoundary) {
  for (int dof = 1; dof < 200; ++dof) {
    EXPECT_GT(t_quantile_975(dof), t_quantile_975(dof + 1)) << "dof " << dof;
  }
}

TEST(TQuantile975, DofBelowOneIsClampedToOne) {
  EXPECT_DOUBLE_EQ(t_quantile_975(0), t_quantile_975(1));
}

// Noiseless rounds: the interval is the method's resolution alone, +-0.25%.
TEST(EstimateSpeedup, NoiselessTwiceAsFastIsKnownToTheMethodsResolution) {
  std::vector<double> ref(20, 2.0), custom(20, 1.0), ratios(10, 2.0);
  SpeedupEstimate e = estimate_speedup(ref, custom, ratios);
  EXPECT_DOUBLE_EQ(e.speedup, 2.0);
  EXPECT_DOUBLE_EQ(e.ci_low, 2.0 / (1 + kTimingResolution));
  EXPECT_DOUBLE_EQ(e.ci_high, 2.0 * (1 + kTimingResolution));
  EXPECT_NEAR(e.relative_half_width, kTimingResolution, 1e-15);
}

// The statistical half-width h and the resolution r combine as sqrt(h^2 + r^2) on the log scale.
double with_resolution(double statistical_half) {
  return std::hypot(statistical_half, std::log1p(kTimingResolution));
}

std::vector<double> ratios_from_log_offsets(double centre, const std::vector<double>& offsets) {
  std::vector<double> ratios;
  for (double d : offsets) ratios.push_back(centre * std::exp(d));
  return ratios;
}

TEST(EstimateSpeedup, TenRoundsInterpolateBetweenTheSignTestRanks) {
  // n = 10: k = 2 (coverage 1 - 22/1024 = 0.97852; k = 3 gives 1 - 112/1024 = 0.89063).
  // Hettmansperger-Sheather: I = (0.97852 - 0.95) / (0.97852 - 0.89063) = 0.32444,
  // lambda = (n - k) I / (k + (n - 2k) I) = 0.65767; sorted log offsets
  // {-0.09, -0.03, -0.02, -0.01, 0, 0, 0.01, 0.02, 0.05, 0.5}: median 0,
  // L = lambda x_(3) + (1 - lambda) x_(2) = -0.023423, U = lambda x_(8) + (1 - lambda) x_(9) = 0.030270,
  // h = (U - L) / 2 = 0.026847, centred on the median (with the resolution in quadrature).
  const std::vector<double> ratios =
      ratios_from_log_offsets(2.0, {0.5, -0.09, 0.05, -0.03, 0.0, 0.0, 0.02, -0.01, 0.01, -0.02});
  SpeedupEstimate e = estimate_speedup({2.0}, {1.0}, ratios);
  const double h = with_resolution(0.026847);
  EXPECT_NEAR(e.speedup, 2.0, 1e-12);
  EXPECT_NEAR(std::log(e.ci_low / 2.0), -h, 1e-5);
  EXPECT_NEAR(std::log(e.ci_high / 2.0), h, 1e-5);
  EXPECT_NEAR(e.relative_half_width, std::expm1(h), 1e-5);
}

TEST(EstimateSpeedup, SixRoundsAreTheFewestWithABoundedInterval) {
  // n = 6: k = 1 (coverage 1 - 2/64 = 0.96875), interpolated towards [x_(2), x_(5)] (0.78125):
  // I = 0.10, lambda = 5 I / (1 + 4 I) = 0.35714; offsets sorted {-0.02, -0.01, 0, 0, 0.01, 0.04}:
  // L = -0.016429, U = 0.029286, h = 0.022857. n = 5: 2 / 2^5 = 0.0625 > 0.05, unbounded.
  const std::vector<double> six = ratios_from_log_offsets(3.0, {-0.02, -0.01, 0.0, 0.0, 0.01, 0.04});
  SpeedupEstimate e = estimate_speedup({3.0}, {1.0}, six);
  EXPECT_NEAR(e.speedup, 3.0, 1e-12);
  EXPECT_NEAR(std::log(e.ci_high / 3.0), with_resolution(0.022857), 1e-5);
  EXPECT_NEAR(std::log(e.ci_low / 3.0), -with_resolution(0.022857), 1e-5);
  const std::vector<double> five(six.begin(), six.begin() + 5);
  SpeedupEstimate f = estimate_speedup({3.0}, {1.0}, five);
  EXPECT_NEAR(f.speedup, 3.0, 1e-12);
  EXPECT_EQ(f.ci_low, 0);
  EXPECT_TRUE(std::isinf(f.ci_high));
  EXPECT_TRUE(std::isinf(f.relative_half_width));
  EXPECT_EQ(kMinRoundsForInterval, 6);
}

TEST(EstimateSpeedup, NoCustomSamplesIsZeroAndUnbounded) {
  SpeedupEstimate e = estimate_speedup({2.0, 2.0}, {}, {2.0, 2.0});
  EXPECT_EQ(e.speedup, 0);
  EXPECT_TRUE(std::isinf(e.ci_high));
}

TEST(EstimateSpeedup, NonPositiveAndNonFiniteRatiosAreLeftOut) {
  std::vector<double> ratios(8, 1.5);
  ratios.push_back(0.0);
  ratios.push_back(INFINITY);
  ratios.push_back(NAN);
  SpeedupEstimate e = estimate_speedup({1.5}, {1.0}, ratios);
  EXPECT_DOUBLE_EQ(e.speedup, 1.5);
  EXPECT_DOUBLE_EQ(e.ci_high, 1.5 * (1 + kTimingResolution));
}

// Regression (issue 12): "219.493x [72.394, 90.660]": a few huge rounds pulled the old point (the
// ratio of medians) out of the old interval (a t interval on the rounds). Now one number is both.
TEST(EstimateSpeedup, AFewGamedRoundsCannotPutThePointOutsideItsInterval) {
  std::vector<double> ratios(30, 80.0);
  for (int i = 0; i < 30; ++i) ratios[i] *= std::exp(0.05 * ((i * 7) % 11 - 5) / 5.0);
  for (int i = 0; i < 4; ++i) ratios[3 * i] = 530.0;
  SpeedupEstimate e = estimate_speedup({1.0}, {1.0}, ratios);
  EXPECT_LE(e.ci_low, e.speedup);
  EXPECT_GE(e.ci_high, e.speedup);
  EXPECT_LT(e.speedup, 90.0) << "the median ignores 4 of 30 rounds, however large";
}

// Property: over random inputs (light and heavy tails, outliers, 1 to 300 rounds) the point is
// the geometric centre of the interval, so it always lies inside it.
TEST(EstimateSpeedup, ThePointIsAlwaysTheCentreOfItsInterval) {
  std::mt19937_64 rng(12);
  std::uniform_int_distribution<int> rounds(1, 300);
  std::uniform_real_distribution<double> centre_log(-3.0, 6.0);
  std::normal_distribution<double> gauss(0.0, 0.05);
  std::cauchy_distribution<double> cauchy(0.0, 0.05);
  std::bernoulli_distribution outlier(0.1);
  std::uniform_real_distribution<double> outlier_log(-4.0, 4.0);
  for (int trial = 0; trial < 2000; ++trial) {
    const int n = rounds(rng);
    const double centre = std::exp(centre_log(rng));
    std::vector<double> ratios;
    for (int i = 0; i < n; ++i) {
      double d = trial % 2 ? cauchy(rng) : gauss(rng);
      if (outlier(rng)) d += outlier_log(rng);
      ratios.push_back(centre * std::exp(std::clamp(d, -300.0, 300.0)));
    }
    SpeedupEstimate e = estimate_speedup({1.0}, {1.0}, ratios);
    SCOPED_TRACE("trial " + std::to_string(trial) + ", " + std::to_string(n) + " rounds");
    ASSERT_GT(e.speedup, 0);
    ASSERT_LE(e.ci_low, e.speedup);
    ASSERT_GE(e.ci_high, e.speedup);
    if (n < kMinRoundsForInterval) {
      ASSERT_TRUE(std::isinf(e.relative_half_width));
      continue;
    }
    ASSERT_NEAR(std::log(e.ci_low) + std::log(e.ci_high), 2 * std::log(e.speedup), 1e-9);
    ASSERT_NEAR(e.relative_half_width, e.ci_high / e.speedup - 1, 1e-9 * (1 + e.relative_half_width));
  }
}

// One simulated timing run: `rounds` rounds of A B B A, every sample true_ms * lognormal noise,
// and with probability `outlier_rate` a sample also slowed by a factor in [1.2, 3) (a context
// switch, a clock drop). Both variants share the noise law, so the round log-ratio is symmetric
// about log(ref_ms / custom_ms): that is the truth the interval must hold.
struct Simulated {
  std::vector<double> ref, custom, ratios;
};

Simulated simulate(std::mt19937_64& rng, int rounds, double ref_ms, double custom_ms, double sigma,
                   double outlier_rate = 0) {
  std::lognormal_distribution<double> noise(0.0, sigma);
  std::bernoulli_distribution hit(outlier_rate);
  std::uniform_real_distribution<double> slowdown(1.2, 3.0);
  auto sample = [&](double ms) { return ms * noise(rng) * (hit(rng) ? slowdown(rng) : 1.0); };
  Simulated s;
  for (int r = 0; r < rounds; ++r) {
    const double a1 = sample(ref_ms), b1 = sample(custom_ms);
    const double b2 = sample(custom_ms), a2 = sample(ref_ms);
    s.ref.insert(s.ref.end(), {a1, a2});
    s.custom.insert(s.custom.end(), {b1, b2});
    s.ratios.push_back((a1 + a2) / (b1 + b2));
  }
  return s;
}

TEST(EstimateSpeedup, NoisyTwiceAsFastIsNearTwo) {
  std::mt19937_64 rng(7);
  Simulated s = simulate(rng, 30, 2.0, 1.0, 0.01);
  SpeedupEstimate e = estimate_speedup(s.ref, s.custom, s.ratios);
  EXPECT_NEAR(e.speedup, 2.0, 0.02);
  EXPECT_LT(e.ci_low, e.speedup);
  EXPECT_GT(e.ci_high, e.speedup);
  EXPECT_LT(e.relative_half_width, 0.02);
}

TEST(EstimateSpeedup, IntervalShrinksWithMoreRounds) {
  std::mt19937_64 rng(11);
  Simulated few = simulate(rng, 10, 2.0, 1.0, 0.01);
  Simulated many = simulate(rng, 160, 2.0, 1.0, 0.01);
  const double few_half = estimate_speedup(few.ref, few.custom, few.ratios).relative_half_width;
  const double many_half = estimate_speedup(many.ref, many.custom, many.ratios).relative_half_width;
  EXPECT_GT(few_half, 0);
  // 16x the rounds: about a quarter of the width.
  EXPECT_LT(many_half, 0.5 * few_half);
}

// The fraction of `experiments` seeded runs whose 95% interval holds the true ratio.
double coverage(int rounds, double truth, double sigma, double outlier_rate, uint64_t seed) {
  constexpr int kExperiments = 1000;
  std::mt19937_64 rng(seed);
  int covered = 0;
  for (int i = 0; i < kExperiments; ++i) {
    Simulated s = simulate(rng, rounds, truth, 1.0, sigma, outlier_rate);
    SpeedupEstimate e = estimate_speedup(s.ref, s.custom, s.ratios);
    if (e.ci_low <= truth && truth <= e.ci_high) ++covered;
  }
  return static_cast<double>(covered) / kExperiments;
}

// Measured with these seeds: 0.932-0.958 under lognormal noise and A/A, 0.941-0.991 with
// contamination (heavier tails make the interpolation conservative at 10 rounds). 1000 runs put
// the binomial noise of a coverage at ~0.7%; the band allows ~3 of those around 95%, and the top
// catches an interval that has become uselessly wide.
constexpr double kCoverageLow = 0.92, kCoverageHigh = 0.995;

TEST(EstimateSpeedupCoverage, LognormalNoiseAtTheMinimumRounds) {
  const double c = coverage(10, 2.0, 0.01, 0.0, 2024);
  EXPECT_GE(c, kCoverageLow);
  EXPECT_LE(c, kCoverageHigh);
}

TEST(EstimateSpeedupCoverage, LognormalNoiseWithManyRounds) {
  const double c = coverage(60, 2.0, 0.01, 0.0, 2025);
  EXPECT_GE(c, kCoverageLow);
  EXPECT_LE(c, kCoverageHigh);
}

TEST(EstimateSpeedupCoverage, OutlierContamination) {
  // 10% of samples slowed 1.2-3x: a quarter of the rounds hold at least one such sample.
  for (int rounds : {10, 40, 150}) {
    const double c = coverage(rounds, 1.7, 0.01, 0.1, 2026 + rounds);
    EXPECT_GE(c, kCoverageLow) << rounds << " rounds";
    EXPECT_LE(c, kCoverageHigh) << rounds << " rounds";
  }
}

TEST(EstimateSpeedupCoverage, AAHoldsOne) {
  for (int rounds : {10, 60}) {
    const double c = coverage(rounds, 1.0, 0.01, 0.02, 2030 + rounds);
    EXPECT_GE(c, kCoverageLow) << rounds << " rounds";
    EXPECT_LE(c, kCoverageHigh) << rounds << " rounds";
  }
}

// The median resists what drags a mean: with contamination the interval stays narrow enough for
// the stopping rule to converge, where the old t interval on the same rounds' log-ratios widens.
TEST(EstimateSpeedup, OutliersBarelyWidenTheInterval) {
  std::mt19937_64 rng(31);
  Simulated clean = simulate(rng, 60, 2.0, 1.0, 0.005);
  Simulated dirty = simulate(rng, 60, 2.0, 1.0, 0.005, 0.05);
  const double clean_half = estimate_speedup(clean.ref, clean.custom, clean.ratios).relative_half_width;
  const double dirty_half = estimate_speedup(dirty.ref, dirty.custom, dirty.ratios).relative_half_width;
  EXPECT_LT(dirty_half, 2.0 * clean_half);
  EXPECT_LT(dirty_half, 0.01);
  std::vector<double> logs;
  for (double r : dirty.ratios) logs.push_back(std::log(r));
  const SampleSummary s = summarize(logs);
  const double t_half = std::expm1(t_quantile_975(s.count - 1) * s.stddev / std::sqrt(s.count));
  EXPECT_GT(t_half, 2.0 * dirty_half) << "t: " << t_half << ", median: " << dirty_half;
}

TEST(StopReasonName, EveryReasonHasAName) {
  EXPECT_EQ(to_string(StopReason::kContinue), "continue");
  EXPECT_EQ(to_string(StopReason::kConverged), "converged");
  EXPECT_EQ(to_string(StopReason::kTimeCap), "time_cap");
  EXPECT_EQ(to_string(StopReason::kMaxRounds), "max_rounds");
}

TEST(ShouldStop, NotBeforeTheMinimumRoundsEvenWhenNarrow) {
  StoppingRule rule;
  EXPECT_EQ(should_stop(rule, 9, 0.1, 0.0), StopReason::kContinue);
  EXPECT_EQ(should_stop(rule, 10, 0.1, 0.0), StopReason::kConverged);
}

TEST(ShouldStop, ConvergesAtTheTargetWidthInclusive) {
  StoppingRule rule;
  EXPECT_EQ(should_stop(rule, 10, 0.1, 0.01), StopReason::kConverged);
  EXPECT_EQ(should_stop(rule, 10, 0.1, 0.0101), StopReason::kContinue);
  EXPECT_EQ(should_stop(rule, 10, 0.1, INFINITY), StopReason::kContinue);
}

TEST(ShouldStop, TimeCapStopsAWideInterval) {
  StoppingRule rule;
  EXPECT_EQ(should_stop(rule, 3, 14.9, 0.5), StopReason::kContinue);
  EXPECT_EQ(should_stop(rule, 3, 15.0, 0.5), StopReason::kTimeCap);
  // Convergence is reported as such even past the cap.
  EXPECT_EQ(should_stop(rule, 10, 20.0, 0.001), StopReason::kConverged);
}

TEST(ShouldStop, TimeCapNeedsTwoRoundsForAnyInterval) {
  StoppingRule rule;
  EXPECT_EQ(should_stop(rule, 1, 100.0, INFINITY), StopReason::kContinue);
  EXPECT_EQ(should_stop(rule, 2, 100.0, INFINITY), StopReason::kTimeCap);
}

TEST(ShouldStop, MaxRoundsStopsBeforeTheCap) {
  StoppingRule rule;
  rule.max_rounds = 50;
  EXPECT_EQ(should_stop(rule, 49, 1.0, 0.5), StopReason::kContinue);
  EXPECT_EQ(should_stop(rule, 50, 1.0, 0.5), StopReason::kMaxRounds);
}

}  // namespace
}  // namespace kb
