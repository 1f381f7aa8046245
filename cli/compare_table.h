// `kb compare`'s table: pairs the results of two selectors (two commits or runs, or two GPU
// models at one commit) problem by problem and judges each pair.
//
// Pairs are keyed by (problem, GPU model, preset), or by (problem, preset) when the GPU models
// differ on purpose (`--commit X --gpus A,B`). For each pair with status ok on both sides:
// base and head medians, the change head/base with its 95% interval (ratio_of_medians), a
// two-sided Mann–Whitney U test on the raw samples, its Benjamini–Hochberg q over all the pairs
// tested, and classify_change's verdict. A pair whose status changed (ok -> mismatch, ...) gets
// verdict "status"; a problem on one side only gets "added" or "removed"; one failing alike on
// both sides gets "failed" ("ambiguous" when ok but without samples). Rows: status changes
// first, then added/removed, then by problem.
//
// Thread safety: pure functions.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "cli/history_reader.h"
#include "common/hypothesis_tests.h"

namespace kb::cli {

struct CompareOptions {
  double alpha = 0.05;       // FDR level of the verdicts
  double threshold = 0.01;   // practical band: changes within ±1% are "same"
  bool key_includes_gpu = true;
};

struct CompareRow {
  std::string problem, preset, base_gpu, head_gpu;
  std::string base_status, head_status;  // "" when that side has no result
  std::optional<double> base_median_ms, head_median_ms;
  RatioEstimate change;  // head / base
  double p_value = 1, q_value = 1;
  bool tested = false;
  std::string verdict;  // faster|slower|same|ambiguous|status|added|removed|failed
};

std::vector<CompareRow> compare_results(const std::vector<HistoryPoint>& base,
                                        const std::vector<HistoryPoint>& head,
                                        const CompareOptions& options);

}  // namespace kb::cli
