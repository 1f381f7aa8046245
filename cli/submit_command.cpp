#include "cli/submit_command.h"

#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <memory>
#include <random>
#include <sstream>

#include "cli/ci_gate_command.h"
#include "cli/cli_app.h"
#include "cli/fleet_options.h"
#include "cli/pack_file.h"
#include "cli/watch_command.h"
#include "common/job_result.h"
#include "common/protocol_messages.h"
#include "common/spec_loader.h"

namespace kb::cli {
namespace {

struct SubmitOptions {
  FleetOptions fleet;
  std::vector<std::string> problems;  // suite name or ids (each may be comma-separated)
  std::string preset;  // default: full, or sim for a sim run
  std::vector<std::string> gpu_models;
  std::string commit, branch, commit_time;
  std::string pack, sim_jobs, problems_dir, submitted_by;
  uint64_t seed = 0;
  double time_cap = 0;  // 0: the worker's default
  double job_timeout = 0;  // 0: the coordinator derives it
  int max_attempts = 3;
  int trials = -1;  // correctness trials per job; -1: the worker's default
  bool wait = false;
  GateFlags gate;
};

// What the run is made of, checked against the catalog.
struct RunContent {
  std::string suite;             // "" for a list of ids or a sim run
  std::vector<std::string> ids;  // empty for a sim run
  std::vector<double> sim_jobs;
};

std::string join(const std::vector<std::string>& parts, const char* separator) {
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : separator) + p;
  return out;
}

RunContent resolve_content(SubmitOptions& o) {
  RunContent content;
  if (o.preset.empty()) o.preset = o.sim_jobs.empty() ? "full" : "sim";
  if (!o.sim_jobs.empty()) {
    if (!o.problems.empty()) fail(kExitUsage, "--sim-jobs makes a run of sim jobs: leave out the problems");
    auto sim = parse_sim_jobs(o.sim_jobs);
    if (!sim.is_ok()) fail(kExitUsage, sim.status().message());
    content.sim_jobs = std::move(sim).value();
    // Sim jobs only make sense on sim workers (a real worker would report "no problem sim").
    if (o.gpu_models.empty()) o.gpu_models = {"sim"};
    return content;
  }
  const std::string names = o.problems.empty() ? "kernelbench22" : join(o.problems, ",");
  auto catalog = load_problem_catalog(o.problems_dir);
  if (!catalog.is_ok()) {
    fail(kExitUsage, "cannot load the problem catalog: " + catalog.status().message() +
                         " (pass --problems-dir or set KB_PROBLEMS_DIR)");
  }
  auto ids = catalog->resolve(names);
  if (!ids.is_ok()) fail(kExitUsage, ids.status().message());
  for (const std::string& id : ids.value()) {
    const ProblemSpec* spec = catalog->find(id);
    if (spec->find_preset(o.preset) != nullptr) continue;
    std::string known;
    for (const auto& p : spec->presets) known += (known.empty() ? "" : ", ") + p.name;
    fail(kExitUsage, "unknown preset '" + o.preset + "' for " + id + " (its presets: " + known + ")");
  }
  if (catalog->suites.count(names)) content.suite = names;
  content.ids = std::move(ids).value();
  return content;
}

std::string run_command(const char* command) {
  std::string out;
  if (FILE* pipe = popen(command, "r")) {
    char buffer[256];
    while (std::fgets(buffer, sizeof buffer, pipe)) out += buffer;
    if (pclose(pipe) != 0) return "";
  }
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  return out;
}

std::string default_submitter() {
  std::string user;
  if (const char* env = std::getenv("USER"); env != nullptr && *env != '\0') user = env;
  if (user.empty()) {
    if (const passwd* entry = getpwuid(geteuid())) user = entry->pw_name;
  }
  char host[256] = "localhost";
  gethostname(host, sizeof host - 1);
  return (user.empty() ? std::string("unknown") : user) + "@" + host;
}

wire::SubmitMessage submit_message(const SubmitOptions& o, const RunContent& content,
                                   const std::string& pack_hash) {
  wire::SubmitMessage m{
      // The resolved ids, comma-separated (a suite's members are resolved here, so the
      // coordinator does not need our catalog's suites).
      .problems = join(content.ids, ","),
      .suite = content.suite,
      .preset = o.preset,
      .gpu_models = o.gpu_models,
      .commit_sha = o.commit,
      .branch = o.branch,
      .commit_time = o.commit_time,
      .pack = pack_hash,
      .submitted_by = o.submitted_by,
      .seed = o.seed,
      .time_cap_s = o.time_cap,
      .max_attempts = o.max_attempts};
  if (o.trials >= 0) m.trials = o.trials;
  if (o.job_timeout > 0) m.job_timeout_s = o.job_timeout;
  if (!content.sim_jobs.empty()) m.sim_jobs = content.sim_jobs;
  return m;
}

std::optional<PackFile> load_pack(const SubmitOptions& o, bool sim_run) {
  std::string path = o.pack.empty() ? default_pack_path() : o.pack;
  if (path.empty()) {
    if (sim_run) return std::nullopt;  // sim jobs need no pack
    fail(kExitUsage, "no kernel pack found: build it (cmake --build build --target kbpack), pass "
                     "--pack FILE or set KB_PACK_PATH");
  }
  auto pack = read_pack_file(path);
  if (!pack.is_ok()) fail(kExitUsage, pack.status().message() + " (pass --pack FILE or set KB_PACK_PATH)");
  return std::move(pack).value();
}

// Asks whether the coordinator has the pack (QUERY {what: pack}); sends it along only if not.
wire::SubmitReply submit_run(FleetClient& client, const SubmitOptions& o,
                             const wire::SubmitMessage& run, const std::optional<PackFile>& pack) {
  // The coordinator stores every job of the run in one transaction before it answers: allow 1 s
  // per 10,000 jobs on top (a 120,000-job sim run took ~12 s on two busy cores).
  const size_t jobs = run.sim_jobs ? run.sim_jobs->size() : 0;
  wire::Message submit = wire::to_message(run);
  if (pack) {
    const wire::QueryMessage query{.what = "pack", .pack = pack->sha256};
    auto have = client.ask<wire::PackQueryReply>(wire::to_message(query), request_timeout(o.fleet));
    if (!have.is_ok()) fail(kExitFailure, have.status().message());
    if (!have->have) submit.payload = pack->bytes;
  }
  // Storing a pack's bytes takes the coordinator a moment: allow 1 s per 10 MB on top.
  const auto timeout = request_timeout(o.fleet) + std::chrono::milliseconds(submit.payload.size() / 10000) +
                       std::chrono::milliseconds(jobs / 10);
  auto reply = client.ask<wire::SubmitReply>(submit, timeout);
  if (!reply.is_ok() && reply.status().code() == StatusCode::kNotFound && pack && submit.payload.empty()) {
    submit.payload = pack->bytes;  // the coordinator lost the pack since our query: send it
    reply = client.ask<wire::SubmitReply>(
        submit, timeout + std::chrono::milliseconds(pack->bytes.size() / 10000));
  }
  if (!reply.is_ok()) fail(reply.status());
  return reply.value();
}

void run_submit(SubmitOptions o) {
  if (o.gate.gate && !o.wait) fail(kExitUsage, "--gate needs --wait (it gates the finished run)");
  if (Status s = check_gate_flags(o.gate); !s.is_ok()) fail(kExitUsage, s.message());
  const RunContent content = resolve_content(o);
  const FleetConfig config = resolve_or_fail(o.fleet, o.wait ? Needs::kBoth : Needs::kCoordinator);
  const std::optional<PackFile> pack = load_pack(o, !content.sim_jobs.empty());
  if (o.commit.empty()) {
    const GitLabels git = read_git_labels();
    o.commit = git.commit_sha;
    if (o.branch.empty()) o.branch = git.branch;
    if (o.commit_time.empty()) o.commit_time = git.commit_time;
  }
  if (o.submitted_by.empty()) o.submitted_by = default_submitter();
  if (o.seed == 0) o.seed = (uint64_t{std::random_device{}()} << 21 ^ std::random_device{}()) & ((uint64_t{1} << 53) - 1);
  const wire::SubmitMessage run = submit_message(o, content, pack ? pack->sha256 : "");
  // The coordinator's own rules (the fleet's verification policy among them), before a round trip.
  if (Status s = wire::submit_rules(run); !s.is_ok()) fail(kExitUsage, s.message());
  auto client = connect_or_fail(config);
  const wire::SubmitReply reply = submit_run(*client, o, run, pack);
  const int64_t run_id = reply.run_id;
  const size_t expected = content.sim_jobs.empty() ? content.ids.size() * std::max<size_t>(1, o.gpu_models.size())
                                                   : content.sim_jobs.size();
  const int64_t jobs = reply.jobs > 0 ? reply.jobs : static_cast<int64_t>(expected);
  const std::string what = !content.suite.empty() ? content.suite
                           : content.sim_jobs.empty() ? "problem list" : "sim jobs";
  std::fprintf(o.fleet.json ? stderr : stdout, "submitted run %lld: %lld job%s (%s, preset %s%s%s)\n",
               static_cast<long long>(run_id), static_cast<long long>(jobs), jobs == 1 ? "" : "s", what.c_str(), o.preset.c_str(),
               o.commit.empty() ? "" : ", commit ", o.commit.substr(0, 10).c_str());
  if (!o.wait) {
    if (o.fleet.json) {
      std::printf(
          "%s\n",
          nlohmann::json{{"run_id", run_id}, {"jobs", jobs}, {"pack", run.pack}}.dump(1).c_str());
    } else {
      std::printf("follow it with `kb watch %lld`; results with `kb results %lld`\n",
                  static_cast<long long>(run_id), static_cast<long long>(run_id));
    }
    return;
  }
  std::fflush(stdout);
  WatchOptions watch;
  watch.json = o.fleet.json;
  watch.print_results = true;
  int code = watch_run(config.db, run_id, watch);
  if (o.gate.gate) {
    std::fflush(stdout);
    code = std::max(code, run_gate(config.db, run_id, o.gate, o.fleet.json ? stderr : stdout));
  }
  if (code != kExitOk) throw CLI::RuntimeError(code);
}

}  // namespace

