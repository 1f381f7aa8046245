// A child process for the integration tests: started with its output in a log file, stopped by
// signal, waited for with a timeout. It gets SIGKILL if the test process dies
// (PR_SET_PDEATHSIG), so a crashed test leaves no coordinator or worker behind.
//
// Thread safety: one ChildProcess per owner thread.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace kb::testing {

class ChildProcess {
 public:
  ChildProcess() = default;
  ~ChildProcess();  // SIGKILL + reap when still running
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  // args[0] is the executable (a path). stdout and stderr are appended to log_path. `env` adds
  // to (or replaces in) the test's environment.
  bool start(const std::vector<std::string>& args, const std::string& log_path,
             const std::map<std::string, std::string>& env = {});
  bool running();
  pid_t pid() const { return pid_; }
  void signal(int sig);
  // The exit status (as waitpid's) once it has exited, nullopt on timeout.
  std::optional<int> wait(std::chrono::milliseconds timeout);
  // SIGKILL and reap.
  void kill_now();

 private:
  pid_t pid_ = -1;
  std::optional<int> status_;
};

// Runs a command to completion; returns its exit code (-1 when it could not run or was killed
// after `timeout`), its stdout in *output (its stderr goes to the test's).
int run_command(const std::vector<std::string>& args, std::string* output,
                std::chrono::milliseconds timeout,
                const std::map<std::string, std::string>& env = {});

}  // namespace kb::testing
