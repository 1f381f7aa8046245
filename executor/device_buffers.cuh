// Small device utilities of the executor: NaN poisoning, an input hash, an L2 flush.
//
// Thread safety: enqueue on the caller's stream.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "common/job_result.h"
#include "common/status.h"

namespace kb {

// Fills n floats with a quiet NaN.
Status fill_nan(float* data, int64_t n, cudaStream_t stream);

// Adds to *accumulator (device memory, one uint64) a position-dependent hash of n words:
// sum over i of mix(i, word_i) mod 2^64, so any change of any word changes the sum (with
// overwhelming probability) and the order of the additions does not matter.
Status hash_words_into(const uint32_t* words, int64_t n, uint64_t salt,
                       unsigned long long* accumulator, cudaStream_t stream);

// The custom output against the reference on the GPU, with exactly the rule and the statistics of
// verification.h's compare_outputs (in double, per element): max abs / rel error, mismatches,
// non-finite customs, the first mismatch's index. Order-independent reductions (max, min, sums of
// counts), so the result is deterministic. `scratch` is a DeviceCompareScratch::allocate()d
// buffer; the call synchronizes `stream` to read the result back.
class DeviceCompareScratch {
 public:
  Status allocate();
  ~DeviceCompareScratch();
  void* data() const { return data_; }

 private:
  void* data_ = nullptr;
};
Result<ErrorStats> compare_on_device(const float* reference, const float* custom, int64_t n,
                                     double atol, double rtol, const DeviceCompareScratch& scratch,
                                     cudaStream_t stream);

// Evicts the L2 cache by writing a buffer of twice its size (nvbench's method), and drops any
// persisting-L2 lines.
class L2Flusher {
 public:
  Status init(int device);
  Status flush(cudaStream_t stream);
  ~L2Flusher();

 private:
  void* buffer_ = nullptr;
  size_t bytes_ = 0;
  unsigned pass_ = 0;
};

}  // namespace kb
