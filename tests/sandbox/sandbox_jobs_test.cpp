// Candidate code under the sandbox (worker/sandbox.h, docs/sandbox.md), with real processes: one
// ChildProcessJobRunner, as kb-worker holds it, runs real kb-executor jobs on the CPU device under
// real bubblewrap, with the trusted reference pack and the faulty/hostile candidate pack
// (tests/faulty_cpu_pack). Each hostile job must fail with a clear status and leave no trace (no
// connection reached the listener, no file appeared, the key did not leak), the same runner must
// go on to the next job, and the honest control must be `ok`. A control run without the sandbox
// shows that the same pack does reach $HOME, so the assertions can fail.
//
// The work dir is under the build tree, not /tmp: the sandbox's private /tmp would hide a /tmp
// target by itself and prove nothing about the worker's own hiding.
#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "common/install_paths.h"
#include "common/sha256.h"
#include "tests/support/loopback_listener.h"
#include "tests/support/temp_dir.h"
#include "worker/job_runner.h"
#include "worker/sandbox.h"

namespace kb {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;

constexpr char kSecret[] = "KB-TEST-SECRET-KEY-4f1d";

std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

class SandboxJobsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* sub : {"home", "state", "keys"}) fs::create_directories(dir_ / sub);
    std::ofstream(dir_ / "keys" / "worker.key") << kSecret << "\n";
    fs::permissions(dir_ / "keys" / "worker.key", fs::perms::owner_read | fs::perms::owner_write);
    // The executor inherits the environment: the hostile variants find their targets here.
    setenv("HOME", (dir_ / "home").c_str(), 1);
    setenv("KB_HOSTILE_STATE_DIR", (dir_ / "state").c_str(), 1);
    setenv("KB_HOSTILE_KEY_FILE", (dir_ / "keys" / "worker.key").c_str(), 1);
    setenv("KB_HOSTILE_PORT", std::to_string(listener_.port()).c_str(), 1);
  }
  bool connection_arrived() const { return listener_.connection_arrived(); }

  // The worker's configuration: kb-worker's configure_sandbox() with this test's paths.
  ExecutorRunnerConfig config(bool sandboxed) const {
    ExecutorRunnerConfig c;
    c.executable = KB_TEST_EXECUTOR_BIN;
    c.device = "cpu";
    c.problems_dir = std::string(KB_SOURCE_DIR) + "/problems";
    c.reference_pack = KB_TEST_REF_PACK;
    c.reference_sha256 = read_pack_pin(KB_TEST_REF_PACK).value();
    if (!sandboxed) return c;
    c.sandbox.mode = SandboxMode::kBwrap;
    c.sandbox.bwrap = bwrap_;
    c.sandbox.hidden_dirs = {(dir_ / "home").string(), (dir_ / "state").string()};
    c.sandbox.hidden_files = {(dir_ / "keys" / "worker.key").string()};
    c.sandbox.read_only_paths = {fs::canonical(KB_TEST_EXECUTOR_BIN).string(), c.problems_dir};
    c.sandbox.limits.data_bytes = uint64_t{4} << 30;
    return c;
  }

  static JobSpec job(const std::string& problem) {
    JobSpec j;
    j.job_id = 1;
    j.attempt = 1;
    j.seed = 99;
    j.problem = problem;
    j.preset = "small";
    j.pack_path = KB_TEST_FAULTY_PACK;
    j.pack = sha256_hex(file_bytes(KB_TEST_FAULTY_PACK));
    j.time_cap_s = 1;
    j.deadline_ms = 120000;
    return j;
  }

  static JobResult run(JobRunner& runner, const JobSpec& j) {
    runner.start(j, SteadyClock::now());
    const auto give_up = SteadyClock::now() + std::chrono::seconds(150);
    while (SteadyClock::now() < give_up) {
      if (auto outcome = runner.poll(SteadyClock::now())) return outcome->result;
      std::this_thread::sleep_for(milliseconds(20));
    }
    runner.abort();
    JobResult r;
    r.message = "the test gave up waiting";
    return r;
  }

  bool have_bwrap() {
    auto mode = resolve_sandbox_mode("auto", &bwrap_);
    return mode.is_ok() && mode.value() == SandboxMode::kBwrap;
  }

  ::kb::test::TempDir dir_{"sandbox", KB_TEST_WORK_DIR};  // not /tmp: see the opening comment
  ::kb::test::LoopbackListener listener_;
  std::string bwrap_;
};

