#include "kernels/device/cuda_check.h"
#include "worker/device_buffers.cuh"

namespace kb {
namespace {

__global__ void fill_nan_kernel(float* data, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    data[i] = __int_as_float(0x7fc00000);
  }
}

__device__ uint64_t mix64(uint64_t x) {  // splitmix64's finalizer
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

__global__ void hash_kernel(const uint32_t* words, int64_t n, uint64_t salt, unsigned long long* acc) {
  uint64_t local = 0;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    local += mix64((static_cast<uint64_t>(i) + salt) * 0x9e3779b97f4a7c15ull ^ words[i]);
  }
  for (int offset = 16; offset > 0; offset /= 2) local += __shfl_down_sync(0xffffffff, local, offset);
  if ((threadIdx.x & 31) == 0) atomicAdd(acc, static_cast<unsigned long long>(local));
}

unsigned grid_for(int64_t n) { return static_cast<unsigned>(std::min<int64_t>((n + 255) / 256, 4096)); }

}  // namespace

Status fill_nan(float* data, int64_t n, cudaStream_t stream) {
  if (n == 0) return Status::ok();
  fill_nan_kernel<<<grid_for(n), 256, 0, stream>>>(data, n);
  KB_CUDA_TRY(cudaGetLastError());
  return Status::ok();
}

Status hash_words_into(const uint32_t* words, int64_t n, uint64_t salt, unsigned long long* accumulator,
                       cudaStream_t stream) {
  if (n == 0) return Status::ok();
  hash_kernel<<<grid_for(n), 256, 0, stream>>>(words, n, salt, accumulator);
  KB_CUDA_TRY(cudaGetLastError());
  return Status::ok();
}

Status L2Flusher::init(int device) {
  int l2 = 0;
  KB_CUDA_TRY(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device));
  bytes_ = 2 * static_cast<size_t>(l2);
  if (bytes_ > 0) KB_CUDA_TRY(cudaMalloc(&buffer_, bytes_));
  return Status::ok();
}

Status L2Flusher::flush(cudaStream_t stream) {
  if (!buffer_) return Status::ok();
  KB_CUDA_TRY(cudaCtxResetPersistingL2Cache());
  KB_CUDA_TRY(cudaMemsetAsync(buffer_, static_cast<int>(++pass_ & 0xff), bytes_, stream));
  return Status::ok();
}

L2Flusher::~L2Flusher() {
  if (buffer_) KB_CUDA_WARN(cudaFree(buffer_));
}

}  // namespace kb
