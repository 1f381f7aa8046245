// The executor's supervisor against small shell scripts standing in for kb-executor: a result
// written to --output is read back; a signal, a bad exit, no output or garbage become `crashed`;
// a child past its deadline becomes `timeout` and is killed with its process group.
#include "worker/executor_child.h"
#include "tests/support/read_text.h"
#include "tests/support/temp_dir.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace kb {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> read_lines(const fs::path& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// Alive means running or stopped: a zombie has exited (it only waits for its parent to reap it).
bool process_alive(pid_t pid) {
  const std::string stat = ::kb::test::read_text("/proc/" + std::to_string(pid) + "/stat");
  if (stat.empty()) return false;
  const size_t paren = stat.rfind(')');
  return paren != std::string::npos && paren + 2 < stat.size() && stat[paren + 2] != 'Z' &&
         stat[paren + 2] != 'X';
}

class ExecutorChildTest : public ::testing::Test {
 protected:
  // Writes an executable /bin/sh script; its first argument is always `side` (a file it may use
  // to tell the test what it saw), then the supervisor's --output-fd N (written as
  // /proc/self/fd/N).
  ExecutorLaunch script(const std::string& name, const std::string& body, double timeout_s = 10) {
    const fs::path path = dir_ / name;
    {
      std::ofstream out(path);
      out << "#!/bin/sh\n"
          << "side=\"$1\"\n"
          << "out=\n"
          << "prev=\n"
          << "for a in \"$@\"; do if [ \"$prev\" = --output-fd ]; then out=/proc/self/fd/$a; fi; "
             "prev=\"$a\"; done\n"
          << body << "\n";
    }
    fs::permissions(path, fs::perms::owner_all);
    ExecutorLaunch launch;
    launch.executable = path.string();
    launch.args = {side().string()};
    launch.timeout_s = timeout_s;
    launch.problem_id = "L1_003";
    launch.preset = "small";
    launch.device_kind = "cpu";
    return launch;
  }
  fs::path side() const { return dir_ / "side.txt"; }

  void expect_bare(const JobResult& r) {
    EXPECT_EQ(r.problem_id, "L1_003");
    EXPECT_EQ(r.preset, "small");
    EXPECT_EQ(r.device_kind, "cpu");
  }

  ::kb::test::TempDir dir_{"kb-executor-process-test"};
};

TEST_F(ExecutorChildTest, ReadsTheResultWrittenToOutput) {
  ExecutorLaunch launch = script("ok.sh", R"(printf '%s\n' "$@" > "$side"
cat > "$out" <<'JSON'
{"problem_id": "L1_003", "preset": "small", "device_kind": "cpu", "status": "ok",
 "message": "fine", "rounds": 12, "stop_reason": "converged",
 "speedup": {"value": 1.9, "ci_low": 1.85, "ci_high": 1.95, "relative_half_width": 0.026},
 "reference": {"samples_ms": [2.0, 2.1], "summary": {"count": 2, "median": 2.05}}}
JSON)");
  launch.args.push_back("--problem");
  launch.args.push_back("two words");
  JobResult r = run_executor_child(launch);
  ASSERT_EQ(r.status, JobStatus::kOk) << r.message;
  EXPECT_EQ(r.message, "fine");
  EXPECT_EQ(r.rounds, 12);
  EXPECT_DOUBLE_EQ(r.speedup.speedup, 1.9);
  EXPECT_EQ(r.reference.samples_ms, (std::vector<double>{2.0, 2.1}));

  // The arguments arrive in order, --output-fd last: a descriptor of a file that has no name.
  std::vector<std::string> args = read_lines(side());
  ASSERT_EQ(args.size(), 5u);
  EXPECT_EQ(args[1], "--problem");
  EXPECT_EQ(args[2], "two words");
  EXPECT_EQ(args[3], "--output-fd");
  EXPECT_GT(std::stoi(args[4]), 2);
}

TEST_F(ExecutorChildTest, ChildReportedFailureIsPassedThrough) {
  ExecutorLaunch launch =
      script("mismatch.sh", R"(printf '{"status": "mismatch", "message": "3 of 9"}' > "$out")");
  JobResult r = run_executor_child(launch);
  EXPECT_EQ(r.status, JobStatus::kMismatch);
  EXPECT_EQ(r.message, "3 of 9");
}

