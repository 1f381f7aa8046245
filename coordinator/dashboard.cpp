#include "coordinator/dashboard.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <map>

#include "cli/fleet_report.h"
#include "cli/history_reader.h"
#include "cli/history_views.h"
#include "cli/results_reader.h"
#include "cli/results_summary.h"
#include "coordinator/dashboard_pages.h"

namespace kb::coord {
namespace {

using Params = std::map<std::string, std::string>;

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// %XX and '+' decoded; a malformed escape is kept as it is.
std::string url_decode(const std::string& text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '+') {
      out += ' ';
    } else if (text[i] == '%' && i + 2 < text.size() && hex_value(text[i + 1]) >= 0 &&
               hex_value(text[i + 2]) >= 0) {
      out += static_cast<char>(hex_value(text[i + 1]) * 16 + hex_value(text[i + 2]));
      i += 2;
    } else {
      out += text[i];
    }
  }
  return out;
}

void split_target(const std::string& target, std::string* path, Params* params) {
  const size_t q = target.find('?');
  *path = url_decode(target.substr(0, q));
  if (q == std::string::npos) return;
  size_t at = q + 1;
  while (at <= target.size()) {
    size_t end = target.find('&', at);
    if (end == std::string::npos) end = target.size();
    const std::string pair = target.substr(at, end - at);
    const size_t eq = pair.find('=');
    if (!pair.empty())
      (*params)[url_decode(pair.substr(0, eq))] =
          eq == std::string::npos ? "" : url_decode(pair.substr(eq + 1));
    at = end + 1;
  }
}

std::string param(const Params& params, const std::string& name, const std::string& fallback = "") {
  const auto it = params.find(name);
  return it == params.end() ? fallback : it->second;
}

// ?last=N is capped: a page is one query and one table, and no request may ask for the whole
// history.
constexpr int64_t kMaxRows = 1000;

// A positive integer of at most 9 digits, else `fallback`; never above `max`.
int64_t positive(const std::string& text, int64_t fallback, int64_t max = kMaxRows) {
  if (text.empty() || text.size() > 9) return fallback;
  int64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return fallback;
    v = v * 10 + (c - '0');
  }
  return v > 0 ? std::min(v, max) : fallback;
}

int http_status_of(const Status& s) {
  switch (s.code()) {
    case StatusCode::kNotFound:
      return 404;
    case StatusCode::kInvalidArgument:
      return 400;
    default:
      return 503;
  }
}

// One page: HTML, or its JSON twin with ?format=json.
struct Page {
  std::string html;
  nlohmann::json json;
};

HttpResponse answer(const Page& page, bool json) {
  if (json) return {200, "application/json", page.json.dump(1) + "\n"};
  return {200, "text/html; charset=utf-8", page.html};
}

HttpResponse failure(const Status& s, bool json) {
  const int code = http_status_of(s);
  if (json)
    return {code, "application/json", nlohmann::json({{"error", s.message()}}).dump() + "\n"};
  return {code, "text/html; charset=utf-8", error_page(code, s.message())};
}

Result<Page> runs_view(cli::ResultsReader& reader, int last) {
  KB_ASSIGN_OR_RETURN(auto runs, reader.runs(last));
  std::vector<int64_t> ids;
  for (const cli::RunRow& r : runs) ids.push_back(r.id);
  KB_ASSIGN_OR_RETURN(auto rows, reader.summary_rows_of_runs(ids));
  std::vector<RunWithSummary> shown;
  Page page{{}, nlohmann::json::array()};
  for (const cli::RunRow& r : runs) {
    shown.push_back({r, cli::summarize_results(rows[r.id])});
    nlohmann::json j = cli::to_json(r);
    j["summary"] = cli::to_json(shown.back().summary.overall);
    page.json.push_back(std::move(j));
  }
  page.html = runs_page(shown);
  return page;
}

Result<Page> run_view(cli::ResultsReader& reader, int64_t run_id) {
  KB_ASSIGN_OR_RETURN(auto status, reader.run_status(run_id));
  KB_ASSIGN_OR_RETURN(auto rows, reader.results(run_id));
  const cli::ResultsSummary summary = cli::summarize_results(rows);
  Page page{run_page(status, rows, summary), cli::to_json(rows, summary)};
  page.json["run"] = cli::to_json(status.run);
  return page;
}

Result<Page> history_view(cli::HistoryReader& reader, const std::string& problem, const Params& p) {
  cli::HistoryQuery q;
  q.problem = problem;
  q.gpu_model = param(p, "gpu");
  q.variant = param(p, "variant", "custom");
  q.preset = param(p, "preset");
  q.last = static_cast<int>(positive(param(p, "last"), 30));
  KB_ASSIGN_OR_RETURN(auto series, reader.history(q));
  cli::RegressionFilter f;
  f.problem = q.problem;
  f.gpu_model = q.gpu_model;
  KB_ASSIGN_OR_RETURN(auto regressions, reader.regressions(f));
  Page page{history_page(q, series, regressions), nlohmann::json::array()};
  for (const cli::Series& s : series) page.json.push_back(cli::series_json(s, regressions));
  return page;
}

