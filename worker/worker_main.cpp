// kb-worker: registers with the coordinator, runs its jobs (each in a kb-executor child) and
// delivers every result at least once (worker/worker_session.h has the protocol side).
//
// One event loop drives 1..K sessions: K > 1 only for `--device sim --sim-workers K`, the
// benchmark's simulated fleet (256 workers in one process: one zmq_poll over their sockets,
// sim jobs end on timers, no thread per job).
//
// Candidate code is sandboxed: each kb-executor child runs under bubblewrap (--sandbox, default
// auto; worker/sandbox.h, docs/sandbox.md) with the trusted reference pack (--reference-pack,
// default the installation's libkbref.so) checked against its pin before the worker starts and
// again by every executor. The state dir is created 0700; without --state-dir it is
// $XDG_STATE_HOME/kbfleet/worker-NAME or ~/.local/state/kbfleet/worker-NAME, never /tmp.
//
// SIGTERM/SIGINT: stop requesting, kill the running child, give unacked results a moment to be
// acknowledged, exit 0 (the spool keeps what was not acknowledged for the next start).
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>
#include <CLI/CLI.hpp>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <vector>

#include "common/sha256.h"
#include "common/spec_loader.h"
#include "worker/executor_process.h"
#include "worker/kernel_pack.h"
#include "worker/pack_cache.h"
#include "worker/sandbox.h"
#include "worker/worker_session.h"

