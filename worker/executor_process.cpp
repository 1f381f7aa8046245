#include "worker/executor_process.h"

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

extern char** environ;

namespace kb {
namespace {

JobResult bare_result(const ExecutorLaunch& launch, JobStatus status, const std::string& message) {
  JobResult r;
  r.problem_id = launch.problem_id;
  r.preset = launch.preset;
  r.device_kind = launch.device_kind;
  r.status = status;
  r.message = message;
  return r;
}

std::string temp_result_path() {
  static std::atomic<int> counter{0};
  return (std::filesystem::temp_directory_path() /
          ("kb-result-" + std::to_string(getpid()) + "-" + std::to_string(counter++) + ".json"))
      .string();
}

// Waits for `pid` until the deadline; kills its process group when it passes.
bool wait_with_deadline(pid_t pid, double timeout_s, int* status) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  auto pause = std::chrono::milliseconds(1);
  while (true) {
    pid_t done = waitpid(pid, status, WNOHANG);
    if (done == pid) return true;
    if (std::chrono::steady_clock::now() >= deadline) {
      kill(-pid, SIGKILL);
      waitpid(pid, status, 0);
      return false;
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(50));
  }
}

}  // namespace

JobResult run_executor_process(const ExecutorLaunch& launch) {
  const std::string output = temp_result_path();
  std::filesystem::remove(output);  // a file left by an orphan of an earlier process is not ours
  std::vector<std::string> args = launch.args;
  args.insert(args.begin(), launch.executable);
  args.push_back("--output");
  args.push_back(output);
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);  // its own group: a kill reaches its children
  posix_spawnattr_setpgroup(&attr, 0);
  pid_t pid = 0;
  int err = posix_spawnp(&pid, launch.executable.c_str(), nullptr, &attr, argv.data(), environ);
  posix_spawnattr_destroy(&attr);
  if (err != 0) {
    return bare_result(launch, JobStatus::kRuntimeError,
                       "cannot start " + launch.executable + ": " + std::strerror(err));
  }
  int status = 0;
  if (!wait_with_deadline(pid, launch.timeout_s, &status)) {
    std::filesystem::remove(output);
    std::ostringstream m;
    m << "the executor ran past its " << launch.timeout_s << " s deadline and was killed";
    return bare_result(launch, JobStatus::kTimeout, m.str());
  }
  std::ifstream in(output);
  std::stringstream text;
  text << in.rdbuf();
  std::filesystem::remove(output);
  if (WIFSIGNALED(status)) {
    return bare_result(launch, JobStatus::kCrashed,
                       std::string("the executor died of signal ") + strsignal(WTERMSIG(status)));
  }
  if (WEXITSTATUS(status) != 0 || text.str().empty()) {
    return bare_result(launch, JobStatus::kCrashed,
                       "the executor exited with status " + std::to_string(WEXITSTATUS(status)) + " and no result");
  }
  try {
    return job_result_from_json(nlohmann::json::parse(text.str()));
  } catch (const std::exception& e) {
    return bare_result(launch, JobStatus::kCrashed, std::string("unreadable executor result: ") + e.what());
  }
}

std::string default_executor_path() {
  std::error_code ec;
  auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    auto beside = self.parent_path() / "kb-executor";
    if (std::filesystem::exists(beside)) return beside.string();
    auto in_build = self.parent_path().parent_path() / "worker" / "kb-executor";
    if (std::filesystem::exists(in_build)) return in_build.string();
  }
  return "kb-executor";
}

}  // namespace kb