Result<std::vector<double>> parse_sim_jobs(const std::string& spec) {
  std::vector<double> jobs;
  long long count = 0;
  double ms = 0;
  char tail = 0;
  if (std::sscanf(spec.c_str(), "%lld:%lf%c", &count, &ms, &tail) == 2) {
    if (count <= 0 || count > 10'000'000 || ms < 0) {
      return Status::invalid_argument("--sim-jobs " + spec + ": expected N:MS with N > 0 and MS >= 0");
    }
    return std::vector<double>(static_cast<size_t>(count), ms);
  }
  std::ifstream in(spec);
  if (!in) return Status::invalid_argument("--sim-jobs " + spec + ": neither N:MS nor a readable file");
  std::string line;
  for (int line_number = 1; std::getline(in, line); ++line_number) {
    line = line.substr(0, line.find('#'));
    for (char& c : line) c = c == ',' ? ' ' : c;
    std::istringstream words(line);
    std::string word;
    while (words >> word) {
      char* end = nullptr;
      const double value = std::strtod(word.c_str(), &end);
      if (*end != '\0' || value < 0) {
        return Status::invalid_argument(spec + ":" + std::to_string(line_number) + ": '" + word +
                                        "' is not a sleep time in ms");
      }
      jobs.push_back(value);
    }
  }
  if (jobs.empty()) return Status::invalid_argument("--sim-jobs " + spec + ": the file lists no jobs");
  return jobs;
}

