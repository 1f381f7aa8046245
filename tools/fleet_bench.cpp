// kb-fleet-bench: the coordinator's throughput, dispatch gap and makespan with simulated workers
// (issue "The spine", README "Performance"). Starts a private PostgreSQL cluster
// (tools/pg-local.sh), kb-coordinator and one kb-worker process holding --workers simulated
// workers (`--device sim --sim-workers K`: each sim job sleeps its given time), then runs two
// phases and reads the outcome from the database:
//   throughput  many short jobs (0..--short-ms): jobs/s through the whole coordinator (lease,
//               dispatch, result, commit, ack), coordinator RSS sampled every 0.5 s;
//   makespan    longer jobs (--long-min-ms..--long-max-ms): makespan against the LPT lower bound
//               max(total / workers, longest job), and the dispatch gap (a worker's next job start
//               minus its previous job's end, on the worker's clock) — median and p99.
// usage: kb-fleet-bench [--workers 256] [--worker-processes 1] [--short-jobs 40000] [--short-ms 10] [--long-jobs 3000]
//                       [--long-min-ms 50] [--long-max-ms 500] [--json FILE]
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <pqxx/pqxx>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <random>
#include <thread>

#include "tests/support/fleet_stack.h"

namespace {

using namespace kb::testing;
using Clock = std::chrono::steady_clock;

double rss_mib(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string key;
  while (in >> key) {
    if (key == "VmRSS:") {
      double kib = 0;
      in >> kib;
      return kib / 1024.0;
    }
    std::string rest;
    std::getline(in, rest);
  }
  return 0;
}

double percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const double pos = q * static_cast<double>(v.size() - 1);
  const size_t lo = static_cast<size_t>(pos);
  const size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (pos - static_cast<double>(lo)) * (v[hi] - v[lo]);
}

struct JobTiming {
  int64_t worker = 0;
  double start_ms = 0, end_ms = 0;  // on the sim worker process's steady clock
  double requested_ms = 0;           // the job's sleep
};

std::vector<JobTiming> load_timings(const std::string& url, int64_t run) {
  pqxx::connection c(url);
  pqxx::read_transaction tx(c);
  std::vector<JobTiming> out;
  for (const auto& row : tx.exec_params(
           "SELECT r.worker_id, (r.result->'worker_clock'->>'started_at_ms')::float8, "
           "(r.result->'worker_clock'->>'finished_at_ms')::float8, (j.params->>'sleep_ms')::float8 "
           "FROM results r JOIN jobs j ON j.id = r.job_id WHERE r.run_id = $1",
           run)) {
    out.push_back({row[0].as<int64_t>(), row[1].as<double>(), row[2].as<double>(), row[3].as<double>()});
  }
  return out;
}

