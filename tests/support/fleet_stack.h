// A real kbfleet stack for the integration tests: kb-coordinator and kb-worker processes talking
// ZeroMQ on loopback (ephemeral ports, read from the coordinator's endpoints file), over a
// PostgreSQL database the test provides (a TestDatabase, or a private cluster it can stop), and
// the `kb` CLI as a user runs it. Every process logs into the stack's work directory, which the
// test prints when it fails.
//
// Thread safety: one FleetStack per test thread.
#pragma once

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "tests/support/child_process.h"

namespace kb::testing {

struct FleetOptions {
  std::string db_url;           // read-write URL of a migrated-or-empty database
  int heartbeat_ms = 200;       // fast failure detection for tests
  int liveness = 3;
  int lease_grace_ms = 2000;
};

class FleetStack {
 public:
  FleetStack(FleetOptions options, std::string work_dir);
  ~FleetStack();  // kills every process

  // Starts kb-coordinator and waits for its endpoints file. After a restart the coordinator
  // binds the ports of the first start again, so that workers reconnect to it.
  Status start_coordinator();
  // The database of the next start_coordinator() (a "restore": another database).
  void set_db_url(const std::string& db_url) { options_.db_url = db_url; }
  void signal_coordinator(int sig);
  int coordinator_pid() const { return coordinator_ ? coordinator_->pid() : -1; }
  bool wait_coordinator_exit(std::chrono::milliseconds timeout, int* status = nullptr);

  // Starts a kb-worker; returns its index. device_args e.g. {"--device", "cpu"} or
  // {"--device", "sim"}. The worker keeps its name and state directory across restarts, and logs
  // every execution to execution_log().
  int add_worker(const std::string& name, const std::vector<std::string>& device_args);
  // The state directory (results spool, pack cache) of the worker `name`.
  std::string worker_state_dir(const std::string& name) const;
  void kill_worker(int index, int sig);
  // Sends `sig` without waiting (SIGSTOP, a SIGTERM whose drain the test watches).
  void signal_worker(int index, int sig);
  // The worker's exit status once it has exited; nullopt on timeout.
  std::optional<int> wait_worker_exit(int index, std::chrono::milliseconds timeout);
  Status restart_worker(int index);
  size_t worker_count() const { return workers_.size(); }

  // Runs `kb ARGS... --json` with this stack's endpoints; parses stdout.
  Result<nlohmann::json> kb_json(const std::vector<std::string>& args,
                                 std::chrono::seconds timeout = std::chrono::seconds(60));
  // Runs `kb ARGS...`; returns the exit code, stdout in *output.
  int kb(const std::vector<std::string>& args, std::string* output,
         std::chrono::seconds timeout = std::chrono::seconds(60));

  // Polls the database until the run is done or cancelled (true), or the timeout passes.
  bool wait_for_run(int64_t run_id, std::chrono::seconds timeout);
  // One value from the database (first column of the first row; "" when there is no row).
  Result<std::string> query_value(const std::string& sql);
  // query_value as a number; -1 when the query failed or gave no value.
  int64_t query_int(const std::string& sql);
  // Polls `sql` until it gives `want`: how long that took, or nullopt after `timeout`.
  std::optional<std::chrono::milliseconds> wait_for_value(const std::string& sql,
                                                          const std::string& want,
                                                          std::chrono::milliseconds timeout);

  // The workers' execution log (kb-worker --execution-log): one "job_id,attempt,event,worker"
  // line per start, finish, revoke or abort. How many times each job RAN is what a fault test
  // checks (one result row per job alone cannot fail: results are UNIQUE per job).
  std::string execution_log() const { return work_dir_ + "/executions.log"; }
  // job id -> how many `event` lines it has (by any worker; with `worker`, by that one).
  std::map<int64_t, int> executions(const std::string& event = "start",
                                    const std::string& worker = "") const;
  // Waits until job `job_id` has `times` `event` lines (true) or `timeout` passes (false).
  bool wait_for_executions(int64_t job_id, int times, std::chrono::milliseconds timeout,
                           const std::string& event = "start") const;

  const std::string& work_dir() const { return work_dir_; }
  const std::string& clients_endpoint() const { return clients_endpoint_; }
  const std::string& workers_endpoint() const { return workers_endpoint_; }
  const std::string& http_endpoint() const { return http_endpoint_; }
  // The tail of every log, for a failing test's message.
  std::string logs_tail(size_t bytes_per_log = 3000) const;

 private:
  struct Worker {
    std::string name;
    std::vector<std::string> device_args;
    std::unique_ptr<ChildProcess> process;
  };
  Status start_worker_process(Worker& worker);

  FleetOptions options_;
  std::string work_dir_;
  std::unique_ptr<ChildProcess> coordinator_;
  std::string workers_endpoint_, clients_endpoint_, http_endpoint_;
  std::vector<Worker> workers_;
};

// A kb-worker --execution-log file: job id -> how many `event` lines it has (by any worker; with
// `worker`, by that one). A missing file has none.
std::map<int64_t, int> read_execution_log(const std::string& path, const std::string& event = "start",
                                          const std::string& worker = "");

// Paths of the binaries under test (set by tests/CMakeLists.txt).
std::string coordinator_binary();
std::string worker_binary();
std::string cli_binary();
std::string executor_binary();
std::string pack_path();         // the real pack (CPU golden models, and GPU kernels with CUDA)
std::string faulty_pack_path();  // tests/faulty_cpu_pack
std::string problems_dir();
std::string source_dir();

// A fresh directory under the temp dir, removed by the caller.
std::string make_work_dir(const std::string& prefix);

}  // namespace kb::testing
