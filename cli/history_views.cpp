#include "cli/history_views.h"

#include "common/hypothesis_tests.h"

namespace kb::cli {

nlohmann::json optional_number(const std::optional<double>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json();
}

bool is_flagged(const HistoryPoint& point, const Series& series,
                const std::vector<RegressionRow>& flags) {
  for (const RegressionRow& g : flags) {
    if (g.result_id == point.result_id && g.variant == series.variant) return true;
  }
  return false;
}

std::vector<RegressionRange> regression_ranges(const Series& series,
                                               const std::vector<RegressionRow>& flags) {
  std::vector<RegressionRange> ranges;
  for (size_t i = 0; i < series.points.size(); ++i) {
    for (const RegressionRow& g : flags) {
      if (g.result_id != series.points[i].result_id || g.variant != series.variant) continue;
      ranges.push_back(
          {&g, i > 0 ? series.points[i - 1].commit_sha : "", series.points[i].commit_sha});
    }
  }
  return ranges;
}

nlohmann::json series_json(const Series& s, const std::vector<RegressionRow>& flags) {
  nlohmann::json points = nlohmann::json::array();
  for (const HistoryPoint& p : s.points) {
    const bool sampled = !p.samples_ms.empty();
    const MedianInterval mi = median_interval(p.samples_ms);
    points.push_back({{"result_id", p.result_id},
                      {"run_id", p.run_id},
                      {"commit", p.commit_sha},
                      {"branch", p.branch},
                      {"time", p.time_s},
                      {"status", p.status},
                      {"median_ms", optional_number(p.median_ms)},
                      {"ci_low_ms", sampled ? nlohmann::json(mi.low) : nlohmann::json()},
                      {"ci_high_ms", sampled ? nlohmann::json(mi.high) : nlohmann::json()},
                      {"speedup", optional_number(p.speedup)},
                      {"flagged", is_flagged(p, s, flags)}});
  }
  nlohmann::json regressions = nlohmann::json::array();
  for (const RegressionRange& r : regression_ranges(s, flags)) {
    nlohmann::json j = regression_json(*r.regression);
    j["from_commit"] = r.from_commit;
    j["to_commit"] = r.to_commit;
    regressions.push_back(std::move(j));
  }
  return {{"problem", s.problem}, {"gpu_model", s.gpu_model}, {"preset", s.preset},
          {"variant", s.variant}, {"points", points},         {"regressions", regressions}};
}

Result<CompareView> compare_view(HistoryReader& reader, CompareRequest o) {
  CompareView view;
  Result<std::vector<HistoryPoint>> base = std::vector<HistoryPoint>{}, head = base;
  if (!o.commit.empty()) {
    const size_t comma = o.gpus.find(',');
    if (comma == std::string::npos || comma == 0 || comma + 1 >= o.gpus.size()) {
      return Status::invalid_argument("--commit wants --gpus A,B (two GPU models)");
    }
    const std::string a = o.gpus.substr(0, comma), b = o.gpus.substr(comma + 1);
    base = reader.results_at(o.commit, a, o.variant);
    head = reader.results_at(o.commit, b, o.variant);
    o.options.key_includes_gpu = false;
    view.title = "commit " + o.commit + ": " + a + " (base) vs " + b + " (head)";
  } else {
    if (o.base.empty() || o.head.empty()) {
      return Status::invalid_argument("compare wants BASE HEAD or --commit");
    }
    base = reader.results_at(o.base, o.gpu, o.variant);
    head = reader.results_at(o.head, o.gpu, o.variant);
    view.title = "base " + o.base + " vs head " + o.head;
  }
  if (!base.is_ok()) return base.status();
  if (!head.is_ok()) return head.status();
  view.rows = compare_results(base.value(), head.value(), o.options);
  return view;
}

nlohmann::json compare_json(const CompareRow& r) {
  const bool t = r.tested;
  return {{"problem", r.problem},
          {"preset", r.preset},
          {"base_gpu", r.base_gpu},
          {"head_gpu", r.head_gpu},
          {"base_status", r.base_status},
          {"head_status", r.head_status},
          {"base_median_ms", optional_number(r.base_median_ms)},
          {"head_median_ms", optional_number(r.head_median_ms)},
          {"change", t ? nlohmann::json(r.change.ratio - 1) : nlohmann::json()},
          {"ci_low", t ? nlohmann::json(r.change.ci_low - 1) : nlohmann::json()},
          {"ci_high", t ? nlohmann::json(r.change.ci_high - 1) : nlohmann::json()},
          {"p_value", t ? nlohmann::json(r.p_value) : nlohmann::json()},
          {"q_value", t ? nlohmann::json(r.q_value) : nlohmann::json()},
          {"verdict", r.verdict}};
}

nlohmann::json regression_json(const RegressionRow& g) {
  return {{"id", g.id},
          {"result_id", g.result_id},
          {"run_id", g.run_id},
          {"problem", g.problem},
          {"gpu_model", g.gpu_model},
          {"variant", g.variant},
          {"preset", g.preset},
          {"commit", g.commit_sha},
          {"state", g.state},
          {"median_ms", g.median_ms},
          {"baseline_ms", g.baseline_ms},
          {"ratio", g.ratio},
          {"bound_ms", g.bound_ms},
          {"p_value", g.p_value},
          {"adjusted_p", g.adjusted_p},
          {"slow_points", g.slow_points},
          {"created", g.created_s},
          {"updated", g.updated_s}};
}

}  // namespace kb::cli
