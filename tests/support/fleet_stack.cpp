#include "tests/support/fleet_stack.h"
#include "tests/support/read_text.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <pqxx/pqxx>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

namespace kb::testing {
namespace {

namespace fs = std::filesystem;

// "tcp://127.0.0.1:41234" -> "tcp://127.0.0.1:41234" (bindable again); "127.0.0.1:8080" likewise.
std::string same_address(const std::string& endpoint) { return endpoint; }

}  // namespace

std::string coordinator_binary() { return KB_TEST_COORDINATOR_BIN; }
std::string worker_binary() { return KB_TEST_WORKER_BIN; }
std::string cli_binary() { return KB_TEST_CLI_BIN; }
std::string executor_binary() { return KB_TEST_EXECUTOR_BIN; }
std::string pack_path() { return KB_TEST_PACK_PATH; }
std::string faulty_pack_path() { return KB_TEST_FAULTY_PACK_PATH; }
std::string source_dir() { return KB_TEST_SOURCE_DIR; }
std::string problems_dir() { return source_dir() + "/problems"; }

std::map<int64_t, int> read_execution_log(const std::string& path, const std::string& event,
                                          const std::string& worker) {
  std::map<int64_t, int> n;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    std::stringstream fields(line);
    std::string job, attempt, what, who;
    std::getline(fields, job, ',');
    std::getline(fields, attempt, ',');
    std::getline(fields, what, ',');
    std::getline(fields, who, ',');
    if (job.empty() || what != event || (!worker.empty() && who != worker)) continue;
    ++n[std::stoll(job)];
  }
  return n;
}

std::string make_work_dir(const std::string& prefix) {
  std::random_device random;
  const fs::path dir = fs::temp_directory_path() /
                       (prefix + "-" + std::to_string(::getpid()) + "-" + std::to_string(random()));
  fs::create_directories(dir);
  return dir.string();
}

FleetStack::FleetStack(FleetOptions options, std::string work_dir)
    : options_(std::move(options)), work_dir_(std::move(work_dir)) {}

FleetStack::~FleetStack() {
  for (Worker& w : workers_) {
    if (w.process) w.process->kill_now();
  }
  if (coordinator_) {
    coordinator_->signal(SIGTERM);
    if (!coordinator_->wait(std::chrono::seconds(10))) coordinator_->kill_now();
  }
}

