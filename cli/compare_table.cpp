#include "cli/compare_table.h"

#include <algorithm>
#include <map>
#include <tuple>

namespace kb::cli {
namespace {

using Key = std::tuple<std::string, std::string, std::string>;  // problem, gpu or "", preset

Key key_of(const HistoryPoint& p, bool with_gpu) {
  return {p.problem, with_gpu ? p.gpu_model : "", p.preset};
}

int row_rank(const CompareRow& r) {
  if (r.verdict == "status") return 0;
  if (r.verdict == "added" || r.verdict == "removed") return 1;
  return 2;
}

void fill_side(CompareRow& row, const HistoryPoint& p, bool base) {
  (base ? row.base_gpu : row.head_gpu) = p.gpu_model;
  (base ? row.base_status : row.head_status) = p.status;
  (base ? row.base_median_ms : row.head_median_ms) = p.median_ms;
}

}  // namespace

std::vector<CompareRow> compare_results(const std::vector<HistoryPoint>& base,
                                        const std::vector<HistoryPoint>& head,
                                        const CompareOptions& options) {
  std::map<Key, std::pair<const HistoryPoint*, const HistoryPoint*>> pairs;
  for (const HistoryPoint& p : base) pairs[key_of(p, options.key_includes_gpu)].first = &p;
  for (const HistoryPoint& p : head) pairs[key_of(p, options.key_includes_gpu)].second = &p;
  std::vector<CompareRow> rows;
  std::vector<size_t> tested;
  std::vector<double> p_values;
  for (const auto& [key, pair] : pairs) {
    CompareRow row;
    row.problem = std::get<0>(key);
    row.preset = std::get<2>(key);
    if (pair.first) fill_side(row, *pair.first, true);
    if (pair.second) fill_side(row, *pair.second, false);
    if (!pair.first || !pair.second) {
      row.verdict = pair.first ? "removed" : "added";
    } else if (row.base_status != row.head_status) {
      row.verdict = "status";
    } else if (row.base_status == "ok" && !pair.first->samples_ms.empty() &&
               !pair.second->samples_ms.empty()) {
      row.change = ratio_of_medians(pair.first->samples_ms, pair.second->samples_ms);
      row.p_value = mann_whitney_u(pair.second->samples_ms, pair.first->samples_ms).p_value;
      row.tested = true;
      tested.push_back(rows.size());
      p_values.push_back(row.p_value);
    } else {
      row.verdict = row.base_status == "ok" ? "ambiguous" : "failed";  // no samples / both failed
    }
    rows.push_back(std::move(row));
  }
  const std::vector<double> q = benjamini_hochberg(p_values);
  for (size_t k = 0; k < tested.size(); ++k) {
    CompareRow& row = rows[tested[k]];
    row.q_value = q[k];
    row.verdict = to_string(classify_change(row.change, row.q_value, options.alpha,
                                            options.threshold));
  }
  std::stable_sort(rows.begin(), rows.end(), [](const CompareRow& a, const CompareRow& b) {
    return row_rank(a) < row_rank(b);
  });
  return rows;
}

}  // namespace kb::cli
