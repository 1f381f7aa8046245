#include "worker/gpu_children.h"
#include "tests/support/temp_dir.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace kb {
namespace {

namespace fs = std::filesystem;

TEST(VisibleGpuCount, CountsCudaVisibleDevicesEntriesUpToTheFirstMalformedOne) {
  EXPECT_EQ(visible_gpu_count(std::string("0,1,3")).value(), 3);
  EXPECT_EQ(visible_gpu_count(std::string("GPU-8a1b2c3d-1111-2222-3333-444455556666,1")).value(), 2);
  EXPECT_EQ(visible_gpu_count(std::string("2,-1,3")).value(), 1);  // CUDA stops at -1
  EXPECT_EQ(visible_gpu_count(std::string("")).value(), 0);        // set and empty: none
  EXPECT_EQ(visible_gpu_count(std::string("-1")).value(), 0);
}

TEST(VisibleGpuCount, WithoutTheVariableCountsDeviceNodes) {
  const ::kb::test::TempDir dev("kb-gpu-children-dev");
  for (const char* name : {"nvidia0", "nvidia1", "nvidiactl", "nvidia-uvm", "nvidia-modeset"})
    std::ofstream(dev / name) << "";
  EXPECT_EQ(visible_gpu_count(std::nullopt, dev.string()).value(), 2);
}

TEST(ChildArguments, ReplacesGpuAndGivesEachChildItsOwnNameStateAndPort) {
  const std::vector<std::string> parent = {"--gpu", "all", "--coordinator", "tcp://c:5555",
                                           "--name=node", "--state-dir", "/s",
                                           "--http-bind", "127.0.0.1:9470"};
  const std::vector<std::string> child =
      child_arguments(parent, 1, {"node", "/s", "127.0.0.1:9470"});
  const std::vector<std::string> expected = {"--coordinator", "tcp://c:5555", "--gpu", "1",
                                             "--name", "node-gpu1", "--state-dir", "/s/gpu1",
                                             "--http-bind", "127.0.0.1:9471"};
  EXPECT_EQ(child, expected);
}

TEST(ChildArguments, LeavesDefaultsToTheChildAndPortZeroAlone) {
  const std::vector<std::string> child =
      child_arguments({"--gpu=all", "--config", "/etc/kbfleet/worker.yaml"}, 0, {"", "", "127.0.0.1:0"});
  const std::vector<std::string> expected = {"--config", "/etc/kbfleet/worker.yaml", "--gpu", "0",
                                             "--http-bind", "127.0.0.1:0"};
  EXPECT_EQ(child, expected);
}

}  // namespace
}  // namespace kb
