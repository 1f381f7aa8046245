// The table and verdicts of `kb bench --sweep N` (shapes: common/shape_sweep.h): each shape's
// reference and custom times, and per problem the worst speedup against issue 15's goal; the
// sweep's JSON (`--json-out`) both ways, and two sweeps side by side (`kb sweep-table`).
//
// Thread safety: pure functions.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/job_result.h"
#include "common/shape_sweep.h"
#include "common/status.h"

namespace kb::cli {

// One job of a sweep: a shape and what the executor made of it.
struct SweepRow {
  std::string problem_id;
  std::string dims;  // dims_argument
  SweepShape shape;
  JobResult result;
};

// The sweep's goal (issue 15): at every shape the custom is >= 0.9x the reference, and >= 1.2x at
// shapes with >= 25% of the full preset's FLOPs. A job that did not end ok misses it.
constexpr double kSweepMinSpeedup = 0.9;
constexpr double kSweepLargeShare = 0.25;
constexpr double kSweepLargeMinSpeedup = 1.2;

struct SweepVerdict {
  std::string problem_id;
  int shapes = 0, failed = 0;
  double worst = 0;  // the lowest speedup over the ok shapes (0: none ok)
  std::string worst_dims;
  double worst_large = 0;  // the lowest speedup over ok shapes with >= 25% of the FLOPs (0: none)
  int large_shapes = 0;
  bool meets_goal = false;
};

// One verdict per problem, in the rows' order of first appearance.
std::vector<SweepVerdict> sweep_verdicts(const std::vector<SweepRow>& rows);

// The text tables: every row, then the verdict per problem and the count meeting the goal.
std::string sweep_text(const std::vector<SweepRow>& rows);

// The "rows" array of a sweep's JSON file: per row problem_id, dims (dims_argument), flop_share,
// large and the job's result (common/job_result.h's JSON). from_json fails, naming the row, on a
// row without them or with dims that do not parse.
nlohmann::json sweep_rows_to_json(const std::vector<SweepRow>& rows);
Result<std::vector<SweepRow>> sweep_rows_from_json(const nlohmann::json& rows);

// Two sweeps per problem, in `before`'s order then any new in `after`'s: shapes, worst speedup,
// worst at >= 25% of the FLOPs and the goal, before -> after, and whether the two drew the same
// shapes (same seed and count: a like-for-like comparison) or not. Then, for each goal that
// flipped over the same shapes, the shape that decides it (the missing side's row furthest under
// its threshold) with both sweeps' reference and custom medians and which of them moved (more
// than 15% and more than twice the other's change, in log terms; else "both moved").
std::string sweep_comparison_text(const std::vector<SweepRow>& before,
                                  const std::vector<SweepRow>& after);

}  // namespace kb::cli
