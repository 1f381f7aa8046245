// kb-worker: registers with the coordinator, runs its jobs (each in a kb-executor child) and
// delivers every result at least once (worker/worker_session.h has the protocol side).
//
// One event loop drives 1..K sessions: K > 1 only for `--device sim --sim-workers K`, the
// benchmark's simulated fleet (256 workers in one process: one zmq_poll over their sockets,
// sim jobs end on timers, no thread per job).
//
// SIGTERM/SIGINT drains: the held (prefetched) jobs go back to the coordinator at once (BYE
// {draining}), the running job finishes (up to its timeout) and its result is delivered, then
// BYE {final} tells the coordinator the worker is gone, and it exits 0. A second signal kills the
// running job and gives it back (BYE {final}) at once. Unacked results get kFlushLimit to be
// acknowledged; the spool keeps what was not for the next start.
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>
#include <CLI/CLI.hpp>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <vector>

#include "worker/executor_process.h"
#include "worker/worker_session.h"

namespace {

namespace fs = std::filesystem;
using kb::SteadyClock;

// After SIGTERM, how long unacked results may wait for their ACK before the worker exits.
constexpr auto kFlushLimit = std::chrono::seconds(3);
constexpr double kDescribeTimeoutS = 60;

volatile std::sig_atomic_t g_signals = 0;  // SIGTERM/SIGINT received
void on_signal(int) {
  g_signals = g_signals + 1;
}

struct Options {
  std::string coordinator, device = "cuda", name, state_dir, executor, problems_dir, curve_key,
                           coordinator_key, execution_log;
  int gpu = 0, sim_workers = 1;
  bool sim_fsync = false;
};

std::string hostname() {
  char buf[256] = "";
  gethostname(buf, sizeof buf - 1);
  return buf;
}

// {device, software} for READY: from `kb-executor --describe` (cuda, cpu), so that this process
// never loads CUDA; made up for sim.
kb::Result<nlohmann::json> describe(const Options& o) {
  if (o.device == "sim") {
    return nlohmann::json{{"device",
                           {{"kind", "sim"},
                            {"model", "sim"},
                            {"uuid", ""},
                            {"memory_bytes", 0},
                            {"compute_capability", ""}}},
                          {"software", {{"kbfleet", KB_VERSION}}}};
  }
  kb::ExecutorLaunch launch;
  launch.executable = o.executor;
  launch.args = {"--describe", "--device", o.device};
  if (o.device == "cuda") launch.args.insert(launch.args.end(), {"--gpu", std::to_string(o.gpu)});
  launch.timeout_s = kDescribeTimeoutS;
  kb::Result<std::string> text = kb::run_for_output(launch);
  if (!text.is_ok()) return text.status();
  nlohmann::json identity = nlohmann::json::parse(text.value(), nullptr, false);
  if (!identity.is_object())
    return kb::Status::internal("kb-executor --describe printed no JSON object");
  nlohmann::json software = identity.value("software", nlohmann::json::object());
  identity.erase("software");
  return nlohmann::json{{"device", identity}, {"software", software}};
}

std::unique_ptr<kb::JobRunner> make_runner(const Options& o) {
  if (o.device == "sim") return std::make_unique<kb::SimJobRunner>();
  return std::make_unique<kb::ExecutorJobRunner>(
      kb::ExecutorRunnerConfig{o.executor, o.device, o.gpu, o.problems_dir});
}

kb::Result<std::unique_ptr<kb::WorkerSession>> make_session(zmq::context_t& context,
                                                            const Options& o,
                                                            const nlohmann::json& identity,
                                                            const std::string& name,
                                                            const fs::path& state) {
  auto spool = kb::ResultSpool::open(state / "results", o.device != "sim" || o.sim_fsync);
  if (!spool.is_ok()) return spool.status();
  kb::SessionConfig config;
  config.name = name;
  config.endpoint = o.coordinator;
  config.device = identity["device"];
  config.software = identity["software"];
  config.host = hostname();
  config.needs_packs = o.device != "sim";
  config.execution_log = o.execution_log;
  if (!o.curve_key.empty()) {
    auto own = kb::curve::load_key_file(o.curve_key, /*require_secret=*/true);
    if (!own.is_ok()) return own.status();
    auto server = kb::curve::load_key_file(o.coordinator_key, /*require_secret=*/false);
    if (!server.is_ok()) return server.status();
    config.curve_keys = own.value();
    config.coordinator_key = server->public_key;
  }
  return std::make_unique<kb::WorkerSession>(context, std::move(config), make_runner(o),
                                             std::move(spool).value(),
                                             kb::PackCache(state / "packs"));
}

// 256 sessions hold 2 descriptors each and more while reconnecting.
void raise_file_limit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    setrlimit(RLIMIT_NOFILE, &limit);
  }
}

// True when the loop should end: drained (nothing running or held) and every unacked result
// acknowledged, or the flush limit passed.
bool drained(std::vector<std::unique_ptr<kb::WorkerSession>>& sessions, SteadyClock::time_point now,
             std::optional<SteadyClock::time_point>& flush_until) {
  for (auto& s : sessions) {
    if (s->busy()) return false;
  }
  if (!flush_until) flush_until = now + kFlushLimit;
  for (auto& s : sessions) {
    if (s->has_unacked_results() && s->state() == kb::SessionState::kRegistered &&
        now < *flush_until)
      return false;
  }
  return true;
}

