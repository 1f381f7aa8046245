// Launch and shape-check helpers shared by eager_ops.cu and eager_norm_ops.cu (internal: included
// by those two files only). Host code; stateless.
#pragma once

#include <algorithm>
#include <string>

#include "common/cuda/cuda_check.h"
#include "kernels/eager/eager_kernels.cuh"
#include "kernels/eager/eager_ops.h"

namespace kb::eager {

// ---- Launch helpers ----

constexpr int64_t kMaxGridBlocks = int64_t{1} << 20;

inline unsigned grid_for(int64_t n, int threads = kThreads) {
  return static_cast<unsigned>(std::clamp<int64_t>((n + threads - 1) / threads, 1, kMaxGridBlocks));
}

// Blocks for legacy_elementwise over n outputs: one per tile, as ATen launches them.
inline unsigned legacy_grid(int64_t n) {
  return static_cast<unsigned>(
      std::clamp<int64_t>((n + kLegacyTile - 1) / kLegacyTile, 1, int64_t{INT32_MAX}));
}

inline bool fits_32(int64_t n) {
  return n < (int64_t{1} << 31);
}

// The launch status of the kernel just enqueued (bad configuration, no device, ...).
inline Status launched(const char* kernel) {
  return cuda_status(cudaGetLastError(), kernel, __FILE__, __LINE__);
}

inline std::string shape_str(const DeviceTensor& t) {
  return shape_to_string(t.shape);
}

inline Status shape_error(const char* op, const std::string& message) {
  return Status::invalid_argument(std::string("eager::") + op + ": " + message);
}

inline int64_t product(const Shape& s, size_t first, size_t last) {
  int64_t n = 1;
  for (size_t d = first; d < last; ++d) n *= s[d];
  return n;
}

inline Status check_same_shape(const char* op, const DeviceTensor& x, const DeviceTensor& out,
                               size_t min_rank) {
  if (x.shape != out.shape || x.shape.size() < min_rank) {
    return shape_error(op, "x " + shape_str(x) + " and out " + shape_str(out) +
                               " must have the same shape of rank >= " + std::to_string(min_rank));
  }
  return Status::ok();
}

}  // namespace kb::eager