TEST_F(SandboxJobsTest, HostilePackFailsClearlyLeavesNoTraceAndTheWorkerGoesOn) {
  if (!have_bwrap()) GTEST_SKIP() << "bwrap is not installed";
  ChildProcessJobRunner runner(config(true));

  JobResult net = run(runner, job("L1_054"));
  EXPECT_EQ(to_string(net.status), "runtime_error") << net.message;
  EXPECT_NE(net.message.find("custom: hostile connect 127.0.0.1"), std::string::npos) << net.message;
  EXPECT_NE(net.message.find("[sandbox: no network"), std::string::npos) << net.message;
  EXPECT_FALSE(connection_arrived());

  JobResult home = run(runner, job("L1_060"));
  EXPECT_EQ(to_string(home.status), "runtime_error") << home.message;
  EXPECT_NE(home.message.find("Read-only file system"), std::string::npos) << home.message;
  EXPECT_FALSE(fs::exists(dir_ / "home" / "kb-hostile-was-here"));

  JobResult state = run(runner, job("L1_070"));
  EXPECT_EQ(to_string(state.status), "runtime_error") << state.message;
  EXPECT_NE(state.message.find("Read-only file system"), std::string::npos) << state.message;
  EXPECT_FALSE(fs::exists(dir_ / "state" / "kb-hostile-was-here"));

  JobResult key = run(runner, job("L1_073"));
  EXPECT_EQ(to_string(key.status), "runtime_error") << key.message;
  EXPECT_NE(key.message.find("hostile open"), std::string::npos) << key.message;
  EXPECT_EQ(key.message.find(kSecret), std::string::npos) << key.message;

  JobResult abort_mid_timing = run(runner, job("L1_075"));
  EXPECT_EQ(to_string(abort_mid_timing.status), "crashed") << abort_mid_timing.message;

  JobResult control = run(runner, job("L2_093"));
  EXPECT_EQ(to_string(control.status), "ok") << control.message;
  EXPECT_NE(control.environment.value("sandbox", "").find("bwrap: no network"), std::string::npos)
      << control.environment.dump();
}

// Without the sandbox the same pack does write to $HOME (and the job hides it and passes):
// the assertions above would catch a sandbox that lets it through.
TEST_F(SandboxJobsTest, WithoutTheSandboxTheSamePackReachesHome) {
  ChildProcessJobRunner runner(config(false));
  JobResult home = run(runner, job("L1_060"));
  EXPECT_EQ(to_string(home.status), "ok") << home.message;
  EXPECT_TRUE(fs::exists(dir_ / "home" / "kb-hostile-was-here"));
}

// A cache file whose bytes changed after download is refused before dlopen; the next job runs.
TEST_F(SandboxJobsTest, ATamperedCachedPackIsRefusedBeforeLoading) {
  ChildProcessJobRunner runner(config(have_bwrap()));
  JobSpec tampered = job("L2_093");
  std::string bytes = file_bytes(KB_TEST_FAULTY_PACK);
  bytes[bytes.size() / 3] ^= 0x40;
  tampered.pack_path = (dir_ / "state" / (tampered.pack + ".so")).string();
  std::ofstream(tampered.pack_path, std::ios::binary) << bytes;
  JobResult refused = run(runner, tampered);
  EXPECT_EQ(to_string(refused.status), "runtime_error") << refused.message;
  EXPECT_NE(refused.message.find("expected " + tampered.pack + ": refused, not loaded"), std::string::npos)
      << refused.message;

  JobResult next = run(runner, job("L2_093"));
  EXPECT_EQ(to_string(next.status), "ok") << next.message;
}

// On a GPU host (skipped elsewhere): the real reference and candidate packs load under the
// sandbox with only GPU 0's device nodes, and L1_081 is verified and timed there.
TEST_F(SandboxJobsTest, GpuJobRunsUnderTheSandboxWithBothPacks) {
  if (!fs::exists("/dev/nvidiactl")) GTEST_SKIP() << "no NVIDIA GPU";
  if (!have_bwrap()) GTEST_SKIP() << "bwrap is not installed";
  ExecutorRunnerConfig c = config(true);
  c.device = "cuda";
  c.gpu = 0;
  c.sandbox.gpu = 0;
  c.sandbox.limits.data_bytes = uint64_t{64} << 30;
  ChildProcessJobRunner runner(c);
  JobSpec j = job("L1_081");
  j.preset = "full";
  j.pack_path = KB_TEST_PACK;
  j.pack = sha256_hex(file_bytes(KB_TEST_PACK));
  j.time_cap_s = 3;
  const JobResult r = run(runner, j);
  EXPECT_EQ(to_string(r.status), "ok") << r.message;
  const nlohmann::json none = nlohmann::json::object();
  EXPECT_EQ(r.environment.value("pack", none).value("sha256", ""), j.pack) << r.environment.dump();
  EXPECT_EQ(r.environment.value("reference_pack", none).value("sha256", ""),
            read_pack_pin(KB_TEST_REF_PACK).value());
  EXPECT_NE(r.environment.value("sandbox", "").find("GPU 0 device nodes only"), std::string::npos);
  std::printf("L1_081 under bwrap: %s, reference %.4f ms, custom %.4f ms, %s\n", to_string(r.status).c_str(),
              r.reference.summary.median, r.custom.summary.median, r.environment.value("sandbox", "").c_str());
}

}  // namespace
}  // namespace kb
