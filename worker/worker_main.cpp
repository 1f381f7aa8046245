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
// SIGTERM/SIGINT drains: the held (prefetched) jobs go back to the coordinator at once (BYE
// {draining}), the running job finishes (up to its timeout) and its result is delivered, then
// BYE {final} tells the coordinator the worker is gone, and it exits 0. A second signal kills the
// running job and gives it back (BYE {final}) at once. Unacked results get kFlushLimit to be
// acknowledged; the spool keeps what was not for the next start.
//
// Configuration: /etc/kbfleet/worker.yaml (or --config), the environment, flags (common/
// config_file.h; keys in deploy/README.md). `--gpu all`: one child per visible GPU
// (worker/gpu_children.h). /healthz and /metrics on --http-bind (worker/worker_metrics.h).
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>
#include <CLI/CLI.hpp>

#include <boost/asio/io_context.hpp>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <thread>
#include <sstream>
#include <vector>

#include "common/config_file.h"
#include "common/files.h"
#include "common/install_paths.h"
#include "common/log.h"
#include "common/sha256.h"
#include "common/spec_loader.h"
#include "coordinator/http_endpoint.h"
#include "worker/executor_child.h"
#include "worker/gpu_children.h"
#include "worker/nvml_gauges.h"
#include "worker/pack_cache.h"
#include "worker/sandbox.h"
#include "worker/worker_metrics.h"
#include "worker/worker_session.h"

