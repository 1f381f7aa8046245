// The trust model with real processes on loopback and a real PostgreSQL (docs/security.md):
// one coordinator per database (a second exits, dispatching nothing), and a kb-coordinator with
// CURVE keys and per-role allow-lists, driven by the real `kb` CLI: a worker key cannot submit,
// SIGHUP admits a key added to the lists, and a run's submitted_by is the key's name.
//
// Needs KB_TEST_PG_URL (tools/test.sh starts a throwaway cluster); skips without it.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <pqxx/pqxx>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <thread>

#include "common/curve_keys.h"
#include "tests/support/assert_ok.h"
#include "tests/support/fleet_stack.h"
#include "tests/support/postgres_test_db.h"
#include "tests/support/read_text.h"
#include "tests/support/temp_dir.h"

namespace kb::testing {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;
using std::chrono::seconds;

int64_t as_int(const Result<std::string>& r) {
  return r.is_ok() && !r.value().empty() ? std::stoll(r.value()) : -1;
}

// A kb-coordinator process of its own (FleetStack's runs without keys), on ephemeral ports.
struct Coordinator {
  ChildProcess process;
  std::string log, endpoints_file, clients, workers;
  bool start(const std::string& dir, const std::string& name, const std::vector<std::string>& extra,
             const std::string& db_url) {
    log = dir + "/" + name + ".log";
    endpoints_file = dir + "/" + name + ".json";
    std::vector<std::string> args = {coordinator_binary(), "--db", db_url, "--schemas-dir",
                                     source_dir() + "/schemas", "--problems-dir", problems_dir(),
                                     "--endpoints-file", endpoints_file};
    args.insert(args.end(), extra.begin(), extra.end());
    return process.start(args, log);
  }
  // Waits for the endpoints file (true) or the process's exit (false).
  bool wait_serving(seconds timeout = seconds(30)) {
    const auto end = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < end) {
      if (fs::exists(endpoints_file)) {
        const auto j = nlohmann::json::parse(::kb::test::read_text(endpoints_file), nullptr, false);
        if (j.is_object()) {
          clients = j.value("clients", std::string());
          workers = j.value("workers", std::string());
          return true;
        }
      }
      if (!process.running()) return false;
      std::this_thread::sleep_for(milliseconds(20));
    }
    return false;
  }
};

class TrustTest : public ::testing::Test {
 protected:
  // A failed test's logs (every process logs into dir_) stay for its reader.
  void TearDown() override {
    if (!HasFailure()) return;
    std::cerr << "the logs are kept in " << dir_ << "\n";
    root_.keep();
  }
  ::kb::test::TempDir root_{"kb-trust"};
  const std::string dir_ = root_.string();
};

TEST_F(TrustTest, ASecondCoordinatorOnTheSameDatabaseExitsAndDispatchesNothing) {
  KB_REQUIRE_TEST_DB(db);
  fs::create_directories(dir_ + "/stack");
  FleetStack stack(FleetOptions{db.url()}, dir_ + "/stack");
  KB_ASSERT_OK(stack.start_coordinator());
  stack.add_worker("sim-0", {"--device", "sim"});
  // A first submit uploads the pack: allow for a loaded CI machine.
  auto reply = stack.kb_json({"submit", "--sim-jobs", "40:20", "--timeout", "60"});
  KB_ASSERT_OK(reply);
  const int64_t run = reply.value().value("run_id", int64_t{-1});
  Coordinator second;
  ASSERT_TRUE(second.start(dir_, "second", {}, db.url()));
  EXPECT_FALSE(second.wait_serving());
  const std::optional<int> status = second.process.wait(milliseconds(30000));
  ASSERT_TRUE(status.has_value());
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 3) << ::kb::test::read_text(second.log);
  EXPECT_NE(::kb::test::read_text(second.log)
                .find("another kb-coordinator is already serving this database"),
            std::string::npos)
      << ::kb::test::read_text(second.log);
  ASSERT_TRUE(stack.wait_for_run(run, seconds(120)));
  // Each job leased once (one coordinator dispatching) and stored once.
  const std::string r = std::to_string(run);
  EXPECT_EQ(as_int(stack.query_value("SELECT sum(attempt) FROM jobs WHERE run_id = " + r)), 40);
  EXPECT_EQ(as_int(stack.query_value("SELECT count(*) FROM results WHERE run_id = " + r)), 40);
  // And each ran once (the worker's execution log), not merely stored once.
  const std::map<int64_t, int> runs_of_job = stack.executions();
  EXPECT_EQ(runs_of_job.size(), 40u);
  for (const auto& [job, n] : runs_of_job) EXPECT_EQ(n, 1) << "job " << job << " ran " << n << " times";
  // Once the first is gone, the lock is free.
  stack.signal_coordinator(SIGTERM);
  ASSERT_TRUE(stack.wait_coordinator_exit(seconds(20)));
  Coordinator third;
  ASSERT_TRUE(third.start(dir_, "third", {}, db.url()));
  EXPECT_TRUE(third.wait_serving()) << ::kb::test::read_text(third.log);
}

