// L2_034's fallback for rows of more than 128 values (wide: W > 64, C_out = 2W > 128), which
// neither row_ln.cuh nor the FMA kernels take: the conv by the generic gather
// (kernels/cores/conv_transpose_gather/generic.cuh, launched by custom.cu) straight into the
// output, then row_norm_kernel, a warp per row, adds the bias and normalizes in place: mean, then
// the centred sum of squares (two passes, the row re-read from L1/L2), gamma/beta, gelu and scale.
//   y (the output): (N, C_out, 2D, 2H, 2W) fp32 NCDHW, as rows of 2W; bias (C_out); gamma, beta
//   (2W).
// Not fast: a fallback so that every C_out = 2W the model allows runs. H200 (session 11, `kb bench
// L2_034 --preset wide`): max |err| 2.3e-6, 0.094 ms against the reference's 0.081 (0.86x); the
// GPU tests' `wide` preset checks it against the golden model.
//
// Thread safety: device code without state; the launches are custom.cu's.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cores/block_reduce.cuh"
#include "kernels/cores/gelu.cuh"

namespace kb::custom::L2_034::wide {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;

struct Args {
  float* y;  // (rows, len): the conv's output, normalized in place
  const float* bias;
  const float* gamma;
  const float* beta;
  int64_t rows, rows_per_channel;  // rows = N C_out 2D 2H; channel co = row / rpc % C_out
  int len, c_out;                  // len = 2W
  float eps, scale;
};

__global__ void __launch_bounds__(kThreads) row_norm_kernel(const Args a) {
  const int lane = static_cast<int>(threadIdx.x) % 32;
  for (int64_t row = int64_t{blockIdx.x} * kWarps + threadIdx.x / 32; row < a.rows;
       row += int64_t{gridDim.x} * kWarps) {
    float* y = a.y + row * a.len;
    const float bias = __ldg(a.bias + row / a.rows_per_channel % a.c_out);
    float sum = 0.0f;
    for (int i = lane; i < a.len; i += 32) sum += y[i] + bias;
    const float mean = cores::warp_sum(sum) / static_cast<float>(a.len);
    float sq = 0.0f;
    for (int i = lane; i < a.len; i += 32) {
      const float d = y[i] + bias - mean;
      sq = fmaf(d, d, sq);
    }
    const float rstd = rsqrtf(cores::warp_sum(sq) / static_cast<float>(a.len) + a.eps);
    for (int i = lane; i < a.len; i += 32)
      y[i] = gelu_erf_fast((y[i] + bias - mean) * rstd * __ldg(a.gamma + i) + __ldg(a.beta + i)) *
             a.scale;
  }
}

}  // namespace kb::custom::L2_034::wide
