#include "worker/executor_child.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <thread>

#include "common/json_fields.h"

namespace kb {
namespace {

JobResult bare_result(const ExecutorLaunch& launch, JobStatus status, const std::string& message) {
  return JobResult::failure(launch.problem_id, launch.preset, launch.device_kind, status, message);
}

// An anonymous result file: mkstemp (O_EXCL, mode 0600, an unpredictable name), unlinked at once.
int make_result_file(std::string* error) {
  const char* tmpdir = std::getenv("TMPDIR");
  std::string name = std::string(tmpdir && *tmpdir ? tmpdir : "/tmp") + "/kb-result-XXXXXX";
  const int fd = mkostemp(name.data(), O_CLOEXEC);
  if (fd < 0) {
    *error = "mkstemp " + name + ": " + std::strerror(errno);
    return -1;
  }
  unlink(name.c_str());
  return fd;
}

std::string read_result_file(int fd) {
  std::string text;
  char buf[65536];
  off_t offset = 0;
  ssize_t n;
  while ((n = pread(fd, buf, sizeof buf, offset)) > 0) {
    text.append(buf, static_cast<size_t>(n));
    offset += n;
  }
  return text;
}

// What the child inherits: the result file and the read-only files of fd_args.
struct ChildFiles {
  std::vector<int> fds;
  ~ChildFiles() {
    for (int fd : fds) close(fd);
  }
};

// The full command line, opening fd_args' files into `files`; false (with `error`) when one
// cannot be opened.
bool build_command(const ExecutorLaunch& launch, int output_fd, ChildFiles& files,
                   std::vector<std::string>* argv, std::string* error) {
  std::vector<std::string> command = launch.args;
  command.insert(command.begin(), launch.executable);
  const bool sandboxed = launch.sandbox.mode != SandboxMode::kOff;
  for (const auto& [flag, path] : launch.fd_args) {
    if (!sandboxed) {
      command.insert(command.end(), {flag, path});
      continue;
    }
    const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      *error = "cannot open " + path + ": " + std::strerror(errno);
      return false;
    }
    files.fds.push_back(fd);
    command.insert(command.end(), {flag, "/proc/self/fd/" + std::to_string(fd)});
  }
  command.insert(command.end(), {"--output-fd", std::to_string(output_fd)});
  *argv = sandbox_argv(launch.sandbox, command);
  return true;
}

// fork + exec rather than posix_spawn: the child must set PR_SET_PDEATHSIG, its rlimits and its
// uid before it execs, and clear close-on-exec on exactly the descriptors it inherits. A
// close-on-exec pipe carries exec's errno back, so a missing executable is known at once.
// Between fork and exec the child makes only async-signal-safe calls.
pid_t spawn_child(std::vector<std::string> args, const std::vector<int>& inherit,
                  const SandboxConfig& sandbox, std::string* error) {
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0) {
    *error = std::string("pipe: ") + std::strerror(errno);
    return -1;
  }
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);  // its own group: a kill reaches its children
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);  // the parent died before prctl took effect
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    for (int fd : inherit) fcntl(fd, F_SETFD, 0);
    if (apply_sandbox_identity(sandbox)) execvp(argv[0], argv.data());
    const int err = errno;
    (void)!write(pipe_fds[1], &err, sizeof err);
    _exit(127);
  }
  close(pipe_fds[1]);
  if (pid < 0) {
    *error = std::string("fork: ") + std::strerror(errno);
    close(pipe_fds[0]);
    return -1;
  }
  setpgid(pid, pid);  // also from this side, so that a kill right after the spawn reaches the group
  int exec_errno = 0;
  ssize_t n;
  do {
    n = read(pipe_fds[0], &exec_errno, sizeof exec_errno);
  } while (n < 0 && errno == EINTR);
  close(pipe_fds[0]);
  if (n == static_cast<ssize_t>(sizeof exec_errno)) {
    waitpid(pid, nullptr, 0);
    *error = std::strerror(exec_errno);
    return -1;
  }
  return pid;
}

