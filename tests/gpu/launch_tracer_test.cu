// The launch tracer (executor/launch_tracer.h) on a real GPU: every activity is attributed to the
// call during which the executor's thread launched it (kernels, memsets, cuBLAS's launches through
// the driver API), the harness's work between calls is ignored, and side streams, the legacy
// stream and other host threads are named.
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <string>
#include <thread>

#include "executor/launch_tracer.h"
#include "tests/support/assert_ok.h"

namespace kb {
namespace tracer_test {

__global__ void own_kernel(float* data, int n) {  // in namespace kb: "our own"
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) data[i] += 1.f;
}

}  // namespace tracer_test
}  // namespace kb

// Outside namespace kb: counts as a library kernel. `rounds` makes it long.
__global__ void foreign_library_kernel(float* data, int n, int rounds) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    float v = data[i];
    for (int r = 0; r < rounds; ++r) v = v * 0.999f + 0.001f;
    data[i] = v;
  }
}

namespace kb {
namespace {

constexpr int kN = 1 << 20;

class LaunchTracerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), cudaSuccess);
    ASSERT_EQ(cudaStreamCreateWithFlags(&side_, cudaStreamNonBlocking), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&data_, kN * sizeof(float)), cudaSuccess);
  }
  void TearDown() override {
    cudaFree(data_);
    cudaStreamDestroy(side_);
    cudaStreamDestroy(stream_);
  }
  void own(cudaStream_t s) { tracer_test::own_kernel<<<256, 256, 0, s>>>(data_, kN); }
  LaunchTrace end() {
    Result<LaunchTrace> t = tracer_.end(stream_);
    EXPECT_TRUE(t.is_ok()) << t.status().to_string();
    return t.is_ok() ? t.value() : LaunchTrace{};
  }

  LaunchTracer tracer_;
  cudaStream_t stream_ = nullptr, side_ = nullptr;
  float* data_ = nullptr;
};

TEST_F(LaunchTracerTest, AKernelIsAttributedToTheCallThatLaunchedIt) {
  KB_ASSERT_OK(tracer_.begin());
  cudaMemsetAsync(data_, 0, kN * sizeof(float), stream_);  // the harness's, between calls: ignored
  tracer_.open_call(Slot::kReference);
  foreign_library_kernel<<<256, 256, 0, stream_>>>(data_, kN, 1);
  tracer_.close_call();
  tracer_.open_call(Slot::kCustom);
  own(stream_);
  tracer_.close_call();
  own(stream_);  // the harness's again
  LaunchTrace t = end();
  ASSERT_TRUE(t.available);
  EXPECT_TRUE(t.stray.empty()) << t.stray.front();
  ASSERT_EQ(t.calls.size(), 2u);
  EXPECT_EQ(t.calls[0].slot, Slot::kReference);
  EXPECT_EQ(t.calls[0].library_kernels, 1);
  EXPECT_EQ(t.calls[0].own_kernels, 0);
  EXPECT_EQ(t.calls[1].slot, Slot::kCustom);
  EXPECT_EQ(t.calls[1].own_kernels, 1);
  EXPECT_EQ(t.calls[1].library_kernels, 0);
  EXPECT_GT(t.calls[1].own_gpu_ms, 0);
  EXPECT_DOUBLE_EQ(t.calls[1].own_gpu_ms, t.calls[1].total_gpu_ms);
  EXPECT_TRUE(t.calls[1].foreign.empty());
}

