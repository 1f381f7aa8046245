// The figures under a run's results table (`kb results`, `kb submit --wait`): per GPU model and
// overall, how many jobs were correct, fast_p and the geometric-mean speedup.
//
//   correct   jobs whose result status is `ok`
//   fast_p    (correct AND speedup > p) / all jobs of the run (KernelBench's fast_p: a job with
//             no result, a failed or a cancelled one counts against it); p = 1 and p = 1.2
//   geomean   exp(mean(log speedup)) over the correct results that have a speedup
//
// Thread safety: pure functions over values.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cli/results_reader.h"

namespace kb::cli {

struct ModelSummary {
  std::string gpu_model;  // "" for the overall line
  int64_t jobs = 0, with_result = 0, correct = 0, failed = 0;
  double fast_1 = 0, fast_1_2 = 0;
  std::optional<double> geomean_speedup;
};

struct ResultsSummary {
  ModelSummary overall;
  std::vector<ModelSummary> per_model;  // sorted by model name
};

ResultsSummary summarize_results(const std::vector<ResultRow>& rows);

}  // namespace kb::cli