// Starts `launch` with a fresh result file; returns the pid (-1 and `error` on failure) and the
// result file's descriptor in `output_fd` (owned by the caller when >= 0).
pid_t start(const ExecutorLaunch& launch, int* output_fd, std::string* error) {
  *output_fd = make_result_file(error);
  if (*output_fd < 0) return -1;
  ChildFiles files;
  std::vector<std::string> argv;
  if (!build_command(launch, *output_fd, files, &argv, error)) return -1;
  std::vector<int> inherit = files.fds;
  inherit.push_back(*output_fd);
  return spawn_child(std::move(argv), inherit, launch.sandbox, error);
}

}  // namespace

ExecutorChild::ExecutorChild(ExecutorLaunch launch) : launch_(std::move(launch)) {
  deadline_ = std::chrono::steady_clock::now() +
              std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                  std::chrono::duration<double>(launch_.timeout_s));
  pid_ = start(launch_, &output_fd_, &spawn_error_);
}

ExecutorChild::~ExecutorChild() {
  kill();
  if (output_fd_ >= 0) close(output_fd_);
}

void ExecutorChild::kill() {
  if (pid_ > 0 && !done_) {
    ::kill(-pid_, SIGKILL);
    ::kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  done_ = true;
}

std::optional<JobResult> ExecutorChild::poll() {
  if (done_) return std::nullopt;
  if (pid_ <= 0) {
    done_ = true;
    return bare_result(launch_, JobStatus::kRuntimeError,
                       "cannot start " + launch_.executable + ": " + spawn_error_);
  }
  int status = 0;
  if (waitpid(pid_, &status, WNOHANG) == pid_) return finish(status);
  if (std::chrono::steady_clock::now() < deadline_) return std::nullopt;
  kill();
  std::ostringstream m;
  m << "the executor ran past its " << launch_.timeout_s << " s deadline and was killed";
  return bare_result(launch_, JobStatus::kTimeout, m.str());
}

JobResult ExecutorChild::finish(int status) {
  done_ = true;
  const std::string text = read_result_file(output_fd_);
  if (WIFSIGNALED(status)) {
    return bare_result(launch_, JobStatus::kCrashed,
                       std::string("the executor died of signal ") + strsignal(WTERMSIG(status)));
  }
  if (WEXITSTATUS(status) != 0 || text.empty()) {
    return bare_result(launch_, JobStatus::kCrashed,
                       "the executor exited with status " + std::to_string(WEXITSTATUS(status)) +
                           " and no result");
  }
  // The executor ran candidate code: its output is parsed as a hostile peer's.
  const nlohmann::json parsed = json_fields::parse_untrusted(text);
  if (parsed.is_discarded()) {
    return bare_result(launch_, JobStatus::kCrashed,
                       "unreadable executor result: not JSON, or nested deeper than " +
                           std::to_string(json_fields::kMaxDepth));
  }
  try {
    return job_result_from_json(parsed);
  } catch (const std::exception& e) {
    return bare_result(launch_, JobStatus::kCrashed,
                       std::string("unreadable executor result: ") + e.what());
  }
}

JobResult run_executor_child(const ExecutorLaunch& launch) {
  ExecutorChild process(launch);
  // Polled at most 5 ms apart: a 50 ms cap cost a suite of 22 jobs about half a second.
  auto pause = std::chrono::milliseconds(1);
  while (true) {
    if (std::optional<JobResult> result = process.poll()) return std::move(*result);
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(5));
  }
}

Result<std::string> run_for_output(const ExecutorLaunch& launch) {
  // The same supervision as a job, with the output read as text rather than as a JobResult.
  std::string error;
  int output_fd = -1;
  const pid_t pid = start(launch, &output_fd, &error);
  struct CloseOutput {
    int fd;
    ~CloseOutput() {
      if (fd >= 0) close(fd);
    }
  } close_output{output_fd};
  if (pid <= 0)
    return Status::failed_precondition("cannot start " + launch.executable + ": " + error);
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::duration<double>(launch.timeout_s);
  int status = 0;
  while (waitpid(pid, &status, WNOHANG) != pid) {
    if (std::chrono::steady_clock::now() >= deadline) {
      ::kill(-pid, SIGKILL);
      waitpid(pid, &status, 0);
      return Status::failed_precondition(launch.executable + " did not answer within its deadline");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  std::string text = read_result_file(output_fd);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || text.empty()) {
    return Status::failed_precondition(launch.executable + " failed (wait status " +
                                       std::to_string(status) + ")");
  }
  return text;
}

}  // namespace kb
