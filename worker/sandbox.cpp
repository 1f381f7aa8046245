#include "worker/sandbox.h"

#include <fcntl.h>
#include <grp.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <sstream>

namespace kb {
namespace {

std::string find_on_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "/usr/bin:/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    const std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

// Whether bwrap can build its namespaces here (a container without CAP_SYS_ADMIN or without user
// namespaces cannot): `bwrap --ro-bind / / --unshare-net true`.
bool bwrap_works(const std::string& bwrap) {
  std::vector<std::string> args = {bwrap, "--ro-bind", "/", "/", "--unshare-net", "--die-with-parent", "true"};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, bwrap.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return false;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

bool set_limit(int resource, uint64_t value) {
  if (value == 0) return true;
  rlimit limit{static_cast<rlim_t>(value), static_cast<rlim_t>(value)};
  return setrlimit(resource, &limit) == 0;
}

bool no_core_files() {
  rlimit none{0, 0};
  return setrlimit(RLIMIT_CORE, &none) == 0;
}

// The device nodes a CUDA process on GPU `gpu` opens; --dev-bind-try skips absent ones.
void add_gpu_nodes(int gpu, std::vector<std::string>& argv) {
  for (const std::string& node :
       {"/dev/nvidia" + std::to_string(gpu), std::string("/dev/nvidiactl"), std::string("/dev/nvidia-uvm"),
        std::string("/dev/nvidia-uvm-tools"), std::string("/dev/nvidia-modeset"), std::string("/dev/nvidia-caps")}) {
    argv.insert(argv.end(), {"--dev-bind-try", node, node});
  }
}

// `path` with every symbolic link resolved (as far as it exists).
std::string resolved(const std::string& path) {
  std::error_code ec;
  std::filesystem::path real = std::filesystem::weakly_canonical(path, ec);
  return ec ? path : real.string();
}

}  // namespace

Result<SandboxMode> resolve_sandbox_mode(const std::string& option, std::string* bwrap_path) {
  if (option == "off") return SandboxMode::kOff;
  if (option != "bwrap" && option != "auto") {
    return Status::invalid_argument("--sandbox must be off, bwrap or auto, not " + option);
  }
  *bwrap_path = find_on_path("bwrap");
  if (bwrap_path->empty()) {
    if (option == "auto") return SandboxMode::kOff;
    return Status::failed_precondition("--sandbox=bwrap: bwrap is not on PATH (apt-get install bubblewrap)");
  }
  if (bwrap_works(*bwrap_path)) return SandboxMode::kBwrap;
  if (option == "auto") return SandboxMode::kOff;
  return Status::failed_precondition("--sandbox=bwrap: " + *bwrap_path +
                                     " cannot create namespaces here (bwrap --ro-bind / / --unshare-net true "
                                     "fails: user namespaces disabled, or a container without CAP_SYS_ADMIN)");
}

std::vector<std::string> sandbox_argv(const SandboxConfig& config, const std::vector<std::string>& command) {
  if (config.mode == SandboxMode::kOff) return command;
  std::vector<std::string> argv = {config.bwrap,
                                   "--ro-bind", "/", "/",
                                   "--dev", "/dev",
                                   "--proc", "/proc",
                                   "--tmpfs", "/tmp",
                                   "--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
                                   "--unshare-cgroup-try",
                                   "--die-with-parent",
                                   "--cap-drop", "ALL"};
  // Order matters: hide first, then expose what the job needs (bwrap creates the mount points
  // inside the hiding tmpfs), then make the hiding tmpfs read-only. Paths are resolved first: bwrap
  // cannot mount at a path through a symbolic link ("Can't mkdir parents"), and hiding the real
  // file hides every link to it as well.
  for (const std::string& file : config.hidden_files) {
    argv.insert(argv.end(), {"--ro-bind-try", "/dev/null", resolved(file)});
  }
  for (const std::string& dir : config.hidden_dirs) argv.insert(argv.end(), {"--tmpfs", resolved(dir)});
  for (const std::string& path : config.read_only_paths) {
    argv.insert(argv.end(), {"--ro-bind", resolved(path), resolved(path)});
  }
  for (const std::string& dir : config.hidden_dirs) argv.insert(argv.end(), {"--remount-ro", resolved(dir)});
  if (config.gpu >= 0) add_gpu_nodes(config.gpu, argv);
  argv.insert(argv.end(), {"--setenv", "TMPDIR", "/tmp", "--chdir", "/tmp", "--"});
  argv.insert(argv.end(), command.begin(), command.end());
  return argv;
}

bool apply_sandbox_identity(const SandboxConfig& config) {
  if (config.mode == SandboxMode::kOff) return true;
  const SandboxLimits& l = config.limits;
  // RLIMIT_NPROC counts every process of the real uid on the host: it bounds the sandbox only
  // under a uid of its own.
  const bool own_uid = config.uid >= 0 && geteuid() == 0;
  if (!set_limit(RLIMIT_DATA, l.data_bytes) || !set_limit(RLIMIT_NOFILE, l.open_files) ||
      !set_limit(RLIMIT_FSIZE, l.file_bytes) || !no_core_files() ||
      (own_uid && !set_limit(RLIMIT_NPROC, l.processes))) {
    return false;
  }
  if (!own_uid) return true;
  const gid_t gid = static_cast<gid_t>(config.gid >= 0 ? config.gid : config.uid);
  return setgroups(0, nullptr) == 0 && setgid(gid) == 0 && setuid(static_cast<uid_t>(config.uid)) == 0;
}

std::string describe_sandbox(const SandboxConfig& config) {
  if (config.mode == SandboxMode::kOff) return "off";
  std::ostringstream d;
  d << "bwrap: no network, read-only root, private /tmp, "
    << (config.gpu >= 0 ? "GPU " + std::to_string(config.gpu) + " device nodes only" : "no GPU nodes") << ", "
    << config.hidden_dirs.size() << " dirs and " << config.hidden_files.size() << " key files hidden, "
    << (config.uid >= 0 && geteuid() == 0 ? "uid " + std::to_string(config.uid) : "same uid, no capabilities")
    << ", data " << (config.limits.data_bytes >> 20) << " MiB";
  return d.str();
}

}  // namespace kb