int64_t submit_sim(FleetStack& stack, const std::vector<double>& sleeps_ms, const std::string& dir,
                   const std::string& name) {
  const std::string file = dir + "/" + name + ".json";
  {
    std::ofstream out(file);  // `kb submit --sim-jobs FILE`: one sleep time (ms) per line
    for (double ms : sleeps_ms) out << ms << "\n";
  }
  auto reply = stack.kb_json({"submit", "--sim-jobs", file}, std::chrono::seconds(300));
  if (!reply.is_ok()) {
    std::cerr << "submit failed: " << reply.status().to_string() << "\n" << stack.logs_tail();
    std::exit(1);
  }
  return reply.value().value("run_id", int64_t{-1});
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"kb-fleet-bench: coordinator throughput, dispatch gap and makespan with sim workers"};
  int workers = 256, short_jobs = 40000, long_jobs = 3000, processes = 1;
  double short_ms = 10, long_min_ms = 50, long_max_ms = 500;
  std::string json_out;
  app.add_option("--workers", workers, "Simulated workers")->capture_default_str();
  app.add_option("--worker-processes", processes,
                 "kb-worker processes sharing them (one process simulates 256 on one core)")
      ->capture_default_str()->check(CLI::Range(1, 64));
  app.add_option("--short-jobs", short_jobs, "Jobs in the throughput phase")->capture_default_str();
  app.add_option("--short-ms", short_ms, "Their sleep: uniform in [0, this]")->capture_default_str();
  app.add_option("--long-jobs", long_jobs, "Jobs in the makespan phase")->capture_default_str();
  app.add_option("--long-min-ms", long_min_ms, "Their sleep: uniform in [min, max]")->capture_default_str();
  app.add_option("--long-max-ms", long_max_ms)->capture_default_str();
  app.add_option("--json", json_out, "Write the figures here");
  CLI11_PARSE(app, argc, argv);

  const std::string dir = make_work_dir("kb-fleet-bench");
  const std::string pg_local = source_dir() + "/tools/pg-local.sh";
  std::string url;
  if (run_command({"/bin/bash", pg_local, "start", dir + "/pg"}, &url, std::chrono::seconds(120)) != 0) {
    std::cerr << "cannot start PostgreSQL with " << pg_local << "\n";
    return 1;
  }
  url = url.substr(0, url.find_last_not_of("\n") + 1);
  nlohmann::json report;
  {
    FleetStack stack(FleetOptions{url, 1000, 3, 10000}, dir);
    if (auto s = stack.start_coordinator(); !s.is_ok()) {
      std::cerr << s.to_string() << "\n";
      return 1;
    }
    for (int p = 0; p < processes; ++p) {
      const int share = workers / processes + (p < workers % processes ? 1 : 0);
      stack.add_worker("sim" + std::to_string(p), {"--device", "sim", "--sim-workers", std::to_string(share)});
    }
    // Wait for every simulated worker to register.
    const auto reg_end = Clock::now() + std::chrono::seconds(60);
    while (true) {
      auto n = stack.query_value("SELECT count(*) FROM workers WHERE device_kind = 'sim'");
      if (n.is_ok() && !n.value().empty() && std::stoi(n.value()) >= workers) break;
      if (Clock::now() > reg_end) {
        std::cerr << "workers did not register\n" << stack.logs_tail();
        return 1;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    std::mt19937_64 random(42);

    // Phase 1: throughput and memory.
    std::vector<double> short_sleeps(static_cast<size_t>(short_jobs));
    std::uniform_real_distribution<double> short_dist(0, short_ms);
    for (double& s : short_sleeps) s = short_dist(random);
    std::vector<double> rss;
    const int64_t run1 = submit_sim(stack, short_sleeps, dir, "short");
    const auto t1 = Clock::now();
    while (!stack.wait_for_run(run1, std::chrono::seconds(0))) {
      rss.push_back(rss_mib(stack.coordinator_pid()));
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
      if (Clock::now() - t1 > std::chrono::minutes(10)) break;
    }
    const double submit_to_done_s = std::chrono::duration<double>(Clock::now() - t1).count();
    auto t = load_timings(url, run1);
    double first = 1e300, last = 0;
    for (const auto& j : t) {
      first = std::min(first, j.start_ms);
      last = std::max(last, j.end_ms);
    }
    const double jobs_per_s = static_cast<double>(t.size()) / ((last - first) / 1000.0);
    report["throughput"] = {{"workers", workers},          {"jobs", short_jobs},
                            {"results", t.size()},         {"sleep_ms_max", short_ms},
                            {"jobs_per_s", jobs_per_s},    {"submit_to_done_s", submit_to_done_s},
                            {"rss_mib_first", rss.empty() ? 0 : rss.front()},
                            {"rss_mib_max", rss.empty() ? 0 : *std::max_element(rss.begin(), rss.end())},
                            {"rss_mib_last", rss.empty() ? 0 : rss.back()}, {"rss_samples", rss.size()},
                            {"rss_mib_by_half_second", rss}};

    // Phase 2: makespan against the LPT bound, dispatch gap.
    std::vector<double> long_sleeps(static_cast<size_t>(long_jobs));
    std::uniform_real_distribution<double> long_dist(long_min_ms, long_max_ms);
    double total = 0, longest = 0;
    for (double& s : long_sleeps) {
      s = long_dist(random);
      total += s;
      longest = std::max(longest, s);
    }
    const int64_t run2 = submit_sim(stack, long_sleeps, dir, "long");
    stack.wait_for_run(run2, std::chrono::minutes(10));
    t = load_timings(url, run2);
    first = 1e300;
    last = 0;
    std::map<int64_t, std::vector<JobTiming>> by_worker;
    for (const auto& j : t) {
      first = std::min(first, j.start_ms);
      last = std::max(last, j.end_ms);
      by_worker[j.worker].push_back(j);
    }
    std::vector<double> gaps, overrun;
    double actual_total = 0, actual_longest = 0;
    for (const auto& j : t) {
      const double d = j.end_ms - j.start_ms;
      actual_total += d;
      actual_longest = std::max(actual_longest, d);
      overrun.push_back(d - j.requested_ms);
    }
    for (auto& [w, jobs] : by_worker) {
      std::sort(jobs.begin(), jobs.end(), [](auto& a, auto& b) { return a.start_ms < b.start_ms; });
      for (size_t i = 1; i < jobs.size(); ++i) gaps.push_back(jobs[i].start_ms - jobs[i - 1].end_ms);
    }
    const double bound = std::max(total / workers, longest);
    const double makespan = last - first;
    // The simulator's own timer slop (a job sleeping longer than asked on a loaded machine) is
    // not the scheduler's doing: the bound over the measured job durations separates the two.
    const double actual_bound = std::max(actual_total / workers, actual_longest);
    report["makespan"] = {{"workers", workers},
                          {"jobs", long_jobs},
                          {"results", t.size()},
                          {"sleep_ms", {long_min_ms, long_max_ms}},
                          {"makespan_ms", makespan},
                          {"lpt_lower_bound_ms", bound},
                          {"ratio", makespan / bound},
                          {"lpt_bound_on_measured_durations_ms", actual_bound},
                          {"ratio_to_measured_bound", makespan / actual_bound},
                          {"sim_overrun_ms_median", percentile(overrun, 0.5)},
                          {"sim_overrun_ms_p99", percentile(overrun, 0.99)},
                          {"dispatch_gap_ms_median", percentile(gaps, 0.5)},
                          {"dispatch_gap_ms_p99", percentile(gaps, 0.99)}};
  }
  std::string ignored;
  run_command({"/bin/bash", pg_local, "stop", dir + "/pg"}, &ignored, std::chrono::seconds(60));
  std::cout << report.dump(2) << "\n";
  if (!json_out.empty()) std::ofstream(json_out) << report.dump(2) << "\n";
  std::filesystem::remove_all(dir);
  return 0;
}
