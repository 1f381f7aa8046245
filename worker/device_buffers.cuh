// Small device utilities of the executor: NaN poisoning, an input hash, an L2 flush.
//
// Thread safety: enqueue on the caller's stream.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "common/status.h"

namespace kb {

// Fills n floats with a quiet NaN.
Status fill_nan(float* data, int64_t n, cudaStream_t stream);

// Adds to *accumulator (device memory, one uint64) a position-dependent hash of n words:
// sum over i of mix(i, word_i) mod 2^64, so any change of any word changes the sum (with
// overwhelming probability) and the order of the additions does not matter.
Status hash_words_into(const uint32_t* words, int64_t n, uint64_t salt, unsigned long long* accumulator,
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
