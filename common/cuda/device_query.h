// Attributes of the current CUDA device, asked one way everywhere: launch sizing in the custom
// kernels (SM count, resident blocks, the opt-in shared-memory limit).
//
// Thread safety: stateless; each call asks the runtime for the calling thread's current device.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "common/cuda/cuda_check.h"
#include "common/status.h"

namespace kb::cuda {

// `attr` of the current device.
inline Result<int> device_attribute(cudaDeviceAttr attr) {
  int device = 0, value = 0;
  KB_CUDA_TRY(cudaGetDevice(&device));
  KB_CUDA_TRY(cudaDeviceGetAttribute(&value, attr, device));
  return value;
}

// Streaming multiprocessors of the current device (132 on the H200).
inline Result<int> sm_count() {
  return device_attribute(cudaDevAttrMultiProcessorCount);
}

// Blocks of `kernel` (launched with `threads` threads and `smem` bytes of dynamic shared memory)
// that are resident on the whole device at once: SMs x blocks per SM, at least one per SM.
inline Result<int64_t> resident_blocks(const void* kernel, int threads, size_t smem) {
  KB_ASSIGN_OR_RETURN(const int sms, sm_count());
  int per_sm = 0;
  KB_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, smem));
  return int64_t{sms} * std::max(per_sm, 1);
}

}  // namespace kb::cuda
