// The shared pieces of the bad-variant test pack (kbpack_bad_variants, see CMakeLists.txt here).
//
// Every bad custom variant of the pack computes its numbers with the problem's own reference,
// taken from this pack's registry, so that the one trick it plays is the only thing wrong with it
// (and a test that sees the expected status knows the trick was caught, not a slip in the math).
// The data it moves goes through small kernels of its own, in namespace kb::bad, which the
// executor's launch tracer counts as "own" kernels (their mangled names start with _ZN2kb).
//
// Ownership: DeviceScratch owns its device memory; make_reference hands over the Implementation.
// Thread safety: one thread at a time, like an Implementation.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <memory>

#include "common/problem_spec.h"
#include "common/status.h"
#include "kernels/implementation.h"

namespace kb::bad {

// `problem`'s reference from this pack's registry, planned on `stream`, into `out`.
Status make_reference(const ProblemInstance& problem, cudaStream_t stream,
                      std::unique_ptr<Implementation>& out);

// An owned fp32 buffer in device memory.
class DeviceScratch {
 public:
  DeviceScratch() = default;
  ~DeviceScratch();
  DeviceScratch(const DeviceScratch&) = delete;
  DeviceScratch& operator=(const DeviceScratch&) = delete;

  Status allocate(int64_t count);
  float* data() const { return data_; }
  int64_t count() const { return count_; }

 private:
  float* data_ = nullptr;
  int64_t count_ = 0;
};

// dst[i] = src[i] for i < n, by a kernel of our own on `stream` (not a cudaMemcpy, which the
// tracer would not count as our kernel).
Status copy(const float* src, float* dst, int64_t n, cudaStream_t stream);

// Launch shape of the pack's grid-stride kernels.
constexpr int kThreads = 256;
inline unsigned blocks_for(int64_t n) {
  const int64_t b = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(b < 1 ? 1 : (b > 4096 ? 4096 : b));
}

}  // namespace kb::bad
