// kb-coordinator's dashboard: read-only pages over the fleet's database on the HTTP endpoint
// (README "Dashboard", deploy/README.md "Dashboard"). It owns one thread and, on it, two
// connections made with the read-only role's URL (--dashboard-db; a login in kb_readonly), so a
// page's queries never run on the coordinator's event loop and can never write.
//
//   /                         runs: state, progress, commit, GPU models, fast_1, geomean
//   /runs/N                   a run's jobs (`kb results N`)
//   /history/PROBLEM          ?gpu=&variant=custom|reference&preset=&last=30 (`kb history`)
//   /regressions              open and cleared (`kb regressions`)
//   /workers                  the pool (`kb workers`)
//   /compare                  ?base=&head=&gpu= or ?commit=&gpus=A,B (`kb compare`)
// Each with ?format=json: the document `kb ... --json` prints (cli/history_views.h,
// cli/fleet_report.h), the run list's entries with their summary added.
//
// Every answer carries a Content-Security-Policy that forbids every load and script (inline CSS
// only), and a Server-Timing header with the time spent on the page. A request beyond
// kMaxQueued waiting ones gets 503; so does every request while the database is unreachable (the
// connections are made again on the next request).
//
// Thread safety: handle() from any thread; respond is called on the dashboard's thread.
// render() runs a page on the calling thread (the dashboard's, tests and the scale test).
#pragma once

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "coordinator/http_endpoint.h"

namespace kb::cli {
class HistoryReader;
class ResultsReader;
}  // namespace kb::cli

namespace kb::coord {

struct DashboardConfig {
  std::string db_url;   // the read-only role's URL
  int runs_shown = 25;  // ?last=N shows more
};

class Dashboard {
 public:
  static constexpr size_t kMaxQueued = 64;
  static constexpr const char* kContentSecurityPolicy =
      "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; "
      "form-action 'self'; base-uri 'none'; frame-ancestors 'none'";

  explicit Dashboard(DashboardConfig config);
  ~Dashboard();  // answers the waiting requests with 503, then joins
  Dashboard(const Dashboard&) = delete;
  Dashboard& operator=(const Dashboard&) = delete;

  // True for a target the dashboard answers (the paths above), false for /healthz, /metrics.
  static bool serves(const std::string& target);
  void handle(const std::string& target, HttpEndpoint::Respond respond);
  HttpResponse render(const std::string& target);

 private:
  struct Request {
    std::string target;
    HttpEndpoint::Respond respond;
  };
  void run();
  Status connect();
  HttpResponse route(const std::string& target);

  DashboardConfig config_;
  std::unique_ptr<cli::ResultsReader> results_;
  std::unique_ptr<cli::HistoryReader> history_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Request> queue_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace kb::coord