class CurveTrustTest : public TrustTest {
 protected:
  void SetUp() override {
    TrustTest::SetUp();
    if (!curve::curve_available()) GTEST_SKIP() << "libzmq without CURVE";
    fs::create_directories(dir_ + "/allow");
    for (const char* name : {"coord", "gpu-1", "alice", "carol"}) {
      keys_[name] = curve::generate_key_pair().value();
      KB_ASSERT_OK(curve::write_key_file(dir_ + "/" + name + ".key", keys_[name]));
    }
    KB_ASSERT_OK(curve::write_public_key_file(dir_ + "/coord.pub", keys_["coord"]));
    std::ofstream(dir_ + "/allow/workers.txt") << keys_["gpu-1"].public_key << " gpu-1\n";
    std::ofstream(dir_ + "/allow/submitters.txt") << keys_["alice"].public_key << " alice\n";
  }
  // `kb submit --sim-jobs 2:1 --json` with `key`; the exit code, stdout in *out.
  int submit_as(const std::string& key, const std::string& clients, const std::string& db_url,
                std::string* out) {
    return run_command({cli_binary(), "submit", "--sim-jobs", "2:1", "--json", "--timeout", "60",
                        "--coordinator", clients, "--curve-key", dir_ + "/" + key + ".key",
                        "--coordinator-key", dir_ + "/coord.pub", "--submitted-by", "root"},
                       out, seconds(90), {{"KB_DB_URL", db_url}});
  }
  // A sim kb-worker named `name` with the key `key`, logging its executions to
  // <dir>/<tag>.executions; `tag` names its log, state dir and execution log.
  bool start_worker(ChildProcess& process, const std::string& workers, const std::string& name,
                    const std::string& key, const std::string& tag) {
    return process.start({worker_binary(), "--coordinator", workers, "--name", name, "--device", "sim",
                          "--state-dir", dir_ + "/state-" + tag, "--problems-dir", problems_dir(),
                          "--curve-key", dir_ + "/" + key + ".key", "--coordinator-key",
                          dir_ + "/coord.pub", "--execution-log", executions_of(tag)},
                         dir_ + "/" + tag + ".log");
  }
  std::string executions_of(const std::string& tag) const { return dir_ + "/" + tag + ".executions"; }
  std::map<std::string, curve::KeyPair> keys_;
};

TEST_F(CurveTrustTest, WorkerKeysCannotSubmitAndSighupAdmitsANewSubmitter) {
  KB_REQUIRE_TEST_DB(db);
  Coordinator coordinator;
  ASSERT_TRUE(coordinator.start(dir_, "coordinator",
                                {"--curve-secret-key", dir_ + "/coord.key", "--allow-dir", dir_ + "/allow"},
                                db.url()));
  ASSERT_TRUE(coordinator.wait_serving()) << ::kb::test::read_text(coordinator.log);
  std::string out;
  EXPECT_NE(submit_as("gpu-1", coordinator.clients, db.url(), &out), 0) << out;
  EXPECT_NE(submit_as("carol", coordinator.clients, db.url(), &out), 0) << out;
  ASSERT_EQ(submit_as("alice", coordinator.clients, db.url(), &out), 0) << out;
  std::ofstream(dir_ + "/allow/submitters.txt", std::ios::app) << keys_["carol"].public_key << " carol\n";
  coordinator.process.signal(SIGHUP);
  const auto end = std::chrono::steady_clock::now() + seconds(10);
  while (::kb::test::read_text(coordinator.log).find("allow-lists reloaded") == std::string::npos &&
         std::chrono::steady_clock::now() < end) {
    std::this_thread::sleep_for(milliseconds(20));
  }
  ASSERT_EQ(submit_as("carol", coordinator.clients, db.url(), &out), 0)
      << out << ::kb::test::read_text(coordinator.log);
  pqxx::connection conn(db.url());
  pqxx::nontransaction txn(conn);
  const pqxx::result runs = txn.exec("SELECT submitted_by FROM runs ORDER BY id");
  ASSERT_EQ(runs.size(), 2u);  // the worker key's submit stored nothing
  EXPECT_EQ(runs[0][0].as<std::string>(), "alice");  // not the body's "root"
  EXPECT_EQ(runs[1][0].as<std::string>(), "carol");
  // Nor any job: 2 sim jobs for each accepted submit. (No worker here, so nothing ran; the runs
  // of a worker key's jobs are counted in OnlyTheListedWorkerRuns... below.)
  EXPECT_EQ(txn.exec("SELECT count(*) FROM jobs")[0][0].as<int64_t>(), 4);
}

