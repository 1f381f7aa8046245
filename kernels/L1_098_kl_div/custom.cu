// L1_098 custom: F.kl_div(log(predictions), targets, reduction='batchmean')
//   out: () = (1 / N) * sum_{n,d} q * (log q - log p),  p = predictions, q = targets, (N, D) fp32
//   row-major (full preset N = D = 16384; both are softmax rows); q == 0 contributes 0 (xlogy).
//
// Cost (full preset N = D = 16384, docs/problems.md#l1_098): 2 x 268M fp32 read once = 2.15 GB,
// 1.6 GFLOP (537M MUFU ops, ~0.13 ms, hidden). Floor 0.50 ms (memory). Reference 2.78 ms (all
// measurement files in docs/), best strict-fp32 peer 0.80 ms (torch.compile,
// docs/baselines.md), goal <= 0.67 ms (peer / 1.2).
//
// Design: one streaming pass and one tiny fixed-order combine, no atomics.
//  1. kl_partials_kernel: one block per ~16K elements (kElemsPerBlock); block b owns a contiguous,
//     balanced range of the float4s of both tensors (16-byte evict-first loads, kUnroll loads per
//     tensor in flight per thread). Per element q * log2(q / p) (MUFU rcp + lg2; ratio near 1, so
//     the abs error of the log is ~2^-22); q == 0 gives 0, like xlogy. fp32 sum over the
//     4 * kUnroll elements of one step, then a double per thread, then a fixed-order double tree
//     to one double per block. Elements that do not fill a float4 (n % 4, or all of them when a
//     pointer is not 16-byte aligned) take a scalar loop over the same balanced split: any shape
//     and alignment runs this design.
//  2. kl_finish_kernel: one block sums the block partials in a fixed order in double and writes
//     ln 2 * sum / N as the 0-d output. Deterministic (the grid depends on the shape only).
//
// Predicted on the H200: ~0.53 ms (2.15 GB at ~4.1 TB/s) + ~3 us for the combine launch.
// Measured: 0.554 ms (v1, docs/kernels.md ladder; 3.88 TB/s, 90% of the measured copy rate),
// 0.567 ms in the table of docs/kernels.md and in docs/bench-h200-2026-12-02b.json (1.14x the
// floor): under the 0.67 ms goal. v2 (session 9): a block per 16K elements instead of the
// persistent grid, 0.522 ms (4.1 TB/s, 1.05x the floor, 1.53x the peer).
//
// Accuracy: fast intrinsics per element (__fdividef, __log2f: MUFU rcp and lg2, relative error
// ~2^-22 each); q / p stays near 1 for these softmax inputs, so the log's absolute error is
// ~2^-22 and the term's q times that. The 268M-term sum is the danger (a naive sequential fp32
// sum is off by ~9.5e-3 and fails, docs/problems.md#l1_098): here fp32 covers only 16 terms,
// everything above is double in a fixed order, so the sum adds ~nothing. Measured max |err|
// 4.5e-8 (2026-11-30) and 4.8e-8 (bench 2026-12-02b) on the ~0.073 result vs ~1.07e-4 allowed.
// Robustness trials: none apply (the spec skips shift, scale and centered: the inputs are
// probabilities; no ones/zeros parameters for random_affine). There are no statistics to
// cancel; the fast log on ratios far from 1 is not measured separately.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "common/cuda/cuda_check.h"
#include "kernels/cores/block_reduce.cuh"
#include "kernels/implementation.h"

