// The timing statistics: sample summaries, Student's t quantiles, the speedup estimate with its
// 95% interval (including a seeded Monte Carlo of its coverage) and the timing loop's stopping
// rule.
#include "common/statistics.h"

#include <gtest/gtest.h>

#include <cmath>
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

TEST(EstimateSpeedup, NoiselessTwiceAsFastHasAPointInterval) {
  std::vector<double> ref(20, 2.0), custom(20, 1.0), ratios(10, 2.0);
  SpeedupEstimate e = estimate_speedup(ref, custom, ratios);
  EXPECT_DOUBLE_EQ(e.speedup, 2.0);
  EXPECT_DOUBLE_EQ(e.ci_low, 2.0);
  EXPECT_DOUBLE_EQ(e.ci_high, 2.0);
  EXPECT_DOUBLE_EQ(e.relative_half_width, 0.0);
}

TEST(EstimateSpeedup, KnownSpreadGivesTheTInterval) {
  // log ratios ln2 + {-d, +d}: mean ln2, sample stddev d*sqrt(2), se = d; t(1) = 12.7062.
  const double d = 0.01;
  std::vector<double> ratios = {2.0 * std::exp(-d), 2.0 * std::exp(d)};
  SpeedupEstimate e = estimate_speedup({2.0, 2.0}, {1.0, 1.0}, ratios);
  const double half = 12.7062 * d;
  EXPECT_DOUBLE_EQ(e.speedup, 2.0);
  EXPECT_NEAR(e.ci_low, 2.0 * std::exp(-half), 1e-9);
  EXPECT_NEAR(e.ci_high, 2.0 * std::exp(half), 1e-9);
  EXPECT_NEAR(e.relative_half_width, std::exp(half) - 1, 1e-9);
}

TEST(EstimateSpeedup, FewerThanTwoRoundsIsUnbounded) {
  SpeedupEstimate e = estimate_speedup({2.0, 2.0}, {1.0, 1.0}, {2.0});
  EXPECT_DOUBLE_EQ(e.speedup, 2.0);
  EXPECT_EQ(e.ci_low, 0);
  EXPECT_TRUE(std::isinf(e.ci_high));
  EXPECT_TRUE(std::isinf(e.relative_half_width));
}

TEST(EstimateSpeedup, NoCustomSamplesIsZeroAndUnbounded) {
  SpeedupEstimate e = estimate_speedup({2.0, 2.0}, {}, {2.0, 2.0});
  EXPECT_EQ(e.speedup, 0);
  EXPECT_TRUE(std::isinf(e.ci_high));
}

// One simulated timing run: `rounds` rounds of A B B A, every sample true_ms * lognormal noise.
struct Simulated {
  std::vector<double> ref, custom, ratios;
};

Simulated simulate(std::mt19937_64& rng, int rounds, double ref_ms, double custom_ms, double sigma) {
  std::lognormal_distribution<double> noise(0.0, sigma);
  Simulated s;
  for (int r = 0; r < rounds; ++r) {
    const double a1 = ref_ms * noise(rng), b1 = custom_ms * noise(rng);
    const double b2 = custom_ms * noise(rng), a2 = ref_ms * noise(rng);
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
  // 16x the rounds: about a quarter of the width (and t(9) > t(159) narrows it further).
  EXPECT_LT(many_half, 0.4 * few_half);
}

// The fraction of `experiments` seeded A/A runs (truth 1.0, 1% log-normal noise per sample) whose
// 95% interval contains 1.0.
double aa_coverage(int rounds, int experiments, uint64_t seed) {
  std::mt19937_64 rng(seed);
  int covered = 0;
  for (int i = 0; i < experiments; ++i) {
    Simulated s = simulate(rng, rounds, 1.0, 1.0, 0.01);
    SpeedupEstimate e = estimate_speedup(s.ref, s.custom, s.ratios);
    if (e.ci_low <= 1.0 && 1.0 <= e.ci_high) ++covered;
  }
  return static_cast<double>(covered) / experiments;
}

// At the minimum round count (where a job with ~1% noise converges) the interval holds the truth
// about 95% of the time.
TEST(EstimateSpeedup, CoversTheTruthInAbout95PercentAtTheMinimumRounds) {
  const double coverage = aa_coverage(10, 400, 2024);
  EXPECT_GE(coverage, 0.90);
  EXPECT_LE(coverage, 0.99);
}

// Regression: the interval was once centred on the ratio of medians while its width came from the
// per-round ratios of means. The median of Gaussian-like noise is ~sqrt(pi/2) times noisier than
// the mean, so coverage fell to ~88% with many rounds (90% at 10). Centred on the rounds' own
// geometric mean it stays at ~95% however many rounds there are.
TEST(EstimateSpeedup, CoverageHoldsWithManyRounds) {
  const double coverage = aa_coverage(60, 400, 2025);
  EXPECT_GE(coverage, 0.90);
  EXPECT_LE(coverage, 0.99);
}

TEST(EstimateSpeedup, IntervalIsCentredOnTheRoundsGeometricMean) {
  // Ratio of medians 2.0; the rounds say sqrt(1.9 * 2.1) = 1.99750...
  SpeedupEstimate e = estimate_speedup({2.0, 2.0, 2.0}, {1.0, 1.0, 1.0}, {1.9, 2.1});
  EXPECT_DOUBLE_EQ(e.speedup, 2.0);
  EXPECT_NEAR(std::sqrt(e.ci_low * e.ci_high), std::sqrt(1.9 * 2.1), 1e-12);
  EXPECT_NEAR(e.relative_half_width, e.ci_high / std::sqrt(1.9 * 2.1) - 1, 1e-12);
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
