// The bubblewrap command line around the executor: what is hidden, what is exposed again, and in
// which order (bwrap applies its mounts in argument order).
#include "worker/sandbox.h"
#include "tests/support/assert_ok.h"
#include "tests/support/temp_dir.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace kb {
namespace {

// The index of the first `a b c` triple in argv, or -1.
long find_triple(const std::vector<std::string>& argv, const std::string& a, const std::string& b,
                 const std::string& c) {
  for (size_t i = 0; i + 2 < argv.size(); ++i) {
    if (argv[i] == a && argv[i + 1] == b && argv[i + 2] == c) return static_cast<long>(i);
  }
  return -1;
}

bool has(const std::vector<std::string>& argv, const std::string& flag) {
  return std::find(argv.begin(), argv.end(), flag) != argv.end();
}

SandboxConfig config() {
  SandboxConfig c;
  c.mode = SandboxMode::kBwrap;
  c.bwrap = "/usr/bin/bwrap";
  c.gpu = 2;
  c.hidden_dirs = {"/home/w", "/home/w/.local/state/kbfleet/worker-x"};
  c.hidden_files = {"/etc/kb/worker.key"};
  c.read_only_paths = {"/home/w/kbfleet/build/executor/kb-executor", "/home/w/kbfleet/problems"};
  return c;
}

TEST(Sandbox, OffRunsTheCommandAsItIs) {
  SandboxConfig c;
  EXPECT_EQ(sandbox_argv(c, {"kb-executor", "--problem", "L1_003"}),
            (std::vector<std::string>{"kb-executor", "--problem", "L1_003"}));
}

TEST(Sandbox, NoNetworkReadOnlyRootPrivateTmp) {
  const std::vector<std::string> argv = sandbox_argv(config(), {"kb-executor", "--seed", "1"});
  EXPECT_EQ(argv.front(), "/usr/bin/bwrap");
  EXPECT_GE(find_triple(argv, "--ro-bind", "/", "/"), 0);
  EXPECT_TRUE(has(argv, "--unshare-net"));
  EXPECT_TRUE(has(argv, "--die-with-parent"));
  const auto tmp = std::find(argv.begin(), argv.end(), "--tmpfs");
  ASSERT_NE(tmp, argv.end());
  EXPECT_EQ(*(tmp + 1), "/tmp");  // the first tmpfs: the private scratch
  const auto caps = std::find(argv.begin(), argv.end(), "--cap-drop");
  ASSERT_NE(caps, argv.end());
  EXPECT_EQ(*(caps + 1), "ALL");
  // The command follows "--" unchanged.
  const auto dashes = std::find(argv.begin(), argv.end(), "--");
  ASSERT_NE(dashes, argv.end());
  EXPECT_EQ(std::vector<std::string>(dashes + 1, argv.end()),
            (std::vector<std::string>{"kb-executor", "--seed", "1"}));
}

TEST(Sandbox, HidesThenExposesThenLocksInThatOrder) {
  const std::vector<std::string> argv = sandbox_argv(config(), {"kb-executor"});
  const long key = find_triple(argv, "--ro-bind-try", "/dev/null", "/etc/kb/worker.key");
  const long home = find_triple(argv, "--tmpfs", "/home/w", "--tmpfs");
  const long exe = find_triple(argv, "--ro-bind", "/home/w/kbfleet/build/executor/kb-executor",
                               "/home/w/kbfleet/build/executor/kb-executor");
  const auto lock = std::find(argv.begin(), argv.end(), "--remount-ro") - argv.begin();
  ASSERT_GE(key, 0);
  ASSERT_GE(home, 0);
  ASSERT_GE(exe, 0);
  EXPECT_LT(key, home);
  EXPECT_LT(home, exe);
  EXPECT_LT(exe, lock);
  EXPECT_EQ(argv[lock + 1], "/home/w");
}

TEST(Sandbox, OnlyTheJobsGpuNodes) {
  const std::vector<std::string> argv = sandbox_argv(config(), {"kb-executor"});
  EXPECT_GE(find_triple(argv, "--dev-bind-try", "/dev/nvidia2", "/dev/nvidia2"), 0);
  EXPECT_GE(find_triple(argv, "--dev-bind-try", "/dev/nvidiactl", "/dev/nvidiactl"), 0);
  EXPECT_GE(find_triple(argv, "--dev-bind-try", "/dev/nvidia-uvm", "/dev/nvidia-uvm"), 0);
  EXPECT_EQ(find_triple(argv, "--dev-bind-try", "/dev/nvidia0", "/dev/nvidia0"), -1);
  EXPECT_EQ(find_triple(argv, "--dev-bind", "/dev", "/dev"), -1);
  SandboxConfig cpu = config();
  cpu.gpu = -1;
  const std::vector<std::string> cpu_argv = sandbox_argv(cpu, {"kb-executor"});
  EXPECT_EQ(find_triple(cpu_argv, "--dev-bind-try", "/dev/nvidiactl", "/dev/nvidiactl"), -1);
}

// bwrap cannot mount at a path through a symbolic link ("Can't mkdir parents"): a key or state
// dir reached through one (a /work/x -> /data/x checkout, /etc/kbfleet -> ...) is hidden at its
// real path, which also hides it under every link to it.
TEST(Sandbox, PathsThroughSymbolicLinksAreHiddenAtTheirRealPath) {
  const ::kb::test::TempDir base("kb-sandbox-link-test");
  std::filesystem::create_directories(base / "real" / "keys");
  std::ofstream(base / "real" / "keys" / "worker.key") << "secret\n";
  std::filesystem::create_directory_symlink(base / "real", base / "link");
  SandboxConfig c = config();
  c.hidden_files = {(base / "link" / "keys" / "worker.key").string()};
  c.hidden_dirs = {(base / "link" / "keys").string()};
  const std::vector<std::string> argv = sandbox_argv(c, {"kb-executor"});
  const std::string real = std::filesystem::canonical(base / "real").string();
  EXPECT_GE(find_triple(argv, "--ro-bind-try", "/dev/null", real + "/keys/worker.key"), 0);
  EXPECT_GE(find_triple(argv, "--tmpfs", real + "/keys", "--ro-bind"), 0);
  EXPECT_FALSE(has(argv, (base / "link" / "keys" / "worker.key").string()));
}

TEST(Sandbox, ModeOptionResolves) {
  std::string bwrap;
  EXPECT_EQ(resolve_sandbox_mode("off", &bwrap).value(), SandboxMode::kOff);
  EXPECT_FALSE(resolve_sandbox_mode("docker", &bwrap).is_ok());
  auto automatic = resolve_sandbox_mode("auto", &bwrap);
  KB_ASSERT_OK(automatic);
  EXPECT_EQ(automatic.value() == SandboxMode::kBwrap, !bwrap.empty());
}

}  // namespace
}  // namespace kb
