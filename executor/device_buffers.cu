#include <cstring>

#include "common/cuda/cuda_check.h"
#include "executor/device_buffers.cuh"

namespace kb {
namespace {

__global__ void fill_nan_kernel(float* data, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
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

__global__ void hash_kernel(const uint32_t* words, int64_t n, uint64_t salt,
                            unsigned long long* acc) {
  uint64_t local = 0;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    local += mix64((static_cast<uint64_t>(i) + salt) * 0x9e3779b97f4a7c15ull ^ words[i]);
  }
  for (int offset = 16; offset > 0; offset /= 2)
    local += __shfl_down_sync(0xffffffff, local, offset);
  if ((threadIdx.x & 31) == 0) atomicAdd(acc, static_cast<unsigned long long>(local));
}

// Accumulators of compare_kernel. Errors are >= 0 doubles, whose bit patterns order like the
// values, so atomicMax on the bits is a max on the values.
struct CompareAccumulators {
  unsigned long long max_abs_bits, max_rel_bits, mismatches, non_finite, first_mismatch;
};

__device__ void warp_fold(double& max_abs, double& max_rel, unsigned long long& mismatches,
                          unsigned long long& non_finite, unsigned long long& first) {
  for (int offset = 16; offset > 0; offset /= 2) {
    max_abs = fmax(max_abs, __shfl_down_sync(0xffffffff, max_abs, offset));
    max_rel = fmax(max_rel, __shfl_down_sync(0xffffffff, max_rel, offset));
    mismatches += __shfl_down_sync(0xffffffff, mismatches, offset);
    non_finite += __shfl_down_sync(0xffffffff, non_finite, offset);
    const unsigned long long other = __shfl_down_sync(0xffffffff, first, offset);
    first = other < first ? other : first;
  }
}

// The same rule as executor/verification.cpp's compare_outputs, element by element.
__global__ void compare_kernel(const float* reference, const float* custom, int64_t n, double atol,
                               double rtol, CompareAccumulators* acc) {
  double max_abs = 0, max_rel = 0;
  unsigned long long mismatches = 0, non_finite = 0, first = ~0ull;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const double r = reference[i], c = custom[i];
    bool bad;
    if (!isfinite(r)) {
      bad = !(isnan(r) ? isnan(c) : c == r);
    } else if (!isfinite(c)) {
      ++non_finite;
      bad = true;
    } else {
      const double abs_err = fabs(c - r);
      max_abs = fmax(max_abs, abs_err);
      if (r != 0) max_rel = fmax(max_rel, abs_err / fabs(r));
      bad = abs_err > atol + rtol * fabs(r);
    }
    if (bad) {
      ++mismatches;
      if (static_cast<unsigned long long>(i) < first) first = static_cast<unsigned long long>(i);
    }
  }
  warp_fold(max_abs, max_rel, mismatches, non_finite, first);
  if ((threadIdx.x & 31) == 0) {
    atomicMax(&acc->max_abs_bits, static_cast<unsigned long long>(__double_as_longlong(max_abs)));
    atomicMax(&acc->max_rel_bits, static_cast<unsigned long long>(__double_as_longlong(max_rel)));
    if (mismatches) atomicAdd(&acc->mismatches, mismatches);
    if (non_finite) atomicAdd(&acc->non_finite, non_finite);
    if (first != ~0ull) atomicMin(&acc->first_mismatch, first);
  }
}

unsigned grid_for(int64_t n) {
  return static_cast<unsigned>(std::min<int64_t>((n + 255) / 256, 4096));
}

}  // namespace

Status fill_nan(float* data, int64_t n, cudaStream_t stream) {
  if (n == 0) return Status::ok();
  fill_nan_kernel<<<grid_for(n), 256, 0, stream>>>(data, n);
  KB_CUDA_TRY(cudaGetLastError());
  return Status::ok();
}

Status hash_words_into(const uint32_t* words, int64_t n, uint64_t salt,
                       unsigned long long* accumulator, cudaStream_t stream) {
  if (n == 0) return Status::ok();
  hash_kernel<<<grid_for(n), 256, 0, stream>>>(words, n, salt, accumulator);
  KB_CUDA_TRY(cudaGetLastError());
  return Status::ok();
}

Status DeviceCompareScratch::allocate() {
  if (!data_) KB_CUDA_TRY(cudaMalloc(&data_, sizeof(CompareAccumulators)));
  return Status::ok();
}

DeviceCompareScratch::~DeviceCompareScratch() {
  if (data_) KB_CUDA_WARN(cudaFree(data_));
}

Result<ErrorStats> compare_on_device(const float* reference, const float* custom, int64_t n,
                                     double atol, double rtol, const DeviceCompareScratch& scratch,
                                     cudaStream_t stream) {
  auto* acc = static_cast<CompareAccumulators*>(scratch.data());
  const CompareAccumulators start{0, 0, 0, 0, ~0ull};
  KB_CUDA_TRY(cudaMemcpyAsync(acc, &start, sizeof start, cudaMemcpyHostToDevice, stream));
  if (n > 0) {
    compare_kernel<<<grid_for(n), 256, 0, stream>>>(reference, custom, n, atol, rtol, acc);
    KB_CUDA_TRY(cudaGetLastError());
  }
  CompareAccumulators host{};
  KB_CUDA_TRY(cudaMemcpyAsync(&host, acc, sizeof host, cudaMemcpyDeviceToHost, stream));
  KB_CUDA_TRY(cudaStreamSynchronize(stream));
  ErrorStats e;
  std::memcpy(&e.max_abs_error, &host.max_abs_bits, sizeof(double));
  std::memcpy(&e.max_rel_error, &host.max_rel_bits, sizeof(double));
  e.mismatches = static_cast<int64_t>(host.mismatches);
  e.non_finite = static_cast<int64_t>(host.non_finite);
  e.first_mismatch_index = host.mismatches ? static_cast<int64_t>(host.first_mismatch) : -1;
  return e;
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