Status FleetStack::start_coordinator() {
  const fs::path endpoints = fs::path(work_dir_) / "endpoints.json";
  fs::remove(endpoints);
  const bool restart = !workers_endpoint_.empty();
  std::vector<std::string> args = {
      coordinator_binary(),
      "--db", options_.db_url,
      "--schemas-dir", source_dir() + "/schemas",
      "--problems-dir", problems_dir(),
      "--workers-bind", restart ? same_address(workers_endpoint_) : "tcp://127.0.0.1:*",
      "--clients-bind", restart ? same_address(clients_endpoint_) : "tcp://127.0.0.1:*",
      "--http-bind", restart ? http_endpoint_ : "127.0.0.1:0",
      "--endpoints-file", endpoints.string(),
      "--heartbeat-ms", std::to_string(options_.heartbeat_ms),
      "--liveness", std::to_string(options_.liveness),
      "--lease-grace-ms", std::to_string(options_.lease_grace_ms)};
  coordinator_ = std::make_unique<ChildProcess>();
  if (!coordinator_->start(args, work_dir_ + "/coordinator.log")) {
    return Status::internal("cannot start " + coordinator_binary());
  }
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!fs::exists(endpoints)) {
    if (!coordinator_->running()) {
      return Status::internal("kb-coordinator exited at start:\n" + logs_tail());
    }
    if (std::chrono::steady_clock::now() > end) {
      return Status::internal("kb-coordinator wrote no endpoints file in 30 s:\n" + logs_tail());
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  const auto j = nlohmann::json::parse(::kb::test::read_text(endpoints), nullptr, false);
  if (!j.is_object() || !j.contains("workers") || !j.contains("clients")) {
    return Status::internal("bad endpoints file: " + ::kb::test::read_text(endpoints));
  }
  workers_endpoint_ = j["workers"].get<std::string>();
  clients_endpoint_ = j["clients"].get<std::string>();
  http_endpoint_ = j.value("http", std::string());
  return Status::ok();
}

void FleetStack::signal_coordinator(int sig) {
  if (coordinator_) coordinator_->signal(sig);
}

bool FleetStack::wait_coordinator_exit(std::chrono::milliseconds timeout, int* status) {
  if (!coordinator_) return true;
  auto s = coordinator_->wait(timeout);
  if (s && status) *status = *s;
  return s.has_value();
}

Status FleetStack::start_worker_process(Worker& worker) {
  std::vector<std::string> args = {worker_binary(),
                                   "--coordinator", workers_endpoint_,
                                   "--name", worker.name,
                                   "--state-dir", worker_state_dir(worker.name),
                                   "--executor", executor_binary(),
                                   "--problems-dir", problems_dir(),
                                   "--execution-log", execution_log()};
  args.insert(args.end(), worker.device_args.begin(), worker.device_args.end());
  worker.process = std::make_unique<ChildProcess>();
  if (!worker.process->start(args, work_dir_ + "/worker-" + worker.name + ".log")) {
    return Status::internal("cannot start " + worker_binary());
  }
  return Status::ok();
}

int FleetStack::add_worker(const std::string& name, const std::vector<std::string>& device_args) {
  workers_.push_back(Worker{name, device_args, nullptr});
  (void)start_worker_process(workers_.back());
  return static_cast<int>(workers_.size()) - 1;
}

std::string FleetStack::worker_state_dir(const std::string& name) const {
  return work_dir_ + "/state-" + name;
}

void FleetStack::kill_worker(int index, int sig) {
  Worker& w = workers_.at(static_cast<size_t>(index));
  if (!w.process) return;
  w.process->signal(sig);
  (void)w.process->wait(std::chrono::seconds(10));
}

void FleetStack::signal_worker(int index, int sig) {
  Worker& w = workers_.at(static_cast<size_t>(index));
  if (w.process) w.process->signal(sig);
}

std::optional<int> FleetStack::wait_worker_exit(int index, std::chrono::milliseconds timeout) {
  Worker& w = workers_.at(static_cast<size_t>(index));
  if (!w.process) return 0;
  return w.process->wait(timeout);
}

Status FleetStack::restart_worker(int index) {
  Worker& w = workers_.at(static_cast<size_t>(index));
  if (w.process) w.process->kill_now();
  return start_worker_process(w);
}

int FleetStack::kb(const std::vector<std::string>& args, std::string* output,
                   std::chrono::seconds timeout) {
  std::vector<std::string> full = {cli_binary()};
  full.insert(full.end(), args.begin(), args.end());
  return run_command(full, output, timeout,
                     {{"KB_COORDINATOR", clients_endpoint_}, {"KB_DB_URL", options_.db_url},
                      {"KB_PROBLEMS_DIR", problems_dir()}});
}

Result<nlohmann::json> FleetStack::kb_json(const std::vector<std::string>& args,
                                           std::chrono::seconds timeout) {
  std::vector<std::string> with_json = args;
  with_json.push_back("--json");
  std::string out;
  const int code = kb(with_json, &out, timeout);
  auto j = nlohmann::json::parse(out, nullptr, false);
  if (code != 0 || j.is_discarded()) {
    return Status::internal("kb exited " + std::to_string(code) + ", stdout:\n" + out);
  }
  return j;
}

Result<std::string> FleetStack::query_value(const std::string& sql) {
  try {
    pqxx::connection c(options_.db_url);
    pqxx::nontransaction tx(c);
    pqxx::result r = tx.exec(sql);
    if (r.empty() || r[0].empty() || r[0][0].is_null()) return std::string();
    return std::string(r[0][0].c_str());
  } catch (const std::exception& e) {
    return Status::io_error(std::string("query failed: ") + e.what());
  }
}

int64_t FleetStack::query_int(const std::string& sql) {
  Result<std::string> r = query_value(sql);
  return r.is_ok() && !r.value().empty() ? std::stoll(r.value()) : -1;
}

std::optional<std::chrono::milliseconds> FleetStack::wait_for_value(
    const std::string& sql, const std::string& want, std::chrono::milliseconds timeout) {
  const auto start = std::chrono::steady_clock::now();
  for (;;) {
    Result<std::string> v = query_value(sql);
    const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::steady_clock::now() - start);
    if (v.is_ok() && v.value() == want) return took;
    if (took >= timeout) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

std::map<int64_t, int> FleetStack::executions(const std::string& event,
                                              const std::string& worker) const {
  return read_execution_log(execution_log(), event, worker);
}

bool FleetStack::wait_for_executions(int64_t job_id, int times, std::chrono::milliseconds timeout,
                                     const std::string& event) const {
  const auto end = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    const auto n = executions(event);
    if (n.count(job_id) && n.at(job_id) >= times) return true;
    if (std::chrono::steady_clock::now() >= end) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

bool FleetStack::wait_for_run(int64_t run_id, std::chrono::seconds timeout) {
  const auto end = std::chrono::steady_clock::now() + timeout;
  for (;;) {  // checks at least once, so a zero timeout polls
    auto state = query_value("SELECT state FROM runs WHERE id = " + std::to_string(run_id));
    if (state.is_ok() && (state.value() == "done" || state.value() == "cancelled")) return true;
    if (std::chrono::steady_clock::now() >= end) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

std::string FleetStack::logs_tail(size_t bytes_per_log) const {
  std::string out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(work_dir_, ec)) {
    if (entry.path().extension() != ".log") continue;
    std::string text = ::kb::test::read_text(entry.path());
    if (text.size() > bytes_per_log) text = "..." + text.substr(text.size() - bytes_per_log);
    out += "==== " + entry.path().filename().string() + "\n" + text + "\n";
  }
  return out;
}

}  // namespace kb::testing
