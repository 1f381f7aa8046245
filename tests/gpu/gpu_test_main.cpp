// Entry point of the GPU tests: skips (exit code 77, CTest's SKIP_RETURN_CODE) without a GPU.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdio>

int main(int argc, char** argv) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("no CUDA device: skipping the GPU tests\n");
    return 77;
  }
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, 0);
  std::printf("GPU tests on %s (sm_%d%d)\n", prop.name, prop.major, prop.minor);
  testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
