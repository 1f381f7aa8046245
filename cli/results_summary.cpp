#include "cli/results_summary.h"

#include <cmath>
#include <map>

namespace kb::cli {
namespace {

struct Accumulator {
  ModelSummary summary;
  int64_t faster_1 = 0, faster_1_2 = 0, logs = 0;
  double log_sum = 0;

  void add(const ResultRow& row) {
    ++summary.jobs;
    summary.with_result += !row.status.empty();
    summary.failed += row.job_state == "failed";
    if (row.status != "ok") return;
    ++summary.correct;
    if (!row.speedup || !(*row.speedup > 0)) return;
    faster_1 += *row.speedup > 1.0;
    faster_1_2 += *row.speedup > 1.2;
    log_sum += std::log(*row.speedup);
    ++logs;
  }

  ModelSummary finish() const {
    ModelSummary s = summary;
    const double n = static_cast<double>(s.jobs);
    s.fast_1 = s.jobs > 0 ? static_cast<double>(faster_1) / n : 0.0;
    s.fast_1_2 = s.jobs > 0 ? static_cast<double>(faster_1_2) / n : 0.0;
    if (logs > 0) s.geomean_speedup = std::exp(log_sum / static_cast<double>(logs));
    return s;
  }
};

}  // namespace

ResultsSummary summarize_results(const std::vector<ResultRow>& rows) {
  Accumulator overall;
  std::map<std::string, Accumulator> per_model;
  for (const ResultRow& row : rows) {
    overall.add(row);
    Accumulator& model = per_model[row.gpu_model];
    model.summary.gpu_model = row.gpu_model;
    model.add(row);
  }
  ResultsSummary summary;
  summary.overall = overall.finish();
  for (const auto& [name, accumulator] : per_model) summary.per_model.push_back(accumulator.finish());
  return summary;
}

}  // namespace kb::cli