namespace {

namespace fs = std::filesystem;
using kb::SteadyClock;

// After SIGTERM, how long unacked results may wait for their ACK before the worker exits.
constexpr auto kFlushLimit = std::chrono::seconds(3);
constexpr double kDescribeTimeoutS = 60;
constexpr const char* kDefaultConfig = "/etc/kbfleet/worker.yaml";
// How often the loop publishes its sessions' states (for /metrics and /healthz), and how stale
// they may be before /healthz says the loop is stuck.
constexpr auto kPublishEvery = std::chrono::milliseconds(500);
constexpr auto kHealthyWithin = std::chrono::seconds(10);

volatile std::sig_atomic_t g_signals = 0;  // SIGTERM/SIGINT received
void on_signal(int) {
  g_signals = g_signals + 1;
}

struct Options {
  std::string coordinator, device = "cuda", name, state_dir, executor, problems_dir, curve_key,
                           coordinator_key, execution_log, reference_pack, sandbox_mode = "auto", config = kDefaultConfig, gpu_text,
                           http_bind = "127.0.0.1:0", log_format = "text", log_level = "info";
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
  KB_ASSIGN_OR_RETURN(const std::string text, kb::run_for_output(launch));
  nlohmann::json identity = nlohmann::json::parse(text, nullptr, false);
  if (!identity.is_object())
    return kb::Status::internal("kb-executor --describe printed no JSON object");
  nlohmann::json software = identity.value("software", nlohmann::json::object());
  identity.erase("software");
  return nlohmann::json{{"device", identity}, {"software", software}};
}

std::unique_ptr<kb::JobRunner> make_runner(const Options& o) {
  if (o.device == "sim") return std::make_unique<kb::SimJobRunner>();
  return std::make_unique<kb::ChildProcessJobRunner>(
      kb::ExecutorRunnerConfig{o.executor, o.device, o.gpu, o.problems_dir, o.reference_pack,
                               o.reference_sha256, o.sandbox});
}

kb::Result<std::unique_ptr<kb::WorkerSession>> make_session(zmq::context_t& context,
                                                            const Options& o,
                                                            const nlohmann::json& identity,
                                                            const std::string& name,
                                                            const fs::path& state) {
  KB_ASSIGN_OR_RETURN(auto spool,
                      kb::ResultSpool::open(state / "results", o.device != "sim" || o.sim_fsync));
  kb::SessionConfig config;
  config.name = name;
  config.endpoint = o.coordinator;
  auto device = kb::wire::DeviceIdentity::from_body(identity["device"]);
  if (!device.is_ok()) {
    return kb::Status::internal("the device that kb-executor --describe printed: " +
                                device.status().message());
  }
  config.device = std::move(device).value();
  config.software = identity["software"];
  config.host = hostname();
  config.needs_packs = o.device != "sim";
  config.execution_log = o.execution_log;
  if (!o.curve_key.empty()) {
    KB_ASSIGN_OR_RETURN(config.curve_keys,
                        kb::curve::load_key_file(o.curve_key, /*require_secret=*/true));
    KB_ASSIGN_OR_RETURN(const kb::curve::KeyPair server,
                        kb::curve::load_key_file(o.coordinator_key, /*require_secret=*/false));
    config.coordinator_key = server.public_key;
  }
  return std::make_unique<kb::WorkerSession>(context, std::move(config), make_runner(o),
                                             std::move(spool), kb::PackCache(state / "packs"));
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
  KB_ASSIGN_OR_RETURN(auto pin, kb::read_pack_pin(o.reference_pack));
  KB_ASSIGN_OR_RETURN(const std::string bytes, kb::read_file(o.reference_pack));
  const std::string actual = kb::sha256_hex(bytes);
  if (actual != pin) {
    return kb::Status::failed_precondition("reference pack " + o.reference_pack + " has sha256 " +
                                           actual + " but is pinned to " + pin +
                                           ": refusing to start");
  }
  o.reference_sha256 = pin;
  return kb::Status::ok();
}

// The sandbox around the executors: hides $HOME, the state dir and the key files; exposes the
// executor and the problem specs read-only; the packs go in as descriptors.
kb::Status configure_sandbox(Options& o, const fs::path& state) {
  std::string bwrap;
  KB_ASSIGN_OR_RETURN(auto mode, kb::resolve_sandbox_mode(o.sandbox_mode, &bwrap));
  kb::SandboxConfig& c = o.sandbox;
  c.mode = mode;
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
  SteadyClock::time_point published{};
  for (auto& s : sessions) s->start(SteadyClock::now());
  while (true) {
    SteadyClock::time_point now = SteadyClock::now();
    if (now - published >= kPublishEvery) {
      std::map<std::string, int64_t> states;
      for (auto& s : sessions) ++states[std::string(kb::to_string(s->state()))];
      kb::WorkerMetrics::global().loop_tick(std::move(states));
      published = now;
    }
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
    next = std::min(next, published + kPublishEvery);
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

// /healthz and /metrics on their own thread (an Asio loop beside the zmq_poll loop).
class HttpServer {
 public:
  kb::Status start(const std::string& bind, std::vector<std::string> state_dirs,
                   const std::string& gpu_uuid) {
    state_dirs_ = std::move(state_dirs);
    gauges_ = std::make_unique<kb::NvmlGauges>(gpu_uuid);
    KB_ASSIGN_OR_RETURN(
        endpoint_, kb::coord::HttpEndpoint::bind(
                       io_, bind, [this](const std::string& target) { return handle(target); }));
    endpoint_->start();
    KB_LOG_INFO("http /healthz and /metrics on {}", endpoint_->address());
    thread_ = std::thread([this] { io_.run(); });
    return kb::Status::ok();
  }
  ~HttpServer() {
    if (!thread_.joinable()) return;
    io_.stop();
    thread_.join();
  }

 private:
  kb::coord::HttpResponse handle(const std::string& target) {
    kb::WorkerMetrics& metrics = kb::WorkerMetrics::global();
    if (target == "/healthz") {
      if (metrics.loop_alive(kHealthyWithin)) return {200, "text/plain; charset=utf-8", "ok\n"};
      return {503, "text/plain; charset=utf-8", "event loop stalled\n"};
    }
    if (target == "/metrics") {
      kb::WorkerGauges gauges;
      for (const std::string& dir : state_dirs_) {
        gauges.spool_depth += kb::count_files((fs::path(dir) / "results").string());
        gauges.pack_cache_bytes += kb::directory_bytes((fs::path(dir) / "packs").string());
      }
      gauges.gpu = gauges_->sample();
      return {200, "text/plain; version=0.0.4; charset=utf-8", metrics.render(gauges)};
    }
    return {404, "text/plain; charset=utf-8", "not found: try /healthz or /metrics\n"};
  }

  boost::asio::io_context io_;
  std::unique_ptr<kb::coord::HttpEndpoint> endpoint_;
  std::unique_ptr<kb::NvmlGauges> gauges_;
  std::vector<std::string> state_dirs_;
  std::thread thread_;
};

kb::ConfigSchema config_schema(Options& o) {
  kb::ConfigSchema schema;
  schema.text("coordinator", &o.coordinator, "KB_COORDINATOR")
      .choice("device", &o.device, {"cuda", "cpu", "sim"})
      .custom("gpu",
              [&o](const std::string& text) -> std::optional<std::string> {
                if (text != "all" && (text.empty() || text.find_first_not_of("0123456789") !=
                                                          std::string::npos)) {
                  return std::string("a GPU index or \"all\"");
                }
                o.gpu_text = text;
                return std::nullopt;
              })
      .text("name", &o.name)
      .text("state_dir", &o.state_dir)
      .text("executor", &o.executor)
      .text("problems_dir", &o.problems_dir, "KB_PROBLEMS_DIR")
      .text("curve_key", &o.curve_key, "KB_CURVE_KEY")
      .text("coordinator_key", &o.coordinator_key, "KB_COORDINATOR_KEY")
      .text("execution_log", &o.execution_log, "KB_EXECUTION_LOG")
      .choice("sandbox", &o.sandbox_mode, {"off", "bwrap", "auto"}, "KB_SANDBOX")
      .text("http_bind", &o.http_bind)
      .choice("log_format", &o.log_format, {"text", "json"}, "KB_LOG_FORMAT")
      .choice("log_level", &o.log_level, {"trace", "debug", "info", "warn", "error"});
  return schema;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  o.executor = kb::default_executor_path();
  CLI::App app{"kb-worker: runs kbfleet jobs for a coordinator"};
  app.set_version_flag("--version", std::string("kb-worker ") + KB_VERSION);
  app.add_option("--config", o.config, "YAML config file (keys: deploy/README.md)")
      ->capture_default_str();
  app.add_option("--coordinator", o.coordinator,
                 "tcp://HOST:PORT of the coordinator (env KB_COORDINATOR)");
  app.add_option("--gpu", o.gpu_text, "GPU ordinal (implies --device cuda), or all: one child "
                                      "worker per visible GPU");
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
  app.add_option("--http-bind", o.http_bind,
                 "HOST:PORT for /healthz and /metrics (port 0: any free port; off: none)")
      ->capture_default_str();
  app.add_option("--log-format", o.log_format, "text or json (env KB_LOG_FORMAT)")
      ->check(CLI::IsMember({"text", "json"}))->capture_default_str();
  app.add_option("--log-level", o.log_level, "trace, debug, info, warn or error")
      ->capture_default_str();
  bool check_config = false;
  app.add_flag("--check-config", check_config, "Check the config file, environment and flags, then exit");
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
  const bool gpu_flag = !o.gpu_text.empty();
  if (kb::Status s = config_schema(o).apply(o.config, app.count("--config") > 0, kb::keys_given(app));
      !s.is_ok()) {
    std::fprintf(stderr, "kb-worker: %s\n", s.message().c_str());
    return 2;
  }
  if (check_config) {
    std::printf("kb-worker: configuration ok\n");
    return 0;
  }
  const bool all_gpus = o.gpu_text == "all";
  if (kb::Status s = kb::logging::init(all_gpus ? "kb-worker-gpus" : "kb-worker",
                                   kb::logging::parse_format(o.log_format).value(), o.log_level);
      !s.is_ok()) {
    std::fprintf(stderr, "kb-worker: %s\n", s.message().c_str());
    return 2;
  }
  if (!o.gpu_text.empty() && !all_gpus) {
    try {
      o.gpu = std::stoi(o.gpu_text);
    } catch (const std::exception&) {
      KB_LOG_ERROR("--gpu '{}': expected a GPU index or all", o.gpu_text);
      return 2;
    }
  }
  if (o.coordinator.empty()) {
    KB_LOG_ERROR("--coordinator (or KB_COORDINATOR, or coordinator: in {}) is required", o.config);
    return 2;
  }
  if (o.curve_key.empty() != o.coordinator_key.empty()) {
    KB_LOG_ERROR("--curve-key and --coordinator-key go together");
    return 2;
  }
  if (gpu_flag) o.device = "cuda";  // --gpu implies cuda; a file's gpu: does not override device:
  if (o.sim_workers > 1 && o.device != "sim") {
    KB_LOG_ERROR("--sim-workers needs --device sim");
    return 2;
  }
  if (all_gpus) {
    const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
    auto count = kb::visible_gpu_count(visible ? std::optional<std::string>(visible) : std::nullopt);
    if (!count.is_ok() || count.value() == 0) {
      KB_LOG_ERROR("--gpu all: no GPU visible (CUDA_VISIBLE_DEVICES={}, /dev/nvidiaN)",
                   visible ? visible : "unset");
      return 1;
    }
    KB_LOG_INFO("--gpu all: {} GPU(s) visible; one child worker each", count.value());
    return kb::run_gpu_children(fs::read_symlink("/proc/self/exe").string(),
                                std::vector<std::string>(argv + 1, argv + argc), count.value(),
                                {o.name, o.state_dir, o.http_bind});
  }
  if (o.device == "sim") kb::WorkerMetrics::global().set_job_log_level(spdlog::level::debug);
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
    KB_LOG_INFO("reference pack {} (sha256 {}); sandbox {}", o.reference_pack,
                o.reference_sha256.substr(0, 12), kb::describe_sandbox(o.sandbox));
  }
  auto identity = describe(o);
  if (!identity.is_ok()) {
    KB_LOG_ERROR("cannot describe the {} device: {}", o.device, identity.status().message());
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
    std::vector<std::string> state_dirs;
    for (int i = 0; i < o.sim_workers; ++i) {
      const std::string name = o.sim_workers > 1 ? o.name + "-" + std::to_string(i) : o.name;
      const fs::path state =
          o.sim_workers > 1 ? fs::path(o.state_dir) / name : fs::path(o.state_dir);
      auto session = make_session(context, o, identity.value(), name, state);
      if (!session.is_ok()) {
        KB_LOG_ERROR("{}", session.status().message());
        return 1;
      }
      sessions.push_back(std::move(session).value());
      state_dirs.push_back(state.string());
    }
    HttpServer http;
    if (o.http_bind != "off") {
      const std::string uuid = identity.value()["device"].value("uuid", std::string());
      if (kb::Status s = http.start(o.http_bind, state_dirs, o.device == "cuda" ? uuid : "");
          !s.is_ok()) {
        KB_LOG_ERROR("{}", s.message());
        return 2;
      }
    }
    KB_LOG_INFO("{} session(s) of {} to {}", o.sim_workers, o.name, o.coordinator);
    run_loop(sessions);
  } catch (const std::exception& e) {
    KB_LOG_ERROR("{}", e.what());
    return 1;
  }
  return 0;
}
