// The regression detector (docs/design.md#regressions): decides, for a batch of new points of
// different series, which points are slower than their series' recent history beyond noise, and
// moves earlier flags on as later points of their series arrive.
//
// A series is (problem, GPU model, variant, preset); its points are medians in ms ordered by
// commit. A new point is FLAGGED when both
//   1. its log median lies above the one-sided t prediction bound of the series' last
//      `history_points` log medians, at a level corrected for the number m of points checked in the
//      batch (Bonferroni: alpha / m each; or Benjamini–Hochberg at FDR alpha), and
//   2. it is slower than the history's geometric mean by more than `practical_threshold`.
// A flag then moves on with each later point of its series: a point above the flag's
// `slow_bound_ms` (the larger of the bound and baseline * (1 + threshold)) keeps it; once
// `confirm_points` points in a row (the flagged one included) were slow it is CONFIRMED; a point
// back below the bound CLEARS a flagged or confirmed regression.
//
// Pure: no I/O (coordinator/regression_store.h loads series and stores flags).
// Thread safety: pure functions.
#pragma once

#include <string>
#include <vector>

namespace kb {

enum class MultipleTestCorrection { kBonferroni, kBenjaminiHochberg };

struct RegressionConfig {
  int history_points = 30;  // the recent history a new point is compared with
  int min_history = 10;     // fewer points: the point is not checked
  double alpha = 0.05;      // family-wise (Bonferroni) or FDR (BH) level over one batch
  MultipleTestCorrection correction = MultipleTestCorrection::kBonferroni;
  double practical_threshold = 0.01;  // 1%: smaller slowdowns are never flagged
  int confirm_points = 3;             // slow points in a row that confirm a flag
  double min_log_stddev = 0.001;      // floor on the history's noise (0.1%)
};

// One new point to check: the medians (ms, > 0) of its series before it, oldest first (only the
// last `history_points` are used), and its own median.
struct SeriesCheck {
  std::vector<double> history_ms;
  double median_ms = 0;
};

struct PointDecision {
  bool checked = false;  // enough history and a positive median
  bool flagged = false;
  double ratio = 0;        // median / geometric mean of the history
  double baseline_ms = 0;  // geometric mean of the history
  double bound_ms = 0;     // the upper prediction bound at the corrected level
  double p_value = 1;      // one-sided, before correction
  double adjusted_p = 1;   // Bonferroni (p * m, capped at 1) or BH q-value
};

// Decides every point of one batch (m = the number of checked points). Decisions are in input order.
std::vector<PointDecision> check_points(const std::vector<SeriesCheck>& points,
                                        const RegressionConfig& config);

enum class FlagState { kFlagged, kConfirmed, kCleared };
std::string to_string(FlagState state);
// kFlagged for an unknown name.
FlagState flag_state_from_string(const std::string& name);

struct FlagProgress {
  FlagState state = FlagState::kFlagged;
  double slow_bound_ms = 0;  // slower than this counts as "still slow"
  int slow_points = 1;       // slow points in a row, the flagged one included
};

// The bound later points are held to: max(bound_ms, baseline_ms * (1 + practical_threshold)).
double slow_bound_ms(const PointDecision& decision, const RegressionConfig& config);

// Moves a flag on by one later point of its series. A cleared flag stays cleared.
FlagProgress advance_flag(const FlagProgress& flag, double median_ms,
                          const RegressionConfig& config);

}  // namespace kb
