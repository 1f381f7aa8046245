// What `kb history`, `kb compare` and `kb regressions` print with --json, and what the
// dashboard's history, compare and regressions pages show and answer with ?format=json: one
// function per document, so the CLI and the pages carry the same numbers.
//
//   series_json      a series' points (median, 95% interval of the median, speedup, status,
//                    flagged) and its regressions, each with the commit range that holds the
//                    change: from the series' previous point (exclusive) to the flagged one;
//   compare_json     one row of compare_results (change and interval as head/base - 1);
//   regression_json  one flagged / confirmed / cleared regression.
//
// Thread safety: pure functions.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

#include "cli/compare_table.h"
#include "cli/history_reader.h"

namespace kb::cli {

nlohmann::json optional_number(const std::optional<double>& v);  // null when absent

// The commits between which a flagged point's series changed: (from_commit, to_commit].
struct RegressionRange {
  const RegressionRow* regression = nullptr;
  std::string from_commit;  // the previous point's commit ("" when the flag is the first point)
  std::string to_commit;    // the flagged point's commit
};
// The regressions of `flags` that flag a point of `series` (same variant), oldest point first.
std::vector<RegressionRange> regression_ranges(const Series& series,
                                               const std::vector<RegressionRow>& flags);
bool is_flagged(const HistoryPoint& point, const Series& series,
                const std::vector<RegressionRow>& flags);

// `kb compare`'s two forms: BASE HEAD (commits, prefixes or run:N; optionally one GPU model), or
// one commit on two GPU models (`commit` with `gpus` "A,B"). kInvalidArgument for a malformed
// request; the reader's errors otherwise.
struct CompareRequest {
  std::string base, head, gpu, commit, gpus, variant = "custom";
  CompareOptions options;
};
struct CompareView {
  std::string title;  // "base X vs head Y" or "commit X: A (base) vs B (head)"
  std::vector<CompareRow> rows;
};
Result<CompareView> compare_view(HistoryReader& reader, CompareRequest request);

nlohmann::json series_json(const Series& series, const std::vector<RegressionRow>& flags);
nlohmann::json compare_json(const CompareRow& row);
nlohmann::json regression_json(const RegressionRow& regression);

}  // namespace kb::cli
