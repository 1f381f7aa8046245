#include "cli/history_commands.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <ctime>
#include <fstream>
#include <memory>
#include <string>

#include "cli/cli_app.h"
#include "cli/cli_config.h"
#include "cli/compare_table.h"
#include "cli/history_reader.h"
#include "cli/history_views.h"
#include "cli/report_builder.h"
#include "cli/terminal_chart.h"
#include "common/hypothesis_tests.h"

namespace kb::cli {
namespace {

struct DbOptions {
  ConfigFlags flags;
  bool json = false;
};

void add_db_options(CLI::App* command, DbOptions& o, bool with_json) {
  command->add_option("--db", o.flags.db, "PostgreSQL URL of the read-only role (env KB_DB_URL)");
  command->add_option("--config", o.flags.config_file,
                      "Config file (default ~/.config/kbfleet/config.yaml when it exists)");
  if (with_json) command->add_flag("--json", o.json, "Print JSON instead of a table");
}

std::unique_ptr<HistoryReader> open_or_fail(const DbOptions& o) {
  auto config = resolve_config(o.flags);
  if (!config.is_ok()) fail(kExitUsage, config.status().message());
  if (Status s = require_db(config.value()); !s.is_ok()) fail(kExitUsage, s.message());
  auto reader = HistoryReader::connect(config->db);
  if (!reader.is_ok()) fail(kExitFailure, reader.status().message());
  return std::move(reader).value();
}

template <typename T>
T value_or_fail(Result<T> r) {
  if (!r.is_ok()) fail(r.status());
  return std::move(r).value();
}

std::string date_of(double epoch_s) {
  const std::time_t t = static_cast<std::time_t>(epoch_s);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M", &tm);
  return buf;
}

std::string num(const std::optional<double>& v, const char* format) {
  if (!v) return "-";
  char buf[48];
  std::snprintf(buf, sizeof buf, format, *v);
  return buf;
}

// ---- kb history ----------------------------------------------------------------------------

struct HistoryOptions {
  DbOptions db;
  HistoryQuery query;
  bool csv = false, ascii = false;
};

void print_series(const Series& s, bool ascii) {
  std::printf("%s · %s · %s · %s (%zu points)\n", s.problem.c_str(), s.gpu_model.c_str(),
              s.preset.c_str(), s.variant.c_str(), s.points.size());
  std::printf("%-10s  %-16s  %10s  %-23s  %8s  %s\n", "commit", "date", "median ms",
              "95% CI ms", "speedup", "status");
  std::vector<double> medians;
  for (const HistoryPoint& p : s.points) {
    const MedianInterval mi = median_interval(p.samples_ms);
    const std::string ci = p.samples_ms.empty()
                               ? "-"
                               : "[" + num(mi.low, "%.4g") + ", " + num(mi.high, "%.4g") + "]";
    const std::string commit =
        p.commit_sha.empty() ? "run:" + std::to_string(p.run_id) : p.commit_sha.substr(0, 10);
    std::printf("%-10s  %-16s  %10s  %-23s  %8s  %s\n", commit.c_str(), date_of(p.time_s).c_str(),
                num(p.median_ms, "%.4g").c_str(), ci.c_str(), num(p.speedup, "%.3fx").c_str(),
                p.status.c_str());
    if (p.status == "ok" && p.median_ms) medians.push_back(*p.median_ms);
  }
  ChartOptions chart;
  chart.ascii = ascii;
  std::printf("\n%s\n", render_terminal_chart(medians, chart).c_str());
}

void run_history(const HistoryOptions& o) {
  auto reader = open_or_fail(o.db);
  const std::vector<Series> series = value_or_fail(reader->history(o.query));
  if (series.empty()) fail(kExitUsage, "no results for " + o.query.problem);
  if (o.db.json) {
    RegressionFilter flags;
    flags.problem = o.query.problem;
    flags.gpu_model = o.query.gpu_model;
    const std::vector<RegressionRow> regressions = value_or_fail(reader->regressions(flags));
    nlohmann::json out = nlohmann::json::array();
    for (const Series& s : series) out.push_back(series_json(s, regressions));
    std::printf("%s\n", out.dump(2).c_str());
  } else if (o.csv) {
    std::printf("problem,gpu_model,preset,variant,commit,time,status,median_ms,speedup\n");
    for (const Series& s : series) {
      for (const HistoryPoint& p : s.points) {
        std::printf("%s,\"%s\",%s,%s,%s,%.0f,%s,%s,%s\n", s.problem.c_str(), s.gpu_model.c_str(),
                    s.preset.c_str(), s.variant.c_str(), p.commit_sha.c_str(), p.time_s,
                    p.status.c_str(), num(p.median_ms, "%.6g").c_str(),
                    num(p.speedup, "%.6g").c_str());
      }
    }
  } else {
    for (const Series& s : series) print_series(s, o.ascii);
  }
}

// ---- kb compare ----------------------------------------------------------------------------

struct CompareCommandOptions {
  DbOptions db;
  CompareRequest request;
};

void print_compare(const std::vector<CompareRow>& rows, const std::string& title) {
  std::printf("%s\n%-28s %-14s %10s %10s %8s  %-19s %8s %8s  %s\n", title.c_str(), "problem",
              "gpu", "base ms", "head ms", "change", "95% CI", "p", "q", "verdict");
  for (const CompareRow& r : rows) {
    const std::string gpu = r.base_gpu == r.head_gpu || r.head_gpu.empty() ? r.base_gpu
                            : r.base_gpu.empty() ? r.head_gpu
                                                 : r.base_gpu + "→" + r.head_gpu;
    std::string change = "-", ci = "-", p = "-", q = "-", verdict = r.verdict;
    if (r.tested) {
      change = num((r.change.ratio - 1) * 100, "%+.2f%%");
      ci = "[" + num((r.change.ci_low - 1) * 100, "%+.2f") + ", " +
           num((r.change.ci_high - 1) * 100, "%+.2f") + "]%";
      p = num(r.p_value, "%.2g");
      q = num(r.q_value, "%.2g");
    } else if (r.verdict == "status") {
      verdict = "status " + r.base_status + " → " + r.head_status;
    }
    std::printf("%-28s %-14s %10s %10s %8s  %-19s %8s %8s  %s\n", r.problem.c_str(), gpu.c_str(),
                num(r.base_median_ms, "%.4g").c_str(), num(r.head_median_ms, "%.4g").c_str(),
                change.c_str(), ci.c_str(), p.c_str(), q.c_str(), verdict.c_str());
  }
}

void run_compare(const CompareCommandOptions& o) {
  auto reader = open_or_fail(o.db);
  const CompareView view = value_or_fail(compare_view(*reader, o.request));
  if (o.db.json) {
    nlohmann::json out = nlohmann::json::array();
    for (const CompareRow& r : view.rows) out.push_back(compare_json(r));
    std::printf("%s\n", out.dump(2).c_str());
  } else {
    print_compare(view.rows, view.title);
  }
}

// ---- kb regressions ------------------------------------------------------------------------

struct RegressionsOptions {
  DbOptions db;
  RegressionFilter filter;
};

void run_regressions(const RegressionsOptions& o) {
  auto reader = open_or_fail(o.db);
  const std::vector<RegressionRow> rows = value_or_fail(reader->regressions(o.filter));
  if (o.db.json) {
    nlohmann::json out = nlohmann::json::array();
    for (const RegressionRow& g : rows) out.push_back(regression_json(g));
    std::printf("%s\n", out.dump(2).c_str());
    return;
  }
  std::printf("%-6s %-24s %-14s %-9s %-10s %8s %10s %8s  %-9s %s\n", "id", "problem", "gpu",
              "variant", "commit", "slower", "bound ms", "p(adj)", "state", "flagged");
  for (const RegressionRow& g : rows) {
    std::printf("%-6lld %-24s %-14s %-9s %-10s %8s %10s %8s  %-9s %s\n",
                static_cast<long long>(g.id), g.problem.c_str(), g.gpu_model.c_str(),
                g.variant.c_str(), g.commit_sha.substr(0, 10).c_str(),
                num((g.ratio - 1) * 100, "%+.1f%%").c_str(), num(g.bound_ms, "%.4g").c_str(),
                num(g.adjusted_p, "%.2g").c_str(), g.state.c_str(), date_of(g.created_s).c_str());
  }
  if (rows.empty()) std::printf("(no regressions)\n");
}

// ---- kb report -----------------------------------------------------------------------------

struct ReportOptions {
  DbOptions db;
  ReportRequest request;
  int64_t run_id = 0;
  std::string out, json_out, csv_out;
};

void write_file(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  f << text;
  if (!f.good()) fail(kExitFailure, "cannot write " + path);
}

void run_report(ReportOptions o) {
  if ((o.run_id > 0) == !o.request.commits.empty()) fail(kExitUsage, "give --run N or --commits A..B");
  if (o.run_id > 0) o.request.run_id = o.run_id;
  auto reader = open_or_fail(o.db);
  const ReportData data = value_or_fail(build_report(*reader, o.request));
  write_file(o.out, render_report_html(data));
  if (!o.json_out.empty()) write_file(o.json_out, report_json(data).dump(2) + "\n");
  if (!o.csv_out.empty()) write_file(o.csv_out, report_csv(data));
  std::printf("wrote %s (%zu problems, %zu regressions)\n", o.out.c_str(), data.problems.size(),
              data.regressions.size());
}

}  // namespace

void register_history_commands(CLI::App& app) {
  auto h = std::make_shared<HistoryOptions>();
  CLI::App* history = app.add_subcommand("history", "A series' results across commits");
  history->add_option("problem", h->query.problem, "Problem id, e.g. L1_003")->required();
  history->add_option("--gpu", h->query.gpu_model, "GPU model (default: every model)");
  history->add_option("--variant", h->query.variant, "custom or reference")
      ->check(CLI::IsMember({"custom", "reference"}))->capture_default_str();
  history->add_option("--preset", h->query.preset, "Preset (default: every preset)");
  history->add_option("--last", h->query.last, "Points per series")
      ->check(CLI::PositiveNumber)->capture_default_str();
  add_db_options(history, h->db, true);
  history->add_flag("--csv", h->csv, "Print CSV instead of a table");
  history->add_flag("--ascii", h->ascii, "Draw the chart in ASCII");
  history->callback([h] { run_history(*h); });

  auto c = std::make_shared<CompareCommandOptions>();
  CLI::App* compare = app.add_subcommand("compare", "Compare two commits or runs, per problem");
  compare->add_option("base", c->request.base, "Base: commit SHA, unique prefix, or run:N");
  compare->add_option("head", c->request.head, "Head: commit SHA, unique prefix, or run:N");
  compare->add_option("--gpu", c->request.gpu, "Only this GPU model");
  compare->add_option("--commit", c->request.commit,
                      "Compare two GPU models at this commit (--gpus)");
  compare->add_option("--gpus", c->request.gpus, "A,B: the two GPU models for --commit");
  compare->add_option("--variant", c->request.variant, "custom or reference")
      ->check(CLI::IsMember({"custom", "reference"}))
      ->capture_default_str();
  compare->add_option("--alpha", c->request.options.alpha, "False discovery rate")
      ->capture_default_str();
  compare->add_option("--threshold", c->request.options.threshold, "Practical band (0.01 = ±1%)")
      ->capture_default_str();
  add_db_options(compare, c->db, true);
  compare->callback([c] { run_compare(*c); });

  auto g = std::make_shared<RegressionsOptions>();
  CLI::App* regressions = app.add_subcommand("regressions", "Flagged regressions, newest first");
  regressions->add_option("--since", g->filter.since, "Flagged at or after DATE (2024-06-01)");
  regressions->add_option("--gpu", g->filter.gpu_model, "Only this GPU model");
  add_db_options(regressions, g->db, true);
  regressions->callback([g] { run_regressions(*g); });

  auto r = std::make_shared<ReportOptions>();
  CLI::App* report = app.add_subcommand("report", "Self-contained HTML report of a run or range");
  report->add_option("--run", r->run_id, "Run id");
  report->add_option("--commits", r->request.commits, "Commit range A..B");
  report->add_option("--gpu", r->request.gpu_model, "Only this GPU model");
  report->add_option("--out", r->out, "HTML file to write")->required();
  report->add_option("--json", r->json_out, "Also write the data as JSON");
  report->add_option("--csv", r->csv_out, "Also write the per-problem table as CSV");
  add_db_options(report, r->db, false);
  report->callback([r] { run_report(*r); });
}

}  // namespace kb::cli
