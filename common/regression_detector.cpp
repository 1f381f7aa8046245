#include "common/regression_detector.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "common/hypothesis_tests.h"
#include "common/statistics.h"

namespace kb {
namespace {

std::vector<double> recent_logs(const std::vector<double>& history_ms, int history_points) {
  const size_t keep = std::min(history_ms.size(), static_cast<size_t>(std::max(history_points, 0)));
  std::vector<double> logs;
  logs.reserve(keep);
  for (size_t i = history_ms.size() - keep; i < history_ms.size(); ++i) {
    if (history_ms[i] > 0) logs.push_back(std::log(history_ms[i]));
  }
  return logs;
}

// The per-test level: alpha / m for Bonferroni; for BH the step-up threshold alpha * R / m at the
// number R of rejections (alpha / m when nothing is rejected).
double per_test_level(const std::vector<PointDecision>& decisions, const RegressionConfig& config,
                      int checked) {
  if (config.correction == MultipleTestCorrection::kBonferroni) return config.alpha / checked;
  int rejected = 0;
  for (const PointDecision& d : decisions) {
    if (d.checked && d.adjusted_p <= config.alpha) ++rejected;
  }
  return config.alpha * std::max(rejected, 1) / checked;
}

}  // namespace

std::vector<PointDecision> check_points(const std::vector<SeriesCheck>& points,
                                        const RegressionConfig& config) {
  std::vector<PointDecision> decisions(points.size());
  std::vector<std::vector<double>> logs(points.size());
  std::vector<double> p_values;
  std::vector<size_t> checked_index;
  for (size_t i = 0; i < points.size(); ++i) {
    logs[i] = recent_logs(points[i].history_ms, config.history_points);
    if (static_cast<int>(logs[i].size()) < std::max(config.min_history, 2) ||
        points[i].median_ms <= 0) {
      continue;
    }
    PointDecision& d = decisions[i];
    d.checked = true;
    d.p_value = prediction_p_value_above(logs[i], std::log(points[i].median_ms),
                                         config.min_log_stddev);
    p_values.push_back(d.p_value);
    checked_index.push_back(i);
  }
  const int m = static_cast<int>(checked_index.size());
  if (m == 0) return decisions;
  const std::vector<double> q = benjamini_hochberg(p_values);
  for (size_t k = 0; k < checked_index.size(); ++k) {
    PointDecision& d = decisions[checked_index[k]];
    d.adjusted_p = config.correction == MultipleTestCorrection::kBonferroni
                       ? std::min(1.0, d.p_value * m)
                       : q[k];
  }
  const double level = per_test_level(decisions, config, m);
  std::map<size_t, double> t_by_count;  // the quantile costs a root search: once per history size
  for (size_t i : checked_index) {
    PointDecision& d = decisions[i];
    const SampleSummary s = summarize(logs[i]);
    const double n = static_cast<double>(s.count);
    auto [it, inserted] = t_by_count.try_emplace(logs[i].size(), 0.0);
    if (inserted) it->second = student_t_quantile(1 - level, n - 1);
    const double sd = std::max(s.stddev, config.min_log_stddev);
    d.baseline_ms = std::exp(s.mean);
    d.bound_ms = std::exp(s.mean + it->second * sd * std::sqrt(1 + 1 / n));
    d.ratio = points[i].median_ms / d.baseline_ms;
    d.flagged = d.adjusted_p <= config.alpha && d.ratio > 1 + config.practical_threshold;
  }
  return decisions;
}

std::string to_string(FlagState state) {
  switch (state) {
    case FlagState::kFlagged: return "flagged";
    case FlagState::kConfirmed: return "confirmed";
    case FlagState::kCleared: return "cleared";
  }
  return "flagged";
}

FlagState flag_state_from_string(const std::string& name) {
  if (name == "confirmed") return FlagState::kConfirmed;
  if (name == "cleared") return FlagState::kCleared;
  return FlagState::kFlagged;
}

double slow_bound_ms(const PointDecision& decision, const RegressionConfig& config) {
  return std::max(decision.bound_ms, decision.baseline_ms * (1 + config.practical_threshold));
}

FlagProgress advance_flag(const FlagProgress& flag, double median_ms,
                          const RegressionConfig& config) {
  FlagProgress next = flag;
  if (flag.state == FlagState::kCleared) return next;
  if (median_ms <= flag.slow_bound_ms) {
    next.state = FlagState::kCleared;
    next.slow_points = 0;
    return next;
  }
  next.slow_points = flag.slow_points + 1;
  if (next.slow_points >= config.confirm_points) next.state = FlagState::kConfirmed;
  return next;
}

}  // namespace kb