TEST_F(ExecutorChildTest, DeathBySignalIsCrashedWithTheSignalName) {
  ExecutorLaunch launch = script("segv.sh", "ulimit -c 0\nkill -SEGV $$\nsleep 5");
  JobResult r = run_executor_child(launch);
  EXPECT_EQ(r.status, JobStatus::kCrashed);
  EXPECT_NE(r.message.find(strsignal(SIGSEGV)), std::string::npos) << r.message;
  expect_bare(r);
}

TEST_F(ExecutorChildTest, DeathBySignalAfterWritingIsStillCrashed) {
  ExecutorLaunch launch =
      script("late_segv.sh", "ulimit -c 0\necho '{\"status\": \"ok\"}' > \"$out\"\nkill -SEGV $$");
  EXPECT_EQ(run_executor_child(launch).status, JobStatus::kCrashed);
}

TEST_F(ExecutorChildTest, PastTheDeadlineIsTimeoutAndTheGroupIsKilled) {
  // The script and a child of its own (as a CUDA runtime's helper threads would be processes).
  ExecutorLaunch launch = script(
      "hang.sh",
      "sleep 30 &\necho $$ > \"$side\"\necho $! >> \"$side\"\necho \"$out\" >> \"$side\"\nwait",
      0.5);
  const auto start = std::chrono::steady_clock::now();
  JobResult r = run_executor_child(launch);
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(r.status, JobStatus::kTimeout);
  EXPECT_NE(r.message.find("0.5 s"), std::string::npos) << r.message;
  expect_bare(r);
  EXPECT_GE(elapsed, 0.5);
  EXPECT_LT(elapsed, 5.0);

  std::vector<std::string> seen = read_lines(side());
  ASSERT_EQ(seen.size(), 3u) << "the script did not start in time";
  const pid_t shell = static_cast<pid_t>(std::stol(seen[0]));
  const pid_t sleeper = static_cast<pid_t>(std::stol(seen[1]));
  EXPECT_FALSE(process_alive(shell));
  // The orphaned child is reaped by init; give the kill a moment to land.
  for (int i = 0; i < 100 && process_alive(sleeper); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_FALSE(process_alive(sleeper)) << "the child's own child survived the kill";
  EXPECT_FALSE(fs::exists(seen[2]));
}

TEST_F(ExecutorChildTest, NonZeroExitWithoutOutputIsCrashed) {
  ExecutorLaunch launch = script("exit3.sh", "exit 3");
  JobResult r = run_executor_child(launch);
  EXPECT_EQ(r.status, JobStatus::kCrashed);
  EXPECT_NE(r.message.find("status 3"), std::string::npos) << r.message;
  expect_bare(r);
}

TEST_F(ExecutorChildTest, CleanExitWithoutOutputIsCrashed) {
  ExecutorLaunch launch = script("silent.sh", "exit 0");
  JobResult r = run_executor_child(launch);
  EXPECT_EQ(r.status, JobStatus::kCrashed);
  EXPECT_NE(r.message.find("no result"), std::string::npos) << r.message;
}

TEST_F(ExecutorChildTest, GarbageOutputIsCrashedUnreadable) {
  ExecutorLaunch launch =
      script("garbage.sh", "echo 'Segmentation fault {\"status\": ' > \"$out\"");
  JobResult r = run_executor_child(launch);
  EXPECT_EQ(r.status, JobStatus::kCrashed);
  EXPECT_NE(r.message.find("unreadable"), std::string::npos) << r.message;
  expect_bare(r);
}

TEST_F(ExecutorChildTest, MissingExecutableIsRuntimeError) {
  ExecutorLaunch launch = script("unused.sh", "exit 0");
  launch.executable = (dir_ / "no-such-executor").string();
  JobResult r = run_executor_child(launch);
  EXPECT_EQ(r.status, JobStatus::kRuntimeError);
  EXPECT_NE(r.message.find("cannot start"), std::string::npos) << r.message;
  expect_bare(r);
}

}  // namespace
}  // namespace kb
