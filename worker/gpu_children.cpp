#include "worker/gpu_children.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <filesystem>
#include <regex>
#include <thread>

#include "common/log.h"

namespace kb {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

volatile std::sig_atomic_t g_signal = 0;
void on_signal(int sig) { g_signal = sig; }

// One CUDA_VISIBLE_DEVICES entry: an ordinal, or a GPU-/MIG- UUID (a prefix of one is allowed).
bool valid_entry(const std::string& entry) {
  static const std::regex pattern(R"(^\s*([0-9]+|(GPU|MIG)-[0-9A-Za-z/-]+)\s*$)");
  return std::regex_match(entry, pattern);
}

std::string with_port_offset(const std::string& host_port, int index) {
  const size_t colon = host_port.rfind(':');
  if (colon == std::string::npos) return host_port;
  int port = 0;
  try {
    port = std::stoi(host_port.substr(colon + 1));
  } catch (const std::exception&) {
    return host_port;
  }
  if (port == 0) return host_port;
  return host_port.substr(0, colon + 1) + std::to_string(port + index);
}

pid_t spawn(const std::string& executable, const std::vector<std::string>& args) {
  const pid_t pid = fork();
  if (pid != 0) return pid;
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(executable.c_str()));
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  signal(SIGTERM, SIG_DFL);
  signal(SIGINT, SIG_DFL);
  execv(executable.c_str(), argv.data());
  _exit(127);
}

}  // namespace

Result<int> visible_gpu_count(const std::optional<std::string>& cuda_visible_devices,
                              const std::string& dev_dir) {
  if (cuda_visible_devices) {
    const std::string& list = *cuda_visible_devices;
    int n = 0;
    size_t start = 0;
    while (!list.empty()) {
      const size_t comma = list.find(',', start);
      const std::string entry =
          list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      if (!valid_entry(entry)) break;
      ++n;
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
    return n;
  }
  std::error_code ec;
  int n = 0;
  static const std::regex node(R"(^nvidia[0-9]+$)");
  for (fs::directory_iterator it(dev_dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (std::regex_match(it->path().filename().string(), node)) ++n;
  }
  if (ec) return Status::io_error("cannot list " + dev_dir + ": " + ec.message());
  return n;
}

std::vector<std::string> child_arguments(const std::vector<std::string>& parent_args, int index,
                                         const ChildIdentity& parent) {
  static const std::vector<std::string> replaced = {"--gpu", "--name", "--state-dir", "--http-bind"};
  std::vector<std::string> out;
  for (size_t i = 0; i < parent_args.size(); ++i) {
    const std::string& a = parent_args[i];
    bool skip = false;
    for (const std::string& flag : replaced) {
      if (a == flag) {
        skip = true;
        ++i;  // and its value
      } else if (a.rfind(flag + "=", 0) == 0) {
        skip = true;
      }
    }
    if (!skip) out.push_back(a);
  }
  const std::string gpu = std::to_string(index);
  out.insert(out.end(), {"--gpu", gpu});
  if (!parent.name.empty()) out.insert(out.end(), {"--name", parent.name + "-gpu" + gpu});
  if (!parent.state_dir.empty())
    out.insert(out.end(), {"--state-dir", (fs::path(parent.state_dir) / ("gpu" + gpu)).string()});
  if (!parent.http_bind.empty())
    out.insert(out.end(), {"--http-bind", with_port_offset(parent.http_bind, index)});
  return out;
}

int run_gpu_children(const std::string& executable, const std::vector<std::string>& parent_args,
                     int count, const ChildIdentity& parent) {
  struct sigaction action {};
  action.sa_handler = on_signal;  // no SA_RESTART: waitpid returns EINTR on a signal
  sigaction(SIGTERM, &action, nullptr);
  sigaction(SIGINT, &action, nullptr);
  struct Child {
    pid_t pid = -1;
    Clock::time_point started;
  };
  std::vector<Child> children(count);
  for (int i = 0; i < count; ++i) {
    children[i] = {spawn(executable, child_arguments(parent_args, i, parent)), Clock::now()};
    KB_LOG_INFO("gpu {}: child kb-worker pid {}", i, children[i].pid);
  }
  bool stopping = false;
  int exit_code = 0, alive = count;
  while (alive > 0) {
    if (g_signal != 0) {  // forward each signal: a second SIGTERM stops the children's jobs too
      const int sig = g_signal;
      g_signal = 0;
      stopping = true;
      KB_LOG_INFO("signal {}: forwarding to {} child worker(s)", sig, alive);
      for (const Child& c : children)
        if (c.pid > 0) kill(c.pid, sig);
    }
    int status = 0;
    const pid_t pid = waitpid(-1, &status, 0);
    if (pid < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (int i = 0; i < count; ++i) {
      if (children[i].pid != pid) continue;
      --alive;
      children[i].pid = -1;
      const bool clean = WIFEXITED(status) && WEXITSTATUS(status) == 0;
      const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      KB_LOG_INFO("gpu {}: child exited with code {}", i, code);
      if (!clean && exit_code == 0) exit_code = code;
      if (stopping || clean) break;
      if (Clock::now() - children[i].started < kStartupFailureWindow) {
        KB_LOG_ERROR("gpu {}: child failed at start-up; stopping every child", i);
        stopping = true;
        for (const Child& c : children)
          if (c.pid > 0) kill(c.pid, SIGTERM);
        break;
      }
      std::this_thread::sleep_for(kRestartDelay);
      children[i] = {spawn(executable, child_arguments(parent_args, i, parent)), Clock::now()};
      ++alive;
      exit_code = 0;
      KB_LOG_WARN("gpu {}: restarted as pid {}", i, children[i].pid);
    }
  }
  return exit_code;
}

}  // namespace kb
