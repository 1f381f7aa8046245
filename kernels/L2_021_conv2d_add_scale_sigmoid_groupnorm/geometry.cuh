// L2_021's shared definitions: the block size, the conv's geometry (with the FMA tile's tiling)
// and the tensors of one call, used by every path of custom.cu (its header has the design).
// Thread safety: plain data.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace kb::custom::L2_021 {

constexpr int kThreads = 256;
constexpr int kWarp = 32;
constexpr int kTileRows = 2;  // output rows per S task
constexpr int kInRows = kTileRows + 2;
constexpr int kCols = 8;  // output columns per thread
constexpr int kQuad = 4;  // output channels per thread
static_assert(kThreads % kWarp == 0, "whole warps");

struct Geometry {
  int64_t batch, c_in, c_out, h, w, ho, wo;
  int64_t groups, cpg;
  int64_t quads, col_groups, col_groups_pad, row_pad;  // fast path tiling
  int64_t s_tasks;                                     // conv tasks per sample
  int64_t parts, part_len;                             // N tasks: parts of a channel plane
  float eps;
  __host__ __device__ int64_t plane() const { return ho * wo; }
};

struct Buffers {
  const float* x;       // (N, C_in, H, W)
  const float* w;       // (C_out, C_in, 3, 3)
  const float* b_conv;  // (C_out)
  const float* bias;    // (C_out, 1, 1)
  const float* scale;   // (C_out, 1, 1)
  const float* gamma;   // (C_out)
  const float* beta;    // (C_out)
  float* out;           // (N, C_out, H - 2, W - 2): sigmoid output, then normalized in place
  double2* partials;    // [N][s_tasks or parts][groups] (sum g, sum g^2) of each statistics task
  float2* coef;         // [N][C_out] (scale, shift)
};

}  // namespace kb::custom::L2_021