GitLabels read_git_labels() {
  GitLabels labels;
  if (run_command("git rev-parse --is-inside-work-tree 2>/dev/null") != "true") return labels;
  labels.commit_sha = run_command("git rev-parse HEAD 2>/dev/null");
  labels.branch = run_command("git rev-parse --abbrev-ref HEAD 2>/dev/null");
  labels.commit_time = run_command("git show -s --format=%cI HEAD 2>/dev/null");
  return labels;
}

void add_submit_command(CLI::App& app) {
  auto o = std::make_shared<SubmitOptions>();
  o->problems_dir = default_problems_dir();
  CLI::App* submit = app.add_subcommand("submit", "Submit a run (a suite or problem ids) to the coordinator");
  submit->add_option("problems", o->problems, "A suite name or problem ids (default: kernelbench22)");
  submit->add_option("--preset", o->preset, "Size preset: full, small or odd (default: full)");
  submit->add_option("--gpu", o->gpu_models, "Run on this GPU model (repeatable; default: any worker, `sim` for --sim-jobs)");
  submit->add_option("--commit", o->commit, "Commit label (default: git rev-parse HEAD)");
  submit->add_option("--branch", o->branch, "Branch label (default: the current git branch)");
  submit->add_option("--commit-time", o->commit_time, "Commit time, ISO 8601 (default: from git)");
  submit->add_option("--pack", o->pack, "Kernel pack (default: $KB_PACK_PATH or libkbpack.so beside kb)");
  submit->add_option("--seed", o->seed, "Run seed (default: a fresh random one)");
  submit->add_option("--time-cap", o->time_cap, "Timing cap per job, seconds (default: the worker's)")
      ->check(CLI::NonNegativeNumber);
  submit->add_option("--job-timeout", o->job_timeout,
                     "A job running longer than this many seconds ends as `timeout` (default: from "
                     "its predicted time and the time cap, at least 55 s)")
      ->check(CLI::PositiveNumber);
  submit->add_option("--trials", o->trials, "Correctness trials per job, >= 3 (default: the worker's)");
  submit->add_option("--max-attempts", o->max_attempts, "Leases per job before it fails (1..10)")
      ->capture_default_str();
  submit->add_option("--sim-jobs", o->sim_jobs, "Sim jobs for the benchmark: N:MS or a file of ms values");
  submit->add_option("--problems-dir", o->problems_dir, "Directory of problem specs")->capture_default_str();
  submit->add_option("--submitted-by", o->submitted_by, "Who submits, on a coordinator without keys (default: $USER@host); with keys it is the key's name");
  submit->add_flag("--wait", o->wait, "Follow the run until it is done, then print the results table");
  add_gate_options(submit, o->gate);
  add_fleet_options(submit, o->fleet, Needs::kBoth);
  submit->callback([o] { run_submit(*o); });
}

}  // namespace kb::cli
