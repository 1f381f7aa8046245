// The one CUDA error check of kbfleet's host code. Every CUDA runtime call goes through
// KB_CUDA_TRY (inside a function returning kb::Status: returns a Status naming the expression,
// file, line and CUDA's message) or KB_CUDA_WARN (destructors and cleanup: logs and goes on).
//
// Thread safety: stateless macros.
#pragma once

#include <cuda_runtime.h>

#include <cstdio>
#include <string>

#include "common/status.h"

namespace kb {

inline Status cuda_status(cudaError_t err, const char* expr, const char* file, int line) {
  if (err == cudaSuccess) return Status::ok();
  return Status::internal(std::string(expr) + " failed at " + file + ":" + std::to_string(line) +
                          ": " + cudaGetErrorName(err) + ": " + cudaGetErrorString(err));
}

}  // namespace kb

#define KB_CUDA_TRY(expr)                                                                \
  do {                                                                                   \
    ::kb::Status kb_cuda_status_ = ::kb::cuda_status((expr), #expr, __FILE__, __LINE__); \
    if (!kb_cuda_status_.is_ok()) return kb_cuda_status_;                                \
  } while (0)

#define KB_CUDA_WARN(expr)                                                               \
  do {                                                                                   \
    ::kb::Status kb_cuda_status_ = ::kb::cuda_status((expr), #expr, __FILE__, __LINE__); \
    if (!kb_cuda_status_.is_ok())                                                        \
      std::fprintf(stderr, "kbfleet: %s\n", kb_cuda_status_.message().c_str());          \
  } while (0)