Result<Page> regressions_view(cli::HistoryReader& reader, const Params& p) {
  cli::RegressionFilter f;
  f.since = param(p, "since");
  f.gpu_model = param(p, "gpu");
  KB_ASSIGN_OR_RETURN(auto rows, reader.regressions(f));
  Page page{regressions_page(rows), nlohmann::json::array()};
  for (const cli::RegressionRow& g : rows) page.json.push_back(cli::regression_json(g));
  return page;
}

Result<Page> workers_view(cli::ResultsReader& reader) {
  KB_ASSIGN_OR_RETURN(auto rows, reader.workers());
  Page page{workers_page(rows), nlohmann::json::array()};
  for (const cli::WorkerRow& w : rows) page.json.push_back(cli::to_json(w));
  return page;
}

Result<Page> compare_view(cli::HistoryReader& reader, const Params& p) {
  cli::CompareRequest request;
  request.base = param(p, "base");
  request.head = param(p, "head");
  request.gpu = param(p, "gpu");
  request.commit = param(p, "commit");
  request.gpus = param(p, "gpus");
  request.variant = param(p, "variant", "custom");
  if (request.commit.empty() && (request.base.empty() || request.head.empty())) {
    return Page{compare_page(request, nullptr), nlohmann::json::array()};
  }
  KB_ASSIGN_OR_RETURN(auto view, cli::compare_view(reader, request));
  Page page{compare_page(request, &view), nlohmann::json::array()};
  for (const cli::CompareRow& r : view.rows) page.json.push_back(cli::compare_json(r));
  return page;
}

bool starts_with(const std::string& text, const char* prefix) {
  return text.rfind(prefix, 0) == 0;
}

}  // namespace

Dashboard::Dashboard(DashboardConfig config)
    : config_(std::move(config)), thread_([this] { run(); }) {}

Dashboard::~Dashboard() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
  for (Request& r : queue_) r.respond({503, "text/plain; charset=utf-8", "stopping\n"});
}

bool Dashboard::serves(const std::string& target) {
  std::string path;
  Params ignored;
  split_target(target, &path, &ignored);
  return path == "/" || path == "/runs" || starts_with(path, "/runs/") ||
         starts_with(path, "/history/") || path == "/regressions" || path == "/workers" ||
         path == "/compare";
}

void Dashboard::handle(const std::string& target, HttpEndpoint::Respond respond) {
  {
    std::lock_guard lock(mutex_);
    if (!stopping_ && queue_.size() < kMaxQueued) {
      queue_.push_back({target, std::move(respond)});
      wake_.notify_one();
      return;
    }
  }
  respond({503, "text/plain; charset=utf-8", "dashboard busy: try again\n"});
}

void Dashboard::run() {
  std::unique_lock lock(mutex_);
  while (true) {
    wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (stopping_) return;
    Request request = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    request.respond(render(request.target));
    lock.lock();
  }
}

Status Dashboard::connect() {
  if (results_ && history_) return Status::ok();
  KB_ASSIGN_OR_RETURN(auto results, cli::ResultsReader::connect(config_.db_url));
  KB_ASSIGN_OR_RETURN(history_, cli::HistoryReader::connect(config_.db_url));
  results_ = std::move(results);
  return Status::ok();
}

HttpResponse Dashboard::render(const std::string& target) {
  const auto start = std::chrono::steady_clock::now();
  HttpResponse response = route(target);
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  char timing[48];
  std::snprintf(timing, sizeof timing, "page;dur=%.2f", ms);
  response.headers.push_back({"Content-Security-Policy", kContentSecurityPolicy});
  response.headers.push_back({"X-Content-Type-Options", "nosniff"});
  response.headers.push_back({"Cache-Control", "no-store"});
  response.headers.push_back({"Server-Timing", timing});
  return response;
}

HttpResponse Dashboard::route(const std::string& target) {
  std::string path;
  Params params;
  split_target(target, &path, &params);
  const bool json = param(params, "format") == "json";
  if (Status s = connect(); !s.is_ok()) return failure(s, json);
  Result<Page> page = Status::not_found("no page " + path);
  if (path == "/" || path == "/runs") {
    page =
        runs_view(*results_, static_cast<int>(positive(param(params, "last"), config_.runs_shown)));
  } else if (starts_with(path, "/runs/")) {
    const int64_t id = positive(path.substr(6), 0, INT64_MAX);
    if (id > 0) page = run_view(*results_, id);
  } else if (starts_with(path, "/history/") && path.size() > 9) {
    page = history_view(*history_, path.substr(9), params);
  } else if (path == "/regressions") {
    page = regressions_view(*history_, params);
  } else if (path == "/workers") {
    page = workers_view(*results_);
  } else if (path == "/compare") {
    page = compare_view(*history_, params);
  }
  if (page.is_ok()) return answer(page.value(), json);
  // A failed query may have broken the connection: make both again on the next request.
  if (page.status().code() == StatusCode::kIoError) {
    results_.reset();
    history_.reset();
  }
  return failure(page.status(), json);
}

}  // namespace kb::coord
