#include "tests/bad_variants/bad_common.h"

#include <string>

#include "kernels/device/cuda_check.h"

namespace kb::bad {
namespace {

__global__ void copy_kernel(const float* __restrict__ src, float* __restrict__ dst, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    dst[i] = src[i];
  }
}

}  // namespace

Status make_reference(const ProblemInstance& problem, cudaStream_t stream,
                      std::unique_ptr<Implementation>& out) {
  ImplementationFactory factory = find_implementation(problem.spec().id, Variant::kReference);
  if (!factory) return Status::internal("bad-variant pack: no reference for " + problem.spec().id);
  out = factory();
  return out->setup(problem, stream);
}

DeviceScratch::~DeviceScratch() {
  if (data_) KB_CUDA_WARN(cudaFree(data_));
}

Status DeviceScratch::allocate(int64_t count) {
  if (data_) KB_CUDA_TRY(cudaFree(data_));
  data_ = nullptr;
  count_ = count;
  KB_CUDA_TRY(cudaMalloc(&data_, static_cast<size_t>(count < 1 ? 1 : count) * sizeof(float)));
  return Status::ok();
}

Status copy(const float* src, float* dst, int64_t n, cudaStream_t stream) {
  copy_kernel<<<blocks_for(n), kThreads, 0, stream>>>(src, dst, n);
  KB_CUDA_TRY(cudaGetLastError());
  return Status::ok();
}

}  // namespace kb::bad
