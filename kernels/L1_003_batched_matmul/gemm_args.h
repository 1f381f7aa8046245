// The arguments of L1_003's GEMM kernels (custom.cu's mma.sync and wgmma kernels, fma_tile.cuh's
// FMA tile): C (batch, M, N) = A (batch, M, K) @ B (batch, K, N), fp32, row-major, dense, and the
// K range and split-K workspace of a launch. Passed by value to every launch.
#pragma once

namespace kb::custom::L1_003 {

struct GemmArgs {
  const float* a;  // (batch, M, K), already offset to this launch's first batch entry
  const float* b;  // (batch, K, N)
  float* c;        // (batch, M, N)
  int m, n, k;
  int tiles_n;  // N tiles of the launch's kernel: ceil(N / its tile width) (see each kernel)
  // Split-K (grids below two CTAs per SM): blockIdx.z = split s multiplies k in
  // [s k_split, (s + 1) k_split) into partials[s] (gridDim.y, M, N); k_count is that range's
  // length, set per CTA. One split: k_split = k, results straight into c.
  int k_split, k_count;
  float* partials;
  // The wgmma kernel's K range (custom.cu's kMaxChainK): k in [k_begin, k_begin + k_count);
  // accumulate: C += the range's product (the launches after the first).
  int k_begin;
  bool accumulate;
};

}  // namespace kb::custom::L1_003
