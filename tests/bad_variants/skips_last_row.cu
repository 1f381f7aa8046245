// Bad variant (b), L2_001: computes the right output into a scratch buffer, then copies it out
// with an off-by-one bound that skips the last row of every (n, c) plane, so those elements keep
// the executor's NaN poison. Expected verdict: non_finite (executor/verification.cpp: a NaN where
// the reference is finite is counted as non-finite, and verdict_of() puts non_finite before
// mismatch); N * C_out * W_out elements are wrong, the first at index (H_out - 1) * W_out.
#include <cuda_runtime.h>

#include <memory>

#include "common/cuda/cuda_check.h"
#include "kernels/implementation.h"
#include "tests/bad_variants/bad_common.h"

namespace kb::bad::skips_last_row {

// src, dst: (planes, rows, cols); rows - 1 of each plane copied.
__global__ void copy_but_last_row(const float* __restrict__ src, float* __restrict__ dst,
                                  int64_t planes, int64_t rows, int64_t cols) {
  const int64_t n = planes * rows * cols;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t row = (i / cols) % rows;
    if (row < rows - 1) dst[i] = src[i];  // the bug: should be row < rows
  }
}

class SkipsLastRow final : public Implementation {
 public:
  Status setup(const ProblemInstance& p, cudaStream_t stream) override {
    const Shape& out = p.output_shape();  // (N, C_out, H_out, W_out)
    planes_ = out[0] * out[1];
    rows_ = out[2];
    cols_ = out[3];
    KB_TRY(scratch_.allocate(element_count(out)));
    return make_reference(p, stream, reference_);
  }

  Status run(const ImplArgs& args, cudaStream_t stream) override {
    ImplArgs into_scratch = args;
    into_scratch.output.data = scratch_.data();
    KB_TRY(reference_->run(into_scratch, stream));
    copy_but_last_row<<<blocks_for(scratch_.count()), kThreads, 0, stream>>>(
        scratch_.data(), args.output.data, planes_, rows_, cols_);
    KB_CUDA_TRY(cudaGetLastError());
    return Status::ok();
  }

 private:
  std::unique_ptr<Implementation> reference_;
  DeviceScratch scratch_;
  int64_t planes_ = 0, rows_ = 0, cols_ = 0;
};

}  // namespace kb::bad::skips_last_row

KB_REGISTER_IMPLEMENTATION(L2_001, custom, kb::bad::skips_last_row::SkipsLastRow)
