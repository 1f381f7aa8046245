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
#include <thread>

#include "common/curve_keys.h"
#include "tests/support/fleet_stack.h"
#include "tests/support/postgres_test_db.h"

namespace kb::testing {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;
using std::chrono::seconds;

int64_t as_int(const Result<std::string>& r) {
  return r.is_ok() && !r.value().empty() ? std::stoll(r.value()) : -1;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// A kb-coordinator process of its own (FleetStack's runs without keys), on ephemeral ports.
struct Coordinator {
  ChildProcess process;
  std::string log, endpoints_file, clients;
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
        const auto j = nlohmann::json::parse(read_text(endpoints_file), nullptr, false);
        if (j.is_object()) {
          clients = j.value("clients", std::string());
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
  void SetUp() override { dir_ = make_work_dir("kb-trust"); }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(dir_);
  }
  std::string dir_;
};

TEST_F(TrustTest, ASecondCoordinatorOnTheSameDatabaseExitsAndDispatchesNothing) {
  KB_REQUIRE_TEST_DB(db);
  fs::create_directories(dir_ + "/stack");
  FleetStack stack(FleetOptions{db.url()}, dir_ + "/stack");
  ASSERT_TRUE(stack.start_coordinator().is_ok()) << stack.logs_tail();
  stack.add_worker("sim-0", {"--device", "sim"});
  // A first submit uploads the pack: allow for a loaded CI machine.
  auto reply = stack.kb_json({"submit", "--sim-jobs", "40:20", "--timeout", "60"});
  ASSERT_TRUE(reply.is_ok()) << reply.status().to_string();
  const int64_t run = reply.value().value("run_id", int64_t{-1});
  Coordinator second;
  ASSERT_TRUE(second.start(dir_, "second", {}, db.url()));
  EXPECT_FALSE(second.wait_serving());
  const std::optional<int> status = second.process.wait(milliseconds(30000));
  ASSERT_TRUE(status.has_value());
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 3) << read_text(second.log);
  EXPECT_NE(read_text(second.log).find("another kb-coordinator is already serving this database"),
            std::string::npos) << read_text(second.log);
  ASSERT_TRUE(stack.wait_for_run(run, seconds(120)));
  // Each job leased once (one coordinator dispatching) and stored once.
  const std::string r = std::to_string(run);
  EXPECT_EQ(as_int(stack.query_value("SELECT sum(attempt) FROM jobs WHERE run_id = " + r)), 40);
  EXPECT_EQ(as_int(stack.query_value("SELECT count(*) FROM results WHERE run_id = " + r)), 40);
  // Once the first is gone, the lock is free.
  stack.signal_coordinator(SIGTERM);
  ASSERT_TRUE(stack.wait_coordinator_exit(seconds(20)));
  Coordinator third;
  ASSERT_TRUE(third.start(dir_, "third", {}, db.url()));
  EXPECT_TRUE(third.wait_serving()) << read_text(third.log);
}

class CurveTrustTest : public TrustTest {
 protected:
  void SetUp() override {
    TrustTest::SetUp();
    if (!curve::curve_available()) GTEST_SKIP() << "libzmq without CURVE";
    fs::create_directories(dir_ + "/allow");
    for (const char* name : {"coord", "gpu-1", "alice", "carol"}) {
      keys_[name] = curve::generate_key_pair().value();
      ASSERT_TRUE(curve::write_key_file(dir_ + "/" + name + ".key", keys_[name]).is_ok());
    }
    ASSERT_TRUE(curve::write_public_key_file(dir_ + "/coord.pub", keys_["coord"]).is_ok());
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
  std::map<std::string, curve::KeyPair> keys_;
};

TEST_F(CurveTrustTest, WorkerKeysCannotSubmitAndSighupAdmitsANewSubmitter) {
  KB_REQUIRE_TEST_DB(db);
  Coordinator coordinator;
  ASSERT_TRUE(coordinator.start(dir_, "coordinator",
                                {"--curve-secret-key", dir_ + "/coord.key", "--allow-dir", dir_ + "/allow"},
                                db.url()));
  ASSERT_TRUE(coordinator.wait_serving()) << read_text(coordinator.log);
  std::string out;
  EXPECT_NE(submit_as("gpu-1", coordinator.clients, db.url(), &out), 0) << out;
  EXPECT_NE(submit_as("carol", coordinator.clients, db.url(), &out), 0) << out;
  ASSERT_EQ(submit_as("alice", coordinator.clients, db.url(), &out), 0) << out;
  std::ofstream(dir_ + "/allow/submitters.txt", std::ios::app) << keys_["carol"].public_key << " carol\n";
  coordinator.process.signal(SIGHUP);
  const auto end = std::chrono::steady_clock::now() + seconds(10);
  while (read_text(coordinator.log).find("allow-lists reloaded") == std::string::npos &&
         std::chrono::steady_clock::now() < end) {
    std::this_thread::sleep_for(milliseconds(20));
  }
  ASSERT_EQ(submit_as("carol", coordinator.clients, db.url(), &out), 0) << out << read_text(coordinator.log);
  pqxx::connection conn(db.url());
  pqxx::nontransaction txn(conn);
  const pqxx::result runs = txn.exec("SELECT submitted_by FROM runs ORDER BY id");
  ASSERT_EQ(runs.size(), 2u);  // the worker key's submit stored nothing
  EXPECT_EQ(runs[0][0].as<std::string>(), "alice");  // not the body's "root"
  EXPECT_EQ(runs[1][0].as<std::string>(), "carol");
}

}  // namespace
}  // namespace kb::testing