// Only the worker key named in workers.txt runs jobs: a second process with the same key and name
// while the first is alive is refused (DISCONNECT, name in use), and a submitter's key cannot even
// connect to the workers' socket. Each job runs once, on the real worker, and is stored once.
TEST_F(CurveTrustTest, OnlyTheListedWorkerRunsJobsNotAClientKeyNorASecondProcessOfItsName) {
  KB_REQUIRE_TEST_DB(db);
  Coordinator coordinator;
  ASSERT_TRUE(coordinator.start(dir_, "coordinator",
                                {"--curve-secret-key", dir_ + "/coord.key", "--allow-dir", dir_ + "/allow",
                                 "--heartbeat-ms", "200"},
                                db.url()));
  ASSERT_TRUE(coordinator.wait_serving()) << ::kb::test::read_text(coordinator.log);
  FleetStack reader(FleetOptions{db.url()}, dir_);  // for its database queries only
  ChildProcess real, second, client_key;
  ASSERT_TRUE(start_worker(real, coordinator.workers, "gpu-1", "gpu-1", "real"));
  ASSERT_TRUE(reader.wait_for_value("SELECT state FROM workers WHERE name = 'gpu-1'", "idle",
                                    milliseconds(20000)))
      << ::kb::test::read_text(coordinator.log) << ::kb::test::read_text(dir_ + "/real.log");
  ASSERT_TRUE(start_worker(second, coordinator.workers, "gpu-1", "gpu-1", "second"));
  ASSERT_TRUE(start_worker(client_key, coordinator.workers, "alice", "alice", "client-key"));
  const auto end = std::chrono::steady_clock::now() + seconds(20);
  while (::kb::test::read_text(coordinator.log).find("READY from gpu-1 refused") ==
             std::string::npos &&
         std::chrono::steady_clock::now() < end) {
    std::this_thread::sleep_for(milliseconds(20));
  }
  ASSERT_NE(::kb::test::read_text(coordinator.log).find("is in use by a live session"),
            std::string::npos)
      << ::kb::test::read_text(coordinator.log);

  std::string out;
  ASSERT_EQ(submit_as("alice", coordinator.clients, db.url(), &out), 0) << out;
  const int64_t run = nlohmann::json::parse(out).value("run_id", int64_t{-1});
  ASSERT_TRUE(reader.wait_for_run(run, seconds(60))) << ::kb::test::read_text(coordinator.log);
  const std::string r = std::to_string(run);
  EXPECT_EQ(reader.query_int("SELECT count(*) FROM results WHERE run_id = " + r), 2);
  EXPECT_EQ(reader.query_int("SELECT count(*) FROM results x JOIN workers w ON w.id = x.worker_id "
                             "WHERE x.run_id = " + r + " AND w.name = 'gpu-1'"), 2);
  EXPECT_EQ(reader.query_int("SELECT count(*) FROM workers"), 1);  // never a row for alice
  const std::map<int64_t, int> on_real = read_execution_log(executions_of("real"));
  EXPECT_EQ(on_real.size(), 2u);
  for (const auto& [job, n] : on_real) EXPECT_EQ(n, 1) << "job " << job;
  EXPECT_TRUE(read_execution_log(executions_of("second")).empty());
  EXPECT_TRUE(read_execution_log(executions_of("client-key")).empty());
  EXPECT_TRUE(second.running()) << "the refused worker should retry, not crash";
}

}  // namespace
}  // namespace kb::testing
