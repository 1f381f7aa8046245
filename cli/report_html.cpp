#include "cli/report_html.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

namespace kb::cli {
namespace {

constexpr const char* kCss = R"css(
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px;color:#1d2330;
background:#fff}h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px;
border-bottom:1px solid #dde;padding-bottom:4px}.scope{color:#667;margin-bottom:16px}
table{border-collapse:collapse;font-size:13px}th,td{padding:4px 10px;border-bottom:1px solid #eef;
text-align:right}th{background:#f4f6fa}td.l,th.l{text-align:left}.grid{display:flex;flex-wrap:wrap;
gap:12px}.card{border:1px solid #dde;border-radius:6px;padding:8px 10px;width:380px}
.card h3{font-size:13px;margin:0 0 4px;font-family:monospace}.meta{font-size:12px;color:#556}
.bad{color:#b3261e;font-weight:600}.good{color:#1b7f3b;font-weight:600}svg text{font-size:10px;
fill:#445;font-family:sans-serif}
)css";

std::string short_sha(const std::string& sha) {
  return sha.substr(0, 10);
}

std::string summary_table(const ResultsSummary& s) {
  std::string out =
      "<table><tr><th class=l>GPU model</th><th>jobs</th><th>correct</th><th>fast_1</th>"
      "<th>fast_1.2</th><th>geomean speedup</th></tr>";
  auto line = [&](const ModelSummary& m, const std::string& name) {
    out += "<tr><td class=l>" + html_escape(name) + "</td><td>" + std::to_string(m.jobs) +
           "</td><td>" + std::to_string(m.correct) + "</td><td>" + format_number("%.3f", m.fast_1) +
           "</td><td>" + format_number("%.3f", m.fast_1_2) + "</td><td>" +
           format_optional(m.geomean_speedup, "%.3f×") + "</td></tr>";
  };
  for (const ModelSummary& m : s.per_model) line(m, m.gpu_model);
  if (s.per_model.size() != 1) line(s.overall, "all");
  return out + "</table>";
}

// Horizontal bars, one per problem: value / scale of the width, with a reference line at `mark`.
std::string bar_chart(const std::vector<std::pair<std::string, double>>& bars, double scale,
                      double mark, const char* value_format, const std::string& css_class) {
  const int row = 16, label_w = 180, bar_w = 240, width = label_w + bar_w + 70;
  const int height = row * static_cast<int>(bars.size()) + 8;
  std::string out = "<svg class=\"" + css_class + "\" width=\"" + std::to_string(width) +
                    "\" height=\"" + std::to_string(height) + "\" role=\"img\">";
  for (size_t i = 0; i < bars.size(); ++i) {
    const double y = 4 + row * static_cast<double>(i);
    const double w = std::clamp(bars[i].second / scale, 0.0, 1.0) * bar_w;
    const bool below = bars[i].second < mark;
    out += "<text x=\"0\" y=\"" + format_number("%.0f", y + 11) + "\">" +
           html_escape(bars[i].first) + "</text><rect x=\"" + std::to_string(label_w) + "\" y=\"" +
           format_number("%.0f", y + 2) + "\" width=\"" + format_number("%.1f", w) +
           "\" height=\"11\" fill=\"" + (below ? "#d9822b" : "#3b7dd8") + "\"/><text x=\"" +
           format_number("%.1f", label_w + w + 4) + "\" y=\"" + format_number("%.0f", y + 11) +
           "\">" + format_number(value_format, bars[i].second) + "</text>";
  }
  const double mx = label_w + std::clamp(mark / scale, 0.0, 1.0) * bar_w;
  out += "<line x1=\"" + format_number("%.1f", mx) + "\" x2=\"" + format_number("%.1f", mx) +
         "\" y1=\"0\" y2=\"" + std::to_string(height) +
         "\" stroke=\"#223\" stroke-dasharray=\"3,2\"/></svg>";
  return out;
}

std::string problem_card(const ReportProblem& p) {
  std::string out = "<div class=card><h3>" + html_escape(p.problem) + "</h3><div class=meta>" +
                    html_escape(p.gpu_model + " · " + p.preset + " · " + short_sha(p.commit_sha)) +
                    " · <span class=" + (p.status == "ok" ? "good" : "bad") + ">" +
                    html_escape(p.status) + "</span> · speedup " +
                    format_optional(p.speedup, "%.3f×");
  if (p.speedup_ci_low && p.speedup_ci_high) {
    out += " [" + format_number("%.3f", *p.speedup_ci_low) + ", " +
           format_number("%.3f", *p.speedup_ci_high) + "]";
  }
  out += " · floor " + format_optional(p.floor_fraction(), "%.2f") + " · fp32-FMA roofline " +
         format_optional(p.roofline_fraction(), "%.2f") + "</div>";
  return out + render_history_chart(p.history) + "</div>";
}

std::string regressions_table(const std::vector<RegressionRow>& rows) {
  if (rows.empty()) return "<p>No flagged regressions.</p>";
  std::string out =
      "<table class=regressions><tr><th class=l>problem</th><th class=l>GPU model</th>"
      "<th class=l>variant</th><th class=l>commit</th><th>median ms</th><th>baseline ms</th>"
      "<th>slower</th><th>p</th><th class=l>state</th></tr>";
  for (const RegressionRow& g : rows) {
    out += "<tr><td class=l>" + html_escape(g.problem) + "</td><td class=l>" +
           html_escape(g.gpu_model) + "</td><td class=l>" + html_escape(g.variant) +
           "</td><td class=l>" + html_escape(short_sha(g.commit_sha)) + "</td><td>" +
           format_number("%.4g", g.median_ms) + "</td><td>" + format_number("%.4g", g.baseline_ms) +
           "</td><td class=bad>" + format_number("%+.1f%%", (g.ratio - 1) * 100) + "</td><td>" +
           format_number("%.2g", g.adjusted_p) + "</td><td class=l>" + html_escape(g.state) +
           "</td></tr>";
  }
  return out + "</table>";
}

}  // namespace

std::optional<double> ReportProblem::floor_fraction() const {
  if (!hard_floor_ms || !custom_median_ms || *custom_median_ms <= 0) return std::nullopt;
  return *hard_floor_ms / *custom_median_ms;
}

std::optional<double> ReportProblem::roofline_fraction() const {
  if (!floor_ms || !custom_median_ms || *custom_median_ms <= 0) return std::nullopt;
  return *floor_ms / *custom_median_ms;
}

std::string format_number(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

std::string format_optional(const std::optional<double>& v, const char* format) {
  return v ? format_number(format, *v) : "–";
}

std::string html_escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string render_report_html(const ReportData& d) {
  std::string out = "<!DOCTYPE html><html lang=en><head><meta charset=utf-8><title>" +
                    html_escape(d.title) + "</title><style>" + kCss + "</style></head><body><h1>" +
                    html_escape(d.title) + "</h1><div class=scope>" + html_escape(d.scope) +
                    " · generated " + html_escape(d.generated_at) + "</div>";
  out += "<h2>Summary</h2>" + summary_table(d.summary);
  std::map<std::string, std::vector<const ReportProblem*>> by_model;
  for (const ReportProblem& p : d.problems) by_model[p.gpu_model].push_back(&p);
  for (const auto& [model, problems] : by_model) {
    std::vector<std::pair<std::string, double>> speedups, floors;
    double max_speedup = 1;
    for (const ReportProblem* p : problems) {
      if (p->status != "ok" || !p->speedup) continue;  // a wrong kernel has no speedup to show
      speedups.emplace_back(p->problem, *p->speedup);
      max_speedup = std::max(max_speedup, *p->speedup);
      if (auto f = p->floor_fraction()) floors.emplace_back(p->problem, *f);
    }
    out += "<h2>Speedup · " + html_escape(model) + "</h2>" +
           bar_chart(speedups, max_speedup * 1.1, 1.0, "%.3f×", "speedup");
    if (!floors.empty()) {
      out += "<h2>Fraction of the hard floor (peak DRAM, 3xTF32) · " + html_escape(model) +
             "</h2>" + bar_chart(floors, 1.0, 1.0, "%.2f", "floor");
    }
  }
  out += "<h2>Flagged regressions</h2>" + regressions_table(d.regressions);
  out += "<h2>History (custom median, 95% interval)</h2><div class=grid>";
  for (const ReportProblem& p : d.problems) out += problem_card(p);
  return out + "</div></body></html>\n";
}

nlohmann::json report_json(const ReportData& d) {
  nlohmann::json j{{"title", d.title}, {"scope", d.scope}, {"generated_at", d.generated_at}};
  auto summary = [](const ModelSummary& m) {
    return nlohmann::json{{"gpu_model", m.gpu_model},
                          {"jobs", m.jobs},
                          {"correct", m.correct},
                          {"fast_1", m.fast_1},
                          {"fast_1_2", m.fast_1_2},
                          {"geomean_speedup", m.geomean_speedup ? nlohmann::json(*m.geomean_speedup)
                                                                : nlohmann::json()}};
  };
  j["summary"] = {{"overall", summary(d.summary.overall)}, {"per_model", nlohmann::json::array()}};
  for (const ModelSummary& m : d.summary.per_model) j["summary"]["per_model"].push_back(summary(m));
  auto o = [](const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(); };
  j["problems"] = nlohmann::json::array();
  for (const ReportProblem& p : d.problems) {
    nlohmann::json history = nlohmann::json::array();
    for (const ChartPoint& c : p.history) {
      history.push_back({{"label", c.label},
                         {"median_ms", c.median_ms},
                         {"low_ms", c.low_ms},
                         {"high_ms", c.high_ms},
                         {"flagged", c.flagged}});
    }
    j["problems"].push_back({{"problem", p.problem},
                             {"gpu_model", p.gpu_model},
                             {"preset", p.preset},
                             {"status", p.status},
                             {"commit", p.commit_sha},
                             {"custom_median_ms", o(p.custom_median_ms)},
                             {"speedup", o(p.speedup)},
                             {"speedup_ci_low", o(p.speedup_ci_low)},
                             {"speedup_ci_high", o(p.speedup_ci_high)},
                             {"floor_ms", o(p.floor_ms)},
                             {"roofline_fraction", o(p.roofline_fraction())},
                             {"hard_floor_ms", o(p.hard_floor_ms)},
                             {"floor_fraction", o(p.floor_fraction())},
                             {"history", history}});
  }
  j["regressions"] = nlohmann::json::array();
  for (const RegressionRow& g : d.regressions) {
    j["regressions"].push_back({{"problem", g.problem},
                                {"gpu_model", g.gpu_model},
                                {"variant", g.variant},
                                {"preset", g.preset},
                                {"commit", g.commit_sha},
                                {"ratio", g.ratio},
                                {"median_ms", g.median_ms},
                                {"baseline_ms", g.baseline_ms},
                                {"bound_ms", g.bound_ms},
                                {"p_value", g.p_value},
                                {"adjusted_p", g.adjusted_p},
                                {"state", g.state}});
  }
  return j;
}

std::string report_csv(const ReportData& d) {
  std::string out =
      "problem,gpu_model,preset,status,commit,custom_median_ms,speedup,speedup_ci_low,"
      "speedup_ci_high,floor_ms,roofline_fraction,hard_floor_ms,floor_fraction\n";
  auto csv_field = [](const std::string& s) {
    if (s.find_first_of(",\"\n") == std::string::npos) return s;
    std::string q = "\"";
    for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
    return q + "\"";
  };
  auto num = [](const std::optional<double>& v) {
    return v ? format_number("%.6g", *v) : std::string();
  };
  for (const ReportProblem& p : d.problems) {
    out += csv_field(p.problem) + "," + csv_field(p.gpu_model) + "," + csv_field(p.preset) + "," +
           csv_field(p.status) + "," + csv_field(p.commit_sha) + "," + num(p.custom_median_ms) +
           "," + num(p.speedup) + "," + num(p.speedup_ci_low) + "," + num(p.speedup_ci_high) + "," +
           num(p.floor_ms) + "," + num(p.roofline_fraction()) + "," + num(p.hard_floor_ms) + "," +
           num(p.floor_fraction()) + "\n";
  }
  return out;
}

}  // namespace kb::cli