void run_loop(std::vector<std::unique_ptr<kb::WorkerSession>>& sessions) {
  std::vector<zmq::pollitem_t> items;
  std::vector<size_t> owners;
  int signals_seen = 0;
  std::optional<SteadyClock::time_point> flush_until;
  for (auto& s : sessions) s->start(SteadyClock::now());
  while (true) {
    SteadyClock::time_point now = SteadyClock::now();
    const int signals = g_signals;
    if (signals != signals_seen) {
      for (auto& s : sessions) {
        if (signals_seen == 0) s->drain(now);
        if (signals >= 2) s->stop_now(now);
      }
      signals_seen = signals;
    }
    const bool draining = signals_seen > 0;
    if (draining && drained(sessions, now, flush_until)) {
      for (auto& s : sessions) s->say_goodbye(now);
      return;
    }
    items.clear();
    owners.clear();
    SteadyClock::time_point next = now + std::chrono::seconds(1);
    for (size_t i = 0; i < sessions.size(); ++i) {
      if (auto item = sessions[i]->pollitem()) {
        items.push_back(*item);
        owners.push_back(i);
      }
      next = std::min(next, sessions[i]->next_deadline());
    }
    if (draining) next = std::min(next, now + std::chrono::milliseconds(50));
    const auto wait = std::chrono::ceil<std::chrono::milliseconds>(
        std::max(next - now, SteadyClock::duration::zero()));
    try {
      zmq::poll(items.data(), items.size(), wait);
    } catch (const zmq::error_t& e) {
      if (e.num() != EINTR) throw;
      continue;
    }
    now = SteadyClock::now();
    for (size_t k = 0; k < items.size(); ++k) {
      if (items[k].revents & ZMQ_POLLIN) sessions[owners[k]]->on_readable(now);
    }
    for (auto& s : sessions) {
      if (s->next_deadline() <= now) s->on_tick(now);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (const char* env = std::getenv("KB_COORDINATOR")) o.coordinator = env;
  if (const char* env = std::getenv("KB_EXECUTION_LOG")) o.execution_log = env;
  o.executor = kb::default_executor_path();
  CLI::App app{"kb-worker: runs kbfleet jobs for a coordinator"};
  app.add_option("--coordinator", o.coordinator,
                 "tcp://HOST:PORT of the coordinator (env KB_COORDINATOR)");
  auto* gpu = app.add_option("--gpu", o.gpu, "GPU ordinal (implies --device cuda)");
  app.add_option("--device", o.device, "cuda, cpu or sim")
      ->check(CLI::IsMember({"cuda", "cpu", "sim"}));
  app.add_option("--sim-workers", o.sim_workers,
                 "With --device sim: simulated workers in this process")
      ->check(CLI::Range(1, 4096));
  app.add_flag("--sim-fsync", o.sim_fsync,
               "With --device sim: fsync the result spool as real workers do");
  app.add_option("--name", o.name, "Worker name (default: HOST-gpuN, HOST-cpu, HOST-sim)");
  app.add_option("--state-dir", o.state_dir,
                 "Results spool and pack cache (default ~/.local/state/kbfleet/worker-NAME)");
  app.add_option("--executor", o.executor, "kb-executor to run jobs with")->capture_default_str();
  app.add_option("--problems-dir", o.problems_dir, "Problem specs, passed to kb-executor");
  app.add_option("--curve-key", o.curve_key, "This worker's CURVE key file (public + secret)");
  app.add_option("--coordinator-key", o.coordinator_key, "The coordinator's public key file");
  app.add_option("--execution-log", o.execution_log,
                 "Append 'job_id,attempt,event,worker' per job start/finish/revoke/abort to this "
                 "file (fault tests; env KB_EXECUTION_LOG)");
  CLI11_PARSE(app, argc, argv);
  if (o.coordinator.empty()) {
    std::fprintf(stderr, "kb-worker: --coordinator (or KB_COORDINATOR) is required\n");
    return 2;
  }
  if (o.curve_key.empty() != o.coordinator_key.empty()) {
    std::fprintf(stderr, "kb-worker: --curve-key and --coordinator-key go together\n");
    return 2;
  }
  if (gpu->count() > 0) o.device = "cuda";
  if (o.sim_workers > 1 && o.device != "sim") {
    std::fprintf(stderr, "kb-worker: --sim-workers needs --device sim\n");
    return 2;
  }
  if (o.name.empty())
    o.name = hostname() + "-" + (o.device == "cuda" ? "gpu" + std::to_string(o.gpu) : o.device);
  if (o.state_dir.empty()) {
    const char* home = std::getenv("HOME");
    o.state_dir =
        (fs::path(home ? home : "/tmp") / ".local/state/kbfleet" / ("worker-" + o.name)).string();
  }
  auto identity = describe(o);
  if (!identity.is_ok()) {
    std::fprintf(stderr, "kb-worker: cannot describe the %s device: %s\n", o.device.c_str(),
                 identity.status().message().c_str());
    return 1;
  }
  struct sigaction action {};
  action.sa_handler = on_signal;
  sigaction(SIGTERM, &action, nullptr);
  sigaction(SIGINT, &action, nullptr);
  raise_file_limit();
  try {
    zmq::context_t context;
    std::vector<std::unique_ptr<kb::WorkerSession>> sessions;
    for (int i = 0; i < o.sim_workers; ++i) {
      const std::string name = o.sim_workers > 1 ? o.name + "-" + std::to_string(i) : o.name;
      const fs::path state =
          o.sim_workers > 1 ? fs::path(o.state_dir) / name : fs::path(o.state_dir);
      auto session = make_session(context, o, identity.value(), name, state);
      if (!session.is_ok()) {
        std::fprintf(stderr, "kb-worker: %s\n", session.status().message().c_str());
        return 1;
      }
      sessions.push_back(std::move(session).value());
    }
    std::fprintf(stderr, "kb-worker: %d session(s) of %s to %s\n", o.sim_workers, o.name.c_str(),
                 o.coordinator.c_str());
    run_loop(sessions);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kb-worker: %s\n", e.what());
    return 1;
  }
  return 0;
}
