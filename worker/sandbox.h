// The sandbox around a kb-executor child that loads a candidate pack (untrusted code:
// docs/design.md#kernel-packs; docs/sandbox.md): bubblewrap (Debian `bubblewrap`) with
//   - no network (--unshare-net: a namespace with only its own loopback);
//   - a read-only root (--ro-bind / /), a private writable /tmp (--tmpfs /tmp, the scratch and
//     the working directory), a minimal /dev (--dev) plus only the job's GPU device nodes;
//   - the worker's secrets hidden: its state dir (results spool, pack cache) and $HOME become
//     empty read-only tmpfs mounts, its key files read as /dev/null (unopenable);
//   - the paths the job needs (the executor, the problem specs) bind-mounted read-only again;
//     the packs come in as inherited read-only descriptors, so the reference pack is not even
//     visible as a path, and nothing the worker trusts is writable from inside;
//   - rlimits set before exec (they survive bwrap): RLIMIT_DATA for memory (not RLIMIT_AS: the
//     CUDA driver reserves tens of GB of address space for unified addressing, and RLIMIT_AS
//     would fail cuInit; RLIMIT_DATA counts only private writable mappings), RLIMIT_NPROC,
//     RLIMIT_NOFILE, RLIMIT_FSIZE, no core files; no cgroups needed;
//   - a separate unprivileged user when the worker runs as root and a uid is configured: the
//     child drops to it (setgroups/setgid/setuid) before exec'ing bwrap, which then runs
//     unprivileged in a user namespace. Without a uid a root worker's child stays uid 0 with no
//     capabilities (bwrap drops them all), which the hidden paths and read-only mounts contain.
//
// sandbox_argv() is pure (tested); apply_sandbox_identity() runs in the forked child.
//
// Thread safety: pure functions; apply_sandbox_identity() only between fork and exec.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace kb {

enum class SandboxMode { kOff, kBwrap };

// --sandbox=off|bwrap|auto: bwrap when `bwrap` is on PATH and can build its namespaces here (a
// probe run: `bwrap --ro-bind / / --unshare-net true`); auto is off otherwise, bwrap an error.
Result<SandboxMode> resolve_sandbox_mode(const std::string& option, std::string* bwrap_path);

struct SandboxLimits {
  uint64_t data_bytes = 0;     // RLIMIT_DATA; 0: half of physical memory
  uint64_t processes = 4096;   // RLIMIT_NPROC (threads count; CUDA starts a few dozen)
  uint64_t open_files = 1024;  // RLIMIT_NOFILE
  uint64_t file_bytes = uint64_t{1} << 30;  // RLIMIT_FSIZE: the largest file it may write
};

struct SandboxConfig {
  SandboxMode mode = SandboxMode::kOff;
  std::string bwrap = "bwrap";
  int gpu = -1;                              // /dev/nvidia<gpu> and the control nodes; -1: none
  std::vector<std::string> read_only_paths;  // exposed again (executor, problem specs)
  std::vector<std::string> hidden_dirs;      // become empty and read-only ($HOME, the state dir)
  std::vector<std::string> hidden_files;     // become unopenable (key files)
  int64_t uid = -1, gid = -1;                // drop to these when running as root; -1: keep
  SandboxLimits limits;
};

// The command line that runs `command` inside the sandbox (`command` itself when off).
std::vector<std::string> sandbox_argv(const SandboxConfig& config, const std::vector<std::string>& command);

// In the forked child, before exec: rlimits, then the uid/gid drop. Async-signal-safe; returns
// false (errno set) when a step fails, and the child must then not exec.
bool apply_sandbox_identity(const SandboxConfig& config);

// A one-line description for logs and results ("bwrap: no network, ..." or "off").
std::string describe_sandbox(const SandboxConfig& config);

}  // namespace kb