namespace {

namespace fs = std::filesystem;
using kb::SteadyClock;

// After SIGTERM, how long unacked results may wait for their ACK before the worker exits.
constexpr auto kFlushLimit = std::chrono::seconds(3);
constexpr double kDescribeTimeoutS = 60;

volatile std::sig_atomic_t g_stop = 0;
void on_signal(int) {
  g_stop = 1;
}

struct Options {
  std::string coordinator, device = "cuda", name, state_dir, executor, problems_dir, curve_key,
                           coordinator_key, reference_pack, sandbox_mode = "auto";
  int gpu = 0, sim_workers = 1;
  int64_t sandbox_uid = -1;
  uint64_t sandbox_memory_mb = 0;
  bool sim_fsync = false;
  std::string reference_sha256;  // the pin, checked at start
  kb::SandboxConfig sandbox;
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
  launch.sandbox = o.sandbox;  // so that a sandbox that cannot run the executor fails here
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
  return std::make_unique<kb::ExecutorJobRunner>(kb::ExecutorRunnerConfig{
      o.executor, o.device, o.gpu, o.problems_dir, o.reference_pack, o.reference_sha256, o.sandbox});
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

// The state dir: --state-dir, else under $XDG_STATE_HOME or ~/.local/state; never a shared /tmp.
kb::Result<fs::path> state_dir_of(const Options& o) {
  if (!o.state_dir.empty()) return fs::path(o.state_dir);
  const std::string leaf = "kbfleet/worker-" + o.name;
  if (const char* xdg = std::getenv("XDG_STATE_HOME"); xdg && *xdg == '/') return fs::path(xdg) / leaf;
  if (const char* home = std::getenv("HOME"); home && *home == '/') return fs::path(home) / ".local/state" / leaf;
  return kb::Status::failed_precondition(
      "no state dir: pass --state-dir, or set HOME or XDG_STATE_HOME (the worker keeps its results "
      "spool and pack cache there, and will not fall back to a shared /tmp)");
}

// The reference pack and its pin: the file must hash to the sha256 recorded beside it.
kb::Status pin_reference_pack(Options& o) {
  if (o.reference_pack.empty()) o.reference_pack = kb::default_reference_pack_path();
  if (o.reference_pack.empty()) {
    return kb::Status::not_found("no reference pack (libkbref.so) found: pass --reference-pack or set KB_REFERENCE_PACK");
  }
  auto pin = kb::read_pack_pin(o.reference_pack);
  if (!pin.is_ok()) return pin.status();
  std::ifstream in(o.reference_pack, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  const std::string actual = kb::sha256_hex(bytes.str());
  if (actual != pin.value()) {
    return kb::Status::failed_precondition("reference pack " + o.reference_pack + " has sha256 " + actual +
                                           " but is pinned to " + pin.value() + ": refusing to start");
  }
  o.reference_sha256 = pin.value();
  return kb::Status::ok();
}

// The sandbox around the executors: hides $HOME, the state dir and the key files; exposes the
// executor and the problem specs read-only; the packs go in as descriptors.
kb::Status configure_sandbox(Options& o, const fs::path& state) {
  std::string bwrap;
  auto mode = kb::resolve_sandbox_mode(o.sandbox_mode, &bwrap);
  if (!mode.is_ok()) return mode.status();
  kb::SandboxConfig& c = o.sandbox;
  c.mode = mode.value();
  if (c.mode == kb::SandboxMode::kOff) return kb::Status::ok();
  c.bwrap = bwrap;
  c.gpu = o.device == "cuda" ? o.gpu : -1;
  c.uid = o.sandbox_uid;
  std::error_code ec;
  auto canonical = [&ec](const std::string& p) { return fs::weakly_canonical(p, ec).string(); };
  if (const char* home = std::getenv("HOME"); home && *home == '/' && canonical(home) != "/") {
    c.hidden_dirs.push_back(canonical(home));
  }
  c.hidden_dirs.push_back(canonical(state.string()));
  for (const std::string& key : {o.curve_key, o.coordinator_key}) {
    if (!key.empty()) c.hidden_files.push_back(canonical(key));
  }
  c.read_only_paths = {canonical(o.executor),
                       canonical(o.problems_dir.empty() ? kb::default_problems_dir() : o.problems_dir)};
  const uint64_t memory_mb = o.sandbox_memory_mb
                                 ? o.sandbox_memory_mb
                                 : static_cast<uint64_t>(sysconf(_SC_PHYS_PAGES)) *
                                       static_cast<uint64_t>(sysconf(_SC_PAGESIZE)) / 2 >> 20;
  c.limits.data_bytes = memory_mb << 20;
  return kb::Status::ok();
}

// 256 sessions hold 2 descriptors each and more while reconnecting.
void raise_file_limit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    setrlimit(RLIMIT_NOFILE, &limit);
  }
}

void run_loop(std::vector<std::unique_ptr<kb::WorkerSession>>& sessions) {
  std::vector<zmq::pollitem_t> items;
  std::vector<size_t> owners;
  bool draining = false;
  SteadyClock::time_point flush_until{};
  for (auto& s : sessions) s->start(SteadyClock::now());
  while (true) {
    SteadyClock::time_point now = SteadyClock::now();
    if (g_stop && !draining) {
      draining = true;
      flush_until = now + kFlushLimit;
      for (auto& s : sessions) s->drain();
    }
    if (draining) {
      bool unacked = false;
      for (auto& s : sessions)
        unacked =
            unacked || (s->has_unacked_results() && s->state() == kb::SessionState::kRegistered);
      if (!unacked || now >= flush_until) return;
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
  app.add_option("--reference-pack", o.reference_pack,
                 "Trusted reference pack (default: $KB_REFERENCE_PACK or the installation's libkbref.so; "
                 "must match the sha256 in PACK.sha256)");
  app.add_option("--sandbox", o.sandbox_mode, "Run each job's executor under bubblewrap: off, bwrap or auto "
                 "(bwrap when installed)")
      ->check(CLI::IsMember({"off", "bwrap", "auto"}))->capture_default_str();
  app.add_option("--sandbox-uid", o.sandbox_uid,
                 "When running as root: the unprivileged uid (and gid) the sandboxed executor runs as")
      ->check(CLI::Range(int64_t{1}, int64_t{4294967294}));
  app.add_option("--sandbox-memory-mb", o.sandbox_memory_mb,
                 "RLIMIT_DATA of the sandboxed executor (default: half of physical memory)");
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
  auto state_dir = state_dir_of(o);
  if (!state_dir.is_ok()) {
    std::fprintf(stderr, "kb-worker: %s\n", state_dir.status().message().c_str());
    return 2;
  }
  o.state_dir = state_dir->string();
  if (kb::Status s = kb::make_private_dir(o.state_dir); !s.is_ok()) {
    std::fprintf(stderr, "kb-worker: %s\n", s.message().c_str());
    return 1;
  }
  if (o.device != "sim") {
    kb::Status s = pin_reference_pack(o);
    if (s.is_ok()) s = configure_sandbox(o, o.state_dir);
    if (!s.is_ok()) {
      std::fprintf(stderr, "kb-worker: %s\n", s.message().c_str());
      return 1;
    }
    std::fprintf(stderr, "kb-worker: reference pack %s (sha256 %s); sandbox %s\n", o.reference_pack.c_str(),
                 o.reference_sha256.substr(0, 12).c_str(), kb::describe_sandbox(o.sandbox).c_str());
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