namespace kb::custom::L1_098 {

constexpr int kThreads = 256;
constexpr int kUnroll = 4;  // float4 loads per tensor in flight per thread
// Elements per block: four unrolled steps per thread. The grid is every such chunk at once, not
// a persistent grid of the resident blocks: shorter ranges leave a shorter tail (H200, full
// preset: 0.567 ms with the 1,056 resident blocks, 0.543 with 4x, 0.528 with 8x, 0.522 ms with
// 16,384 blocks of 16,384 elements, 4.1 TB/s).
constexpr int64_t kElemsPerBlock = int64_t{kThreads} * 4 * kUnroll * 4;
constexpr int64_t kMaxBlocks = 0x7fffffff;
constexpr int kFinishThreads = 256;
constexpr double kLn2 = 0.69314718055994530942;

// log2(q / p) scaled by q; the caller multiplies the total by ln 2. q == 0 contributes 0.
__device__ __forceinline__ float kl_term_log2(float p, float q) {
  const float t = q * __log2f(__fdividef(q, p));
  return q == 0.0f ? 0.0f : t;
}

__device__ __forceinline__ float kl_terms4(const float4& p, const float4& q) {
  return (kl_term_log2(p.x, q.x) + kl_term_log2(p.y, q.y)) +
         (kl_term_log2(p.z, q.z) + kl_term_log2(p.w, q.w));
}

// [lo, hi) = this block's share of `count` items split evenly over the grid.
__device__ __forceinline__ void block_range(int64_t count, int64_t& lo, int64_t& hi) {
  lo = count * blockIdx.x / gridDim.x;
  hi = count * (blockIdx.x + 1) / gridDim.x;
}

// Sum of the terms over this thread's float4s in [lo, hi) of p4 / q4.
__device__ double vector_share(const float4* p4, const float4* q4, int64_t lo, int64_t hi) {
  double acc = 0.0;
  int64_t i = lo + threadIdx.x;
  for (; i + (kUnroll - 1) * kThreads < hi; i += kUnroll * kThreads) {
    float4 p[kUnroll], q[kUnroll];
#pragma unroll
    for (int k = 0; k < kUnroll; ++k) {
      p[k] = __ldcs(p4 + i + k * kThreads);
      q[k] = __ldcs(q4 + i + k * kThreads);
    }
    float step = 0.0f;  // 4 * kUnroll terms in fp32, then into the double
#pragma unroll
    for (int k = 0; k < kUnroll; ++k) step += kl_terms4(p[k], q[k]);
    acc += static_cast<double>(step);
  }
  for (; i < hi; i += kThreads)
    acc += static_cast<double>(kl_terms4(__ldcs(p4 + i), __ldcs(q4 + i)));
  return acc;
}

// partials[block] = sum over the block's share of q * log2(q / p).
// p, q: n floats each; the first n_vec4 float4s go through the vector path, the rest scalar.
__global__ void __launch_bounds__(kThreads)
    kl_partials_kernel(const float* __restrict__ p, const float* __restrict__ q, int64_t n,
                       int64_t n_vec4, double* __restrict__ partials) {
  int64_t lo = 0, hi = 0;
  block_range(n_vec4, lo, hi);
  double acc =
      vector_share(reinterpret_cast<const float4*>(p), reinterpret_cast<const float4*>(q), lo, hi);
  const int64_t scalar_begin = 4 * n_vec4;
  block_range(n - scalar_begin, lo, hi);
  for (int64_t i = scalar_begin + lo + threadIdx.x; i < scalar_begin + hi; i += kThreads)
    acc += static_cast<double>(kl_term_log2(p[i], q[i]));
  // The block's sum in thread 0; the warp totals folded by a second butterfly in warp 0.
  const double block_total = cores::block_sum<kThreads, cores::Fold::kWarp>(acc);
  if (threadIdx.x == 0) partials[blockIdx.x] = block_total;
}

// out[0] = ln 2 * sum(partials) / rows, summed in a fixed order.
__global__ void __launch_bounds__(kFinishThreads)
    kl_finish_kernel(const double* __restrict__ partials, int count, double rows,
                     float* __restrict__ out) {
  double acc = 0.0;
  for (int i = threadIdx.x; i < count; i += kFinishThreads) acc += partials[i];
  const double total = cores::block_sum<kFinishThreads, cores::Fold::kWarp>(acc);
  if (threadIdx.x == 0) out[0] = static_cast<float>(total * kLn2 / rows);
}

class KlDivBatchmean final : public Implementation {
 public:
  ~KlDivBatchmean() override { KB_CUDA_WARN(cudaFree(partials_)); }

  Status setup(const ProblemInstance& problem, cudaStream_t) override {
    predictions_ = input_index(problem, "predictions");
    targets_ = input_index(problem, "targets");
    const Shape& shape = problem.shape_of("predictions");  // (N, D)
    if (shape.empty() || shape != problem.shape_of("targets"))
      return Status::failed_precondition("L1_098 custom: predictions and targets must match");
    rows_ = static_cast<double>(shape[0]);
    numel_ = element_count(shape);
    const int64_t wanted = (numel_ + kElemsPerBlock - 1) / kElemsPerBlock;
    blocks_ = static_cast<int>(std::clamp<int64_t>(wanted, 1, kMaxBlocks));
    KB_CUDA_TRY(cudaMalloc(&partials_, blocks_ * sizeof(double)));
    return Status::ok();
  }

  Status run(const ImplArgs& args, cudaStream_t stream) override {
    const float* p = args.inputs[predictions_].data;  // (N, D)
    const float* q = args.inputs[targets_].data;      // (N, D)
    const bool aligned =
        reinterpret_cast<uintptr_t>(p) % 16 == 0 && reinterpret_cast<uintptr_t>(q) % 16 == 0;
    const int64_t n_vec4 = aligned ? numel_ / 4 : 0;
    kl_partials_kernel<<<blocks_, kThreads, 0, stream>>>(p, q, numel_, n_vec4, partials_);
    KB_CUDA_TRY(cudaGetLastError());
    // out: () = the 0-d loss
    kl_finish_kernel<<<1, kFinishThreads, 0, stream>>>(partials_, blocks_, rows_, args.output.data);
    KB_CUDA_TRY(cudaGetLastError());
    return Status::ok();
  }

 private:
  size_t predictions_ = 0, targets_ = 0;
  double rows_ = 1.0;
  int64_t numel_ = 0;
  int blocks_ = 1;
  double* partials_ = nullptr;  // [blocks_] block sums; owned, freed by the destructor
};

}  // namespace kb::custom::L1_098

KB_REGISTER_IMPLEMENTATION(L1_098, custom, kb::custom::L1_098::KlDivBatchmean)
