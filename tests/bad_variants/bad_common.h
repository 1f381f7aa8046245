// The shared pieces of the bad-variant test pack (kbpack_bad_variants, see CMakeLists.txt here).
//
// Every bad custom variant of the pack computes its numbers with the problem's own reference,
// taken from this pack's registry, so that the one trick it plays is the only thing wrong with it
// (and a test that sees the expected status knows the trick was caught, not a slip in the math).
// The data it moves goes through small kernels of its own, in namespace kb::bad, which the
// executor's launch tracer counts as "own" kernels (their mangled names start with _ZN2kb).
//
// HonestWork adds a ballast kernel of our own after the reference, so that most of the call's GPU
// time is ours: the launch accounting then sees an own-kernel custom (never library_dominated),
// and a bad variant built on it is caught for its trick alone. The controls honest_ballast and
// own_kl_div show that HonestWork, and a kernel of our own, pass.
//
// Ownership: DeviceScratch owns its device memory; make_reference hands over the Implementation.
// Thread safety: one thread at a time, like an Implementation.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

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

// A non-blocking stream of the variant's own: synchronized and destroyed with it.
class PrivateStream {
 public:
  PrivateStream() = default;
  ~PrivateStream();
  PrivateStream(const PrivateStream&) = delete;
  PrivateStream& operator=(const PrivateStream&) = delete;

  Status create();
  cudaStream_t get() const { return stream_; }

 private:
  cudaStream_t stream_ = nullptr;
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

// The "after the trials" tricks switch on at this call: the executor's correctness trials (3 in
// tests/gpu, up to 5 with robustness trials in the fleet) all come before it, warm-up and timing
// after it.
constexpr int kUntimedCalls = 16;

// Spins one warp on the GPU's global timer for `ns` nanoseconds: GPU time of our own that does
// nothing.
Status ballast(int64_t ns, cudaStream_t stream);

// dst[i] = value for i < n, by a kernel of our own.
Status fill(float* dst, int64_t n, float value, cudaStream_t stream);

// The reference's work followed by ballast ~3x as long as the reference (measured once in setup on
// zero-filled tensors), all on the job stream.
class HonestWork {
 public:
  Status setup(const ProblemInstance& p, cudaStream_t stream);
  Status run(const ImplArgs& args, cudaStream_t stream);
  int64_t ballast_ns() const { return ballast_ns_; }

 private:
  std::unique_ptr<Implementation> reference_;
  int64_t ballast_ns_ = 0;
};

// A copy of one call's tensors that outlives the call (ImplArgs' spans point into the caller's
// frame), for work that a variant does later.
struct OwnedArgs {
  std::vector<DeviceTensor> inputs, params;
  DeviceTensor output;

  static OwnedArgs of(const ImplArgs& args);
  ImplArgs view() const { return {inputs, params, output}; }
};

// The bases of the device allocations of exactly `bytes` found within 256 MiB of `near` (by
// cuMemGetAddressRange, reached through the runtime's driver entry points), leaving out the bases
// in `exclude`; sorted by address. This is how a variant finds buffers of the executor that it was
// never given, e.g. the reference's output: the reference and the custom share one process.
Status find_allocations_of_size(const void* near, size_t bytes, std::span<const void* const> exclude,
                                std::vector<float*>& found);

}  // namespace kb::bad
