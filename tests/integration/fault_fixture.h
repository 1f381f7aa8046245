// The fault tests' fixture (fault_test.cpp: lease fencing and failures; drain_test.cpp: the
// worker's drain): a FleetStack of real kb-coordinator and kb-worker processes on loopback over a
// real PostgreSQL, with helpers to submit sim runs, count executions (the workers'
// --execution-log) and stored rows, and make a full disk. Test-only; one per test binary file.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/fleet_fixture.h"

namespace kb::testing::fault {

namespace fs = std::filesystem;
using std::chrono::milliseconds;
using std::chrono::seconds;
using Clock = std::chrono::steady_clock;

inline milliseconds since(Clock::time_point start) {
  return std::chrono::duration_cast<milliseconds>(Clock::now() - start);
}

// Sums a job-id -> count map.
inline int total(const std::map<int64_t, int>& counts) {
  int n = 0;
  for (const auto& [job, count] : counts) n += count;
  return n;
}

// Waits until the file at `path` contains `text` (true) or `timeout` passes (false).
inline bool wait_for_text(const std::string& path, const std::string& text, milliseconds timeout) {
  const auto end = Clock::now() + timeout;
  while (true) {
    std::ifstream in(path);
    const std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (all.find(text) != std::string::npos) return true;
    if (Clock::now() >= end) return false;
    std::this_thread::sleep_for(milliseconds(10));
  }
}

// The command line of the process at `proc_dir` (/proc/PID), empty where it cannot be read: a
// process that exits between the directory's listing and the read fails the read with ESRCH,
// which an istreambuf_iterator over an ifstream throws as basic_filebuf::underflow (CI, session
// 53: FaultTest.CancelMidRunKillsTheExecutorWithinTwoSeconds, the executor being killed).
inline std::string process_cmdline(const fs::path& proc_dir) {
  std::string cmdline;
  const int fd = ::open((proc_dir / "cmdline").c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return cmdline;
  char buf[4096];
  ssize_t got = 0;
  while ((got = ::read(fd, buf, sizeof buf)) > 0) cmdline.append(buf, static_cast<size_t>(got));
  ::close(fd);
  return got < 0 ? std::string() : cmdline;
}

// How many kb-executor processes (and bwrap sandboxes around one) run with `marker` on their
// command line; kb-worker itself names kb-executor in its arguments and is not one.
inline int executor_processes(const std::string& marker) {
  int n = 0;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/proc", ec)) {
    const std::string cmdline = process_cmdline(entry.path());
    const std::string program = fs::path(cmdline.substr(0, cmdline.find('\0'))).filename();
    if ((program == "kb-executor" || program == "bwrap") &&
        cmdline.find(marker) != std::string::npos)
      ++n;
  }
  return n;
}

// The stack, its database and work directory: FleetFixture (KB_START_FLEET, KB_OPEN_FLEET).
class FaultTest : public FleetFixture {
 protected:
  void TearDown() override {
    FleetFixture::TearDown();
    for (const std::string& dir : mounts_) ::umount2(dir.c_str(), MNT_DETACH);
  }
  int add_worker(const std::string& name, const std::string& device = "sim") {
    return stack_->add_worker(name, {"--device", device});
  }
  int64_t submit(const std::vector<std::string>& args) {
    auto reply = stack_->kb_json(args);
    KB_EXPECT_OK(reply);
    return reply.is_ok() ? reply.value().value("run_id", int64_t{-1}) : -1;
  }
  // A run of sim jobs sleeping these many ms each, submitted from a file (longest runs first).
  int64_t submit_sim(const std::vector<int>& sleep_ms, const std::vector<std::string>& extra = {}) {
    const std::string file = stack_->work_dir() + "/sim-jobs-" + std::to_string(++files_) + ".txt";
    std::ofstream out(file);
    for (int ms : sleep_ms) out << ms << "\n";
    out.close();
    std::vector<std::string> args = {"submit", "--sim-jobs", file};
    args.insert(args.end(), extra.begin(), extra.end());
    return submit(args);
  }
  int64_t value(const std::string& sql) { return stack_->query_int(sql); }
  int64_t rows_of_job(int64_t job) {
    return value("SELECT count(*) FROM results WHERE job_id = " + std::to_string(job));
  }
  // The job of `run` that runs first: its longest, ties by lower id (the scheduler's order).
  int64_t first_job(int64_t run) {
    return value("SELECT id FROM jobs WHERE run_id = " + std::to_string(run) +
                 " ORDER BY predicted_ms DESC, id LIMIT 1");
  }
  int64_t last_job(int64_t run) {
    return value("SELECT id FROM jobs WHERE run_id = " + std::to_string(run) +
                 " ORDER BY predicted_ms DESC, id DESC LIMIT 1");
  }
  bool wait_started(int64_t job, int times, milliseconds timeout = milliseconds(30000)) {
    return stack_->wait_for_executions(job, times, timeout);
  }
  // A tmpfs of `size` mounted at `dir` (created), unmounted at TearDown; false when mounting is
  // not permitted here (not root, no CAP_SYS_ADMIN, a container without it).
  bool mount_tmpfs(const std::string& dir, const std::string& size, std::string* why) {
    fs::create_directories(dir);
    if (::mount("tmpfs", dir.c_str(), "tmpfs", 0, ("size=" + size).c_str()) != 0) {
      *why =
          std::string("mount -t tmpfs -o size=") + size + " " + dir + ": " + std::strerror(errno);
      return false;
    }
    mounts_.push_back(dir);
    return true;
  }
  void report(const std::string& test, const std::string& executions, const std::string& rows,
              Clock::time_point start) {
    std::cout << "[fault] " << test << ": executions expected/observed " << executions
              << "; rows expected/observed " << rows << "; " << since(start).count() << " ms\n";
  }

  std::vector<std::string> mounts_;
  int files_ = 0;
};

}  // namespace kb::testing::fault
