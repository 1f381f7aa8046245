// `kb-worker --gpu all`: one child kb-worker per visible GPU under this process, the way the
// NVIDIA device plugin and Slurm hand a job its GPUs (CUDA_VISIBLE_DEVICES; the children's
// ordinals 0..N-1 are CUDA's renumbered ones).
//
// Visible GPUs: CUDA_VISIBLE_DEVICES when it is set (its entries up to the first malformed one, as
// CUDA reads it; "" or "-1" means none), else the /dev/nvidiaN device nodes. Neither needs
// nvidia-smi or the CUDA runtime in this process.
//
// The parent forwards SIGTERM/SIGINT to every child (each drains: worker_main.cpp) and exits when
// they all have, with 0 when every child did. A child that dies on its own after running for a
// while is restarted after kRestartDelay; one that fails at start-up stops the whole set (a bad
// option or config would only fail again).
//
// Thread safety: single-threaded; installs SIGTERM/SIGINT/SIGHUP handlers in run_gpu_children.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"

namespace kb {

// `cuda_visible_devices`: the variable's value, nullopt when it is not set at all.
Result<int> visible_gpu_count(const std::optional<std::string>& cuda_visible_devices,
                              const std::string& dev_dir = "/dev");

struct ChildIdentity {  // the parent's resolved values ("" = the child's own default)
  std::string name, state_dir, http_bind;
};

// argv (without argv[0]) for child `index`: the parent's arguments without --gpu, --name,
// --state-dir and --http-bind, then `--gpu INDEX` and the child's own name (NAME-gpuI), state
// directory (DIR/gpuI) and HTTP port (PORT+I, unless PORT is 0).
std::vector<std::string> child_arguments(const std::vector<std::string>& parent_args, int index,
                                         const ChildIdentity& parent);

inline constexpr std::chrono::seconds kRestartDelay{2};
inline constexpr std::chrono::seconds kStartupFailureWindow{10};

// Runs `count` children of `executable` and supervises them; returns the exit code.
int run_gpu_children(const std::string& executable, const std::vector<std::string>& parent_args,
                     int count, const ChildIdentity& parent);

}  // namespace kb
