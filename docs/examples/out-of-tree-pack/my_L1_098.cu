// L1_098, an out-of-tree custom: F.kl_div(log(predictions), targets, reduction='batchmean')
//   out: () fp32 = (1 / N) * sum_{n,d} q * (log q - log p);  p = predictions, q = targets: (N, D)
//   fp32, row-major, softmax rows (every value > 0).
//
// Cost at the full preset (N = D = 16384): both tensors read once, 2 x 1.07 GB; memory-bound.
//
// Design: the simplest correct two-pass reduction, as a starting point to measure against.
//  1. kl_block_sums: a grid-stride loop per thread, the terms summed in double (268M terms: a
//     float running sum would drift past the 1e-4 tolerance), then a shared-memory tree to one
//     double per block.
//  2. kl_finish: one block adds the block sums in a fixed order and writes sum / N.
// Deterministic for a given grid. Kernels live in namespace kb: the fleet's launch tracer counts
// kernels of that namespace as the custom's own (a custom must spend its time in its own kernels).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "common/cuda/cuda_check.h"
#include "kernels/implementation.h"

namespace kb::my_kernels {

constexpr int kThreads = 256;  // per block, both kernels (a power of two for the tree)
constexpr int kMaxBlocks = 1024;
static_assert((kThreads & (kThreads - 1)) == 0, "the block tree halves kThreads");

__device__ double block_sum(double value, double* partial_smem) {
  partial_smem[threadIdx.x] = value;
  __syncthreads();
  for (int half = kThreads / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) partial_smem[threadIdx.x] += partial_smem[threadIdx.x + half];
    __syncthreads();
  }
  return partial_smem[0];
}

// block_sums_gmem: (gridDim.x,) double
__global__ void __launch_bounds__(kThreads)
    kl_block_sums(const float* __restrict__ p_gmem, const float* __restrict__ q_gmem, int64_t count,
                  double* block_sums_gmem) {
  __shared__ double partial_smem[kThreads];
  double sum = 0;
  const int64_t stride = int64_t{gridDim.x} * kThreads;
  for (int64_t i = int64_t{blockIdx.x} * kThreads + threadIdx.x; i < count; i += stride) {
    const float q = q_gmem[i];
    sum += q > 0 ? double(q) * double(logf(q) - logf(p_gmem[i])) : 0.0;  // xlogy: 0 log 0 = 0
  }
  const double total = block_sum(sum, partial_smem);
  if (threadIdx.x == 0) block_sums_gmem[blockIdx.x] = total;
}

__global__ void __launch_bounds__(kThreads)
    kl_finish(const double* block_sums_gmem, int blocks, double rows, float* out_gmem) {
  __shared__ double partial_smem[kThreads];
  double sum = 0;
  for (int b = threadIdx.x; b < blocks; b += kThreads) sum += block_sums_gmem[b];
  const double total = block_sum(sum, partial_smem);
  if (threadIdx.x == 0) out_gmem[0] = static_cast<float>(total / rows);
}

class KlDivCustom final : public Implementation {
 public:
  ~KlDivCustom() override { KB_CUDA_WARN(cudaFree(block_sums_gmem_)); }

  Status setup(const ProblemInstance& problem, cudaStream_t /*stream*/) override {
    problem_ = &problem;
    const int64_t count = element_count(problem.input_shapes().at(input_index(problem, "targets")));
    blocks_ = static_cast<int>(std::min<int64_t>(kMaxBlocks, (count + kThreads - 1) / kThreads));
    blocks_ = blocks_ < 1 ? 1 : blocks_;
    KB_CUDA_TRY(cudaMalloc(&block_sums_gmem_, sizeof(double) * blocks_));
    return Status::ok();
  }

  Status run(const ImplArgs& args, cudaStream_t stream) override {
    const DeviceTensor& p = args.inputs[input_index(*problem_, "predictions")];
    const DeviceTensor& q = args.inputs[input_index(*problem_, "targets")];
    kl_block_sums<<<blocks_, kThreads, 0, stream>>>(p.data, q.data, p.numel(), block_sums_gmem_);
    KB_CUDA_TRY(cudaGetLastError());
    kl_finish<<<1, kThreads, 0, stream>>>(block_sums_gmem_, blocks_,
                                          static_cast<double>(p.shape.at(0)), args.output.data);
    return cuda_status(cudaGetLastError(), "kl_finish", __FILE__, __LINE__);
  }

 private:
  const ProblemInstance* problem_ = nullptr;
  int blocks_ = 1;
  double* block_sums_gmem_ = nullptr;
};

}  // namespace kb::my_kernels

KB_REGISTER_IMPLEMENTATION(L1_098, custom, kb::my_kernels::KlDivCustom)
