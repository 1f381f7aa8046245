// Helpers of the GPU op tests: device buffers, random host tensors, upload/download, and the
// comparison of an fp32 GPU result against a double golden-model result with
// |gpu - cpu| <= atol + rtol * |cpu|, reported with the worst element's index and values.
//
// Thread safety: test code, one thread.
#pragma once

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "common/host_tensor.h"
#include "kernels/implementation.h"

namespace kb::test {

// Owns `count` floats of device memory.
class DeviceBuffer {
 public:
  explicit DeviceBuffer(size_t count) : count_(count) {
    if (count_ > 0) EXPECT_EQ(cudaMalloc(&data_, count_ * sizeof(float)), cudaSuccess);
  }
  ~DeviceBuffer() {
    if (data_ != nullptr) cudaFree(data_);
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  float* data() const { return data_; }
  size_t count() const { return count_; }

 private:
  float* data_ = nullptr;
  size_t count_ = 0;
};

// A tensor in device memory together with its buffer.
struct GpuTensor {
  DeviceBuffer buffer;
  DeviceTensor view;
  explicit GpuTensor(const Shape& shape)
      : buffer(static_cast<size_t>(element_count(shape))), view{buffer.data(), shape} {}
};

inline HostTensor<float> random_tensor(const Shape& shape, std::mt19937& rng, float lo = -1.0f,
                                       float hi = 1.0f) {
  std::uniform_real_distribution<float> dist(lo, hi);
  HostTensor<float> t(shape);
  for (float& v : t.data) v = dist(rng);
  return t;
}

inline void upload(const HostTensor<float>& host, const DeviceTensor& device) {
  ASSERT_EQ(host.shape, device.shape);
  ASSERT_EQ(cudaMemcpy(device.data, host.data.data(), host.data.size() * sizeof(float),
                       cudaMemcpyHostToDevice),
            cudaSuccess);
}

inline HostTensor<float> download(const DeviceTensor& device) {
  HostTensor<float> host(device.shape);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess) << cudaGetErrorString(cudaGetLastError());
  EXPECT_EQ(cudaMemcpy(host.data.data(), device.data, host.data.size() * sizeof(float),
                       cudaMemcpyDeviceToHost),
            cudaSuccess);
  return host;
}

inline std::string index_string(const Shape& shape, int64_t flat) {
  std::vector<int64_t> index(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    index[d] = flat % shape[d];
    flat /= shape[d];
  }
  std::ostringstream out;
  out << "(";
  for (size_t d = 0; d < index.size(); ++d) out << (d ? ", " : "") << index[d];
  out << ")";
  return out.str();
}

// Succeeds when every element is within atol + rtol * |cpu| (and NaN only where the golden
// model has NaN); otherwise names the worst element (by excess over its bound).
inline ::testing::AssertionResult all_close(const HostTensor<float>& gpu,
                                            const HostTensor<double>& cpu, double atol = 1e-4,
                                            double rtol = 1e-4) {
  if (gpu.shape != cpu.shape) {
    return ::testing::AssertionFailure()
           << "shape " << shape_to_string(gpu.shape) << " != golden " << shape_to_string(cpu.shape);
  }
  int64_t bad = 0, worst = -1;
  double worst_excess = 0, max_abs = 0;
  for (int64_t i = 0; i < gpu.numel(); ++i) {
    const double g = gpu.data[i], c = cpu.data[i];
    const double err = std::fabs(g - c);
    if (std::isnan(c) && std::isnan(g)) continue;
    if (!(err <= atol + rtol * std::fabs(c))) {
      ++bad;
      const double excess = std::isnan(err) ? INFINITY : err - (atol + rtol * std::fabs(c));
      if (worst < 0 || excess > worst_excess) worst = i, worst_excess = excess;
    }
    if (err > max_abs) max_abs = err;
  }
  if (bad == 0) return ::testing::AssertionSuccess() << "max |error| " << max_abs;
  return ::testing::AssertionFailure()
         << bad << " of " << gpu.numel() << " elements of " << shape_to_string(gpu.shape)
         << " out of tolerance (atol " << atol << ", rtol " << rtol << "); max |error| " << max_abs
         << "; worst at " << index_string(gpu.shape, worst) << " (flat " << worst << "): gpu "
         << gpu.data[worst] << ", golden " << cpu.data[worst];
}

}  // namespace kb::test