TEST_F(LaunchTracerTest, CuBlasLaunchesAreAttributedToTheirCall) {
  cublasHandle_t handle = nullptr;
  ASSERT_EQ(cublasCreate(&handle), CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(cublasSetStream(handle, stream_), CUBLAS_STATUS_SUCCESS);
  const float one = 1.f, zero = 0.f;
  cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, 512, 512, 512, &one, data_, 512, data_ + 262144, 512, &zero,
              data_ + 524288, 512);  // warm: cuBLAS's first call may set itself up
  ASSERT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
  KB_ASSERT_OK(tracer_.begin());
  tracer_.open_call(Slot::kCustom);
  cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, 512, 512, 512, &one, data_, 512, data_ + 262144, 512, &zero,
              data_ + 524288, 512);
  tracer_.close_call();
  LaunchTrace t = end();
  cublasDestroy(handle);
  EXPECT_TRUE(t.stray.empty()) << t.stray.front();
  ASSERT_EQ(t.calls.size(), 1u);
  EXPECT_GE(t.calls[0].library_kernels, 1);
  EXPECT_EQ(t.calls[0].own_kernels, 0);
  EXPECT_TRUE(t.calls[0].foreign.empty());
}

TEST_F(LaunchTracerTest, ASideStreamAndTheLegacyStreamAreForeign) {
  KB_ASSERT_OK(tracer_.begin());
  tracer_.open_call(Slot::kCustom);
  own(stream_);
  own(side_);  // not joined
  tracer_test::own_kernel<<<256, 256>>>(data_, kN);  // the legacy default stream
  cudaMemsetAsync(data_, 0, 4, side_);
  tracer_.close_call();
  LaunchTrace t = end();
  ASSERT_EQ(t.calls.size(), 1u);
  EXPECT_EQ(t.calls[0].own_kernels, 3);
  ASSERT_EQ(t.calls[0].foreign.size(), 3u);
  // CUPTI names kernels by their mangled names (_ZN2kb11tracer_test10own_kernelEPfi).
  EXPECT_NE(t.calls[0].foreign[0].find("own_kernel"), std::string::npos) << t.calls[0].foreign[0];
  EXPECT_NE(t.calls[0].foreign[0].find(" on stream "), std::string::npos) << t.calls[0].foreign[0];
  EXPECT_NE(t.calls[0].foreign[0].find("(job stream "), std::string::npos);
}

TEST_F(LaunchTracerTest, ALaunchFromAnotherHostThreadIsStray) {
  KB_ASSERT_OK(tracer_.begin());
  tracer_.open_call(Slot::kCustom);
  own(stream_);
  tracer_.close_call();
  std::thread later([this] { own(stream_); });  // on the job stream, but not by the executor's thread
  later.join();
  LaunchTrace t = end();
  ASSERT_EQ(t.stray.size(), 1u);
  EXPECT_NE(t.stray[0].find("launched by another host thread"), std::string::npos) << t.stray[0];
  ASSERT_EQ(t.calls.size(), 1u);
  EXPECT_TRUE(t.calls[0].foreign.empty());
}

TEST_F(LaunchTracerTest, LibraryTimeAndMemsetsCountInTheCallsGpuTime) {
  KB_ASSERT_OK(tracer_.begin());
  tracer_.open_call(Slot::kCustom);
  own(stream_);
  cudaMemsetAsync(data_, 0, kN * sizeof(float), stream_);
  foreign_library_kernel<<<256, 256, 0, stream_>>>(data_, kN, 2000);
  tracer_.close_call();
  LaunchTrace t = end();
  ASSERT_EQ(t.calls.size(), 1u);
  EXPECT_EQ(t.calls[0].own_kernels, 1);
  EXPECT_EQ(t.calls[0].library_kernels, 1);
  EXPECT_LT(t.calls[0].own_gpu_ms, 0.5 * t.calls[0].total_gpu_ms);
}

TEST_F(LaunchTracerTest, NothingIsRecordedOutsideATrace) {
  tracer_.open_call(Slot::kCustom);  // no-ops when not tracing
  own(side_);
  tracer_.close_call();
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  KB_ASSERT_OK(tracer_.begin());
  LaunchTrace t = end();
  EXPECT_TRUE(t.calls.empty());
  EXPECT_TRUE(t.stray.empty());
}

}  // namespace
}  // namespace kb
