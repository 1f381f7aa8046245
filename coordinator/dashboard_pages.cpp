#include "coordinator/dashboard_pages.h"

#include <cctype>
#include <cstdio>
#include <map>

#include "cli/fleet_report.h"
#include "cli/report_builder.h"
#include "cli/report_html.h"
#include "cli/svg_chart.h"

namespace kb::coord {
namespace {

using cli::format_number;
using cli::format_optional;
using cli::html_escape;

constexpr const char* kCss = R"css(
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0;color:#1d2330}
nav{background:#1d2330;padding:8px 20px}nav a{color:#dfe6f3;margin-right:18px;text-decoration:none;
font-size:14px}nav b{color:#fff;margin-right:24px}main{padding:12px 20px 32px}h1{font-size:20px}
h2{font-size:16px;margin:22px 0 6px}table{border-collapse:collapse;font-size:13px}
th,td{padding:3px 9px;border-bottom:1px solid #e6e9f0;text-align:right;white-space:nowrap}
th{background:#f4f6fa}.l{text-align:left}.msg{white-space:normal;max-width:360px;text-align:left;
color:#8a1f17}.ok{color:#1b7f3b}.bad{color:#b3261e;font-weight:600}.dim{color:#778}
.bar{display:inline-block;width:90px;height:9px;background:#e6e9f0;vertical-align:middle}
.bar span{display:block;height:9px;background:#3b7dd8}svg text{font-size:10px;fill:#445;
font-family:sans-serif}.series{margin:10px 0 18px}form input{width:200px}code{font-size:12px}
)css";

std::string td(const std::string& escaped, const char* cls = nullptr) {
  return cls ? "<td class=\"" + std::string(cls) + "\">" + escaped + "</td>"
             : "<td>" + escaped + "</td>";
}

struct Column {
  const char* name;
  bool left = false;  // text columns are left-aligned, numbers right-aligned
};

std::string th_row(std::initializer_list<Column> columns) {
  std::string out = "<tr>";
  for (const Column& c : columns)
    out += (c.left ? "<th class=l>" : "<th>") + std::string(c.name) + "</th>";
  return out + "</tr>";
}

std::string link(const std::string& href, const std::string& text) {
  return "<a href=\"" + html_escape(href) + "\">" + html_escape(text) + "</a>";
}

std::string short_sha(const std::string& sha) {
  return sha.empty() ? "–" : sha.substr(0, 10);
}

std::string page(const std::string& title, const std::string& body) {
  return "<!DOCTYPE html><html lang=en><head><meta charset=utf-8><title>" + html_escape(title) +
         " · kbfleet</title><style>" + kCss + "</style></head><body><nav><b>kbfleet</b>" +
         "<a href=\"/\">runs</a><a href=\"/regressions\">regressions</a><a href=\"/workers\">"
         "workers</a><a href=\"/compare\">compare</a></nav><main><h1>" +
         html_escape(title) + "</h1>" + body + "</main></body></html>\n";
}

std::string status_cell(const std::string& status, const std::string& job_state) {
  if (status.empty()) return td("<span class=dim>(" + html_escape(job_state) + ")</span>", "l");
  return td("<span class=" + std::string(status == "ok" ? "ok" : "bad") + ">" +
                html_escape(status) + "</span>",
            "l");
}

std::string speedup_cell(const std::optional<double>& s, const std::optional<double>& low,
                         const std::optional<double>& high) {
  if (!s) return td("–");
  std::string text = format_number("%.3f×", *s);
  if (low && high)
    text += " <span class=dim>[" + format_number("%.3f", *low) + ", " +
            format_number("%.3f", *high) + "]</span>";
  return td(text);
}

std::string progress_bar(const cli::RunRow& r) {
  const int64_t finished = r.done + r.failed + r.cancelled;
  const double share = r.jobs > 0 ? static_cast<double>(finished) / static_cast<double>(r.jobs) : 0;
  return td("<span class=bar><span style=\"width:" + format_number("%.0f", share * 100) +
            "%\"></span></span> " + std::to_string(finished) + "/" + std::to_string(r.jobs));
}

std::string summary_table(const cli::ResultsSummary& s) {
  std::string out = "<table>" + th_row({{"GPU model", true},
                                        {"jobs"},
                                        {"correct"},
                                        {"failed"},
                                        {"fast_1"},
                                        {"fast_1.2"},
                                        {"geomean speedup"}});
  auto line = [&](const cli::ModelSummary& m, const std::string& name) {
    out += "<tr>" + td(html_escape(name), "l") + td(std::to_string(m.jobs)) +
           td(std::to_string(m.correct)) + td(std::to_string(m.failed)) +
           td(format_number("%.3f", m.fast_1)) + td(format_number("%.3f", m.fast_1_2)) +
           td(format_optional(m.geomean_speedup, "%.3f×")) + "</tr>";
  };
  for (const cli::ModelSummary& m : s.per_model)
    line(m, m.gpu_model.empty() ? "(any)" : m.gpu_model);
  if (s.per_model.size() != 1) line(s.overall, "all");
  return out + "</table>";
}

std::string history_href(const std::string& problem, const std::string& gpu) {
  return "/history/" + url_encode(problem) + (gpu.empty() ? "" : "?gpu=" + url_encode(gpu));
}

std::string regressions_table(const std::vector<const cli::RegressionRow*>& rows) {
  if (rows.empty()) return "<p class=dim>none</p>";
  std::string out = "<table class=regressions>" + th_row({{"problem", true},
                                                          {"GPU model", true},
                                                          {"variant", true},
                                                          {"commit", true},
                                                          {"state", true},
                                                          {"median ms"},
                                                          {"baseline ms"},
                                                          {"slower"},
                                                          {"p (adj.)"},
                                                          {"slow points"}});
  for (const cli::RegressionRow* g : rows) {
    out += "<tr>" + td(link(history_href(g->problem, g->gpu_model), g->problem), "l") +
           td(html_escape(g->gpu_model), "l") + td(html_escape(g->variant), "l") +
           td("<code>" + html_escape(short_sha(g->commit_sha)) + "</code>", "l") +
           td(html_escape(g->state), "l") + td(format_number("%.4g", g->median_ms)) +
           td(format_number("%.4g", g->baseline_ms)) +
           td(format_number("%+.1f%%", (g->ratio - 1) * 100), "bad") +
           td(format_number("%.2g", g->adjusted_p)) + td(std::to_string(g->slow_points)) + "</tr>";
  }
  return out + "</table>";
}

std::string series_section(const cli::Series& s, const std::vector<cli::RegressionRow>& flags) {
  std::vector<int64_t> flagged;
  for (const cli::RegressionRow& g : flags) {
    if (g.variant == s.variant) flagged.push_back(g.result_id);
  }
  const std::vector<cli::ChartPoint> points = cli::chart_points(s.points, flagged);
  std::string out = "<div class=series data-points=\"" + std::to_string(points.size()) + "\"><h2>" +
                    html_escape(s.gpu_model + " · " + s.variant + " · " + s.preset) +
                    " <span class=dim>(" + std::to_string(points.size()) + " points)</span></h2>" +
                    cli::render_history_chart(points, {.width = 760, .height = 220});
  const std::vector<cli::RegressionRange> ranges = cli::regression_ranges(s, flags);
  if (!ranges.empty()) {
    out += "<table>" +
           th_row({{"regression", true}, {"state", true}, {"commit range", true}, {"slower"}});
    for (const cli::RegressionRange& r : ranges) {
      out += "<tr>" + td(std::to_string(r.regression->id), "l") +
             td(html_escape(r.regression->state), "l") +
             td("<code>" + html_escape(short_sha(r.from_commit)) + "..." +
                    html_escape(short_sha(r.to_commit)) + "</code>",
                "l") +
             td(format_number("%+.1f%%", (r.regression->ratio - 1) * 100), "bad") + "</tr>";
    }
    out += "</table>";
  }
  return out + "</div>";
}

}  // namespace

std::string url_encode(const std::string& text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

std::string runs_page(const std::vector<RunWithSummary>& runs) {
  std::string body = "<table class=runs>" + th_row({{"run", true},
                                                    {"state", true},
                                                    {"submitted", true},
                                                    {"by", true},
                                                    {"commit", true},
                                                    {"GPU models", true},
                                                    {"suite", true},
                                                    {"progress"},
                                                    {"failed"},
                                                    {"fast_1"},
                                                    {"geomean speedup"}});
  for (const RunWithSummary& r : runs) {
    std::string models;
    for (const std::string& m : r.run.gpu_models) models += (models.empty() ? "" : ", ") + m;
    body += "<tr>" + td(link("/runs/" + std::to_string(r.run.id), std::to_string(r.run.id)), "l") +
            td(html_escape(r.run.state), "l") +
            td(html_escape(cli::format_iso_utc(r.run.submitted_at)), "l") +
            td(html_escape(r.run.submitted_by), "l") +
            td("<code>" + html_escape(short_sha(r.run.commit_sha)) + "</code>", "l") +
            td(html_escape(models.empty() ? "any" : models), "l") +
            td(html_escape(r.run.suite + " · " + r.run.preset), "l") + progress_bar(r.run) +
            td(std::to_string(r.run.failed)) + td(format_number("%.3f", r.summary.overall.fast_1)) +
            td(format_optional(r.summary.overall.geomean_speedup, "%.3f×")) + "</tr>";
  }
  if (runs.empty()) body += "<tr><td class=l colspan=11>no runs yet</td></tr>";
  return page("Runs", body + "</table>");
}

std::string run_page(const cli::RunStatus& status, const std::vector<cli::ResultRow>& rows,
                     const cli::ResultsSummary& summary) {
  const cli::RunRow& run = status.run;
  std::string body =
      "<p>" + html_escape(run.state) + " · " + html_escape(run.suite) + " · " +
      html_escape(run.preset) + " · commit <code>" + html_escape(short_sha(run.commit_sha)) +
      "</code> " + html_escape(run.branch) + " · by " + html_escape(run.submitted_by) + " · " +
      std::to_string(status.finished()) + "/" + std::to_string(run.jobs) + " finished</p>" +
      summary_table(summary) + "<h2>Jobs</h2><table class=results>" +
      th_row({{"problem", true},
              {"GPU model", true},
              {"status", true},
              {"reference ms"},
              {"custom ms"},
              {"speedup [95% CI]"},
              {"TFLOP/s"},
              {"attempt"},
              {"worker", true},
              {"error", true}});
  for (const cli::ResultRow& r : rows) {
    body += "<tr>" + td(link(history_href(r.problem_id, r.gpu_model), r.problem_id), "l") +
            td(html_escape(r.gpu_model), "l") + status_cell(r.status, r.job_state) +
            td(format_optional(r.reference_median_ms, "%.4g")) +
            td(format_optional(r.custom_median_ms, "%.4g")) +
            speedup_cell(r.speedup, r.speedup_ci_low, r.speedup_ci_high) +
            td(format_optional(r.custom_tflops, "%.2f")) + td(std::to_string(r.attempt)) +
            td(html_escape(r.worker), "l") + td(html_escape(r.message), "msg") + "</tr>";
  }
  return page("Run " + std::to_string(run.id), body + "</table>");
}

std::string history_page(const cli::HistoryQuery& query, const std::vector<cli::Series>& series,
                         const std::vector<cli::RegressionRow>& regressions) {
  std::string body =
      "<p>Median time per point with its 95% interval (blue band), flagged points "
      "in red, the series median ±5% in grey. Newest " +
      std::to_string(query.last) + " points per series.</p>";
  for (const cli::Series& s : series) body += series_section(s, regressions);
  if (series.empty()) body += "<p class=dim>no results for this problem</p>";
  return page("History · " + query.problem, body);
}

std::string regressions_page(const std::vector<cli::RegressionRow>& regressions) {
  std::vector<const cli::RegressionRow*> open, cleared;
  for (const cli::RegressionRow& g : regressions)
    (g.state == "cleared" ? cleared : open).push_back(&g);
  return page("Regressions", "<h2>Open (" + std::to_string(open.size()) + ")</h2>" +
                                 regressions_table(open) + "<h2>Cleared (" +
                                 std::to_string(cleared.size()) + ")</h2>" +
                                 regressions_table(cleared));
}

std::string workers_page(const std::vector<cli::WorkerRow>& workers) {
  std::string body = "<table class=workers>" + th_row({{"worker", true},
                                                       {"state", true},
                                                       {"GPU model", true},
                                                       {"kind", true},
                                                       {"host", true},
                                                       {"last seen", true},
                                                       {"quarantine", true},
                                                       {"jobs done"},
                                                       {"running"},
                                                       {"seen ago"}});
  for (const cli::WorkerRow& w : workers) {
    const bool quarantined = w.state == "quarantined";
    body += "<tr>" + td(html_escape(w.name), "l") + td(html_escape(w.state), "l") +
            td(html_escape(w.gpu_model), "l") + td(html_escape(w.device_kind), "l") +
            td(html_escape(w.host), "l") + td(html_escape(cli::format_iso_utc(w.last_seen)), "l") +
            td(quarantined ? "<span class=bad>yes</span>" : "no", "l") +
            td(std::to_string(w.jobs_done)) + td(std::to_string(w.jobs_leased)) +
            td(html_escape(cli::format_duration(w.seconds_since_seen))) + "</tr>";
  }
  if (workers.empty()) body += "<tr><td class=l colspan=10>no workers registered</td></tr>";
  return page("Workers", body + "</table>");
}

std::string compare_page(const cli::CompareRequest& request, const cli::CompareView* view) {
  auto field = [](const char* name, const std::string& value, const char* hint) {
    return std::string("<label>") + name + " <input name=" + name + " value=\"" +
           html_escape(value) + "\" placeholder=\"" + hint + "\"></label> ";
  };
  std::string body = "<form method=get action=\"/compare\">" +
                     field("base", request.base, "commit, prefix or run:N") +
                     field("head", request.head, "commit, prefix or run:N") +
                     field("gpu", request.gpu, "GPU model (optional)") +
                     "<button type=submit>compare</button></form>";
  if (!view) return page("Compare", body);
  body += "<h2>" + html_escape(view->title) + "</h2><table class=compare>" +
          th_row({{"problem", true},
                  {"GPU", true},
                  {"base ms"},
                  {"head ms"},
                  {"change"},
                  {"95% CI"},
                  {"p"},
                  {"q"},
                  {"verdict", true}});
  for (const cli::CompareRow& r : view->rows) {
    const std::string gpu = r.base_gpu == r.head_gpu || r.head_gpu.empty() ? r.base_gpu
                            : r.base_gpu.empty()                           ? r.head_gpu
                                                 : r.base_gpu + " → " + r.head_gpu;
    const bool t = r.tested;
    const std::string verdict =
        r.verdict == "status" ? "status " + r.base_status + " → " + r.head_status : r.verdict;
    body +=
        "<tr>" + td(link(history_href(r.problem, r.head_gpu), r.problem), "l") +
        td(html_escape(gpu), "l") + td(format_optional(r.base_median_ms, "%.4g")) +
        td(format_optional(r.head_median_ms, "%.4g")) +
        td(t ? format_number("%+.2f%%", (r.change.ratio - 1) * 100) : "–") +
        td(t ? "[" + format_number("%+.2f", (r.change.ci_low - 1) * 100) + ", " +
                   format_number("%+.2f", (r.change.ci_high - 1) * 100) + "]%"
             : "–") +
        td(t ? format_number("%.2g", r.p_value) : "–") +
        td(t ? format_number("%.2g", r.q_value) : "–") +
        td(html_escape(verdict), r.verdict == "slower" || r.verdict == "status" ? "l bad" : "l") +
        "</tr>";
  }
  return page("Compare", body + "</table>");
}

std::string error_page(int status, const std::string& message) {
  return page("Error " + std::to_string(status), "<p class=bad>" + html_escape(message) + "</p>");
}

}  // namespace kb::coord
