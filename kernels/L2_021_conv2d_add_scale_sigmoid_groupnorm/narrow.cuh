// L2_021's conv for narrow images (custom.cu's design, "Narrow"): the 3x3 unit conv and the
// sigmoid where the FMA tile's warp-wide column groups would idle (Wo of a few columns), written
// pre-norm into `out`; the generic statistics, fold and normalize follow (custom.cu).
// Thread safety: stateless device code; plan_narrow is a pure host function.
//
// Task (sample n, band of output rows r0 .. r0 + rows - 1), one block of kThreads, one chunk of
// output-channel quads per blockIdx.y. Rows r0 .. r0 + rows + 1 of an input channel are one
// contiguous run of the sample's x, and the band of an output channel one contiguous run of its
// plane, so lanes over the band's flat pixels (not over columns padded to a warp) stay busy at
// any Wo and store coalesced.
//   x (band):  x_smem[c][r][j][kw] = x[n][c][r0 + r][j + kw], j < Wo: each staged pixel holds
//              its row's three taps, so a lane reads a row's taps at one address plus immediates
//              and lanes of consecutive pixels read words 3 apart (no bank conflicts).
//   weights:   w_smem[q][c][tap] float4 (the quad's 4 channels, zero past C_out): tap offsets are
//              immediates, the address warp-uniform (a broadcast) except where a warp's items
//              cross into the next quad.
//   item (q, pixel p), p fastest: 4 accumulators over C_in x 9 taps (per channel 9 + 9 shared
//              loads and a few adds per 36 FFMA), then g = activation(acc + conv bias, bias,
//              scale) per channel.
// The sums run in the generic kernels' order (c, kh, kw from 0, conv_at) and the sigmoid is
// generic_sigmoid's: g is bit for bit the generic kernel's, so that path's accuracy holds.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <optional>

#include "kernels/L2_021_conv2d_add_scale_sigmoid_groupnorm/activation.cuh"
#include "kernels/L2_021_conv2d_add_scale_sigmoid_groupnorm/fma_tile.cuh"
#include "kernels/L2_021_conv2d_add_scale_sigmoid_groupnorm/geometry.cuh"

namespace kb::custom::L2_021 {

constexpr int kTaps = 9;
constexpr int kTapCols = 3;                        // kw taps kept per staged pixel
constexpr int64_t kNarrowSmemBytes = 48 * 1024;    // no opt-in; several blocks per SM
constexpr int64_t kNarrowWeightBytes = 24 * 1024;  // a chunk's weights; the rest holds the band
constexpr int64_t kNarrowPixels = 256;    // band pixels per task at most: kThreads x a quad each
constexpr int64_t kNarrowTasksPerSm = 4;  // bands shrink (to 1 row) until there are this many
constexpr int kNarrowStageBatch = 4;      // input loads in flight per thread while staging

struct NarrowPlan {
  int rows;         // output rows per band (the last band of a sample has the rest)
  int bands;        // bands per sample
  int chunk_quads;  // quads per chunk (the last chunk has the rest)
  int chunks;       // gridDim.y
  size_t smem;      // dynamic shared memory of a block
};

// The narrow plan for a 3x3 unit conv, or nullopt where a chunk of one quad or a band of one row
// does not fit kNarrowSmemBytes (very deep or wide inputs: the generic kernel stays), or a size
// would not fit the kernel's int indices.
inline std::optional<NarrowPlan> plan_narrow(const Geometry& g, int sms) {
  const int64_t limit = int64_t{1} << 30;
  if (g.batch < 1 || g.ho < 1 || g.wo < 1 || g.c_in >= limit || g.c_out >= limit ||
      g.h * g.w >= 2 * limit) {
    return std::nullopt;
  }
  // A quad's weights and epilogue constants; one input row, kw-expanded.
  const int64_t quad_bytes = static_cast<int64_t>(sizeof(float4)) * (g.c_in * kTaps + 3);
  const int64_t chunk_quads = std::min(g.quads, kNarrowWeightBytes / quad_bytes);
  const int64_t chunks = chunk_quads < 1 ? 0 : (g.quads + chunk_quads - 1) / chunk_quads;
  if (chunk_quads < 1 || chunks > 65535) return std::nullopt;
  const int64_t row_bytes = static_cast<int64_t>(sizeof(float)) * kTapCols * g.c_in * g.wo;
  const int64_t fit_rows = (kNarrowSmemBytes - chunk_quads * quad_bytes) / row_bytes - 2;
  const int64_t spread_rows = std::max<int64_t>(1, g.batch * g.ho / (kNarrowTasksPerSm * sms));
  int64_t rows = std::min({(kNarrowPixels + g.wo - 1) / g.wo, spread_rows, fit_rows, g.ho});
  if (rows < 1) return std::nullopt;
  const int64_t bands = (g.ho + rows - 1) / rows;
  rows = (g.ho + bands - 1) / bands;  // even bands, no sliver at the end
  const int64_t smem = chunk_quads * quad_bytes + row_bytes * (rows + 2);
  return NarrowPlan{static_cast<int>(rows), static_cast<int>(bands), static_cast<int>(chunk_quads),
                    static_cast<int>(chunks), static_cast<size_t>(smem)};
}

// Weights and epilogue constants of quads q0 .. q0 + quads - 1 into w_smem [q][c][tap] and
// epi_smem [q][3] (conv bias, bias, scale), zero past C_out.
__device__ void stage_narrow_weights(const Buffers& b, const Geometry& g, int q0, int quads,
                                     float4* w_smem, float4* epi_smem) {
  const int per_quad = static_cast<int>(g.c_in) * kTaps;  // w[o] is (C_in, 3, 3): c * 9 + tap
  for (int e = threadIdx.x; e < quads * per_quad; e += kThreads) {
    const int q = e / per_quad, ct = e - q * per_quad;
    float v[kQuad];
#pragma unroll
    for (int r = 0; r < kQuad; ++r) {
      const int64_t o = int64_t{kQuad} * (q0 + q) + r;
      v[r] = o < g.c_out ? __ldg(b.w + o * per_quad + ct) : 0.0f;
    }
    w_smem[e] = make_float4(v[0], v[1], v[2], v[3]);
  }
  for (int e = threadIdx.x; e < 3 * quads; e += kThreads) {
    const int q = e / 3, which = e % 3;
    const float* src = which == 0 ? b.b_conv : which == 1 ? b.bias : b.scale;
    float v[kQuad];
#pragma unroll
    for (int r = 0; r < kQuad; ++r) {
      const int64_t o = int64_t{kQuad} * (q0 + q) + r;
      v[r] = o < g.c_out ? __ldg(src + o) : 0.0f;
    }
    epi_smem[e] = make_float4(v[0], v[1], v[2], v[3]);
  }
}

// Input rows r0 .. r0 + rows_in - 1 of sample n, all channels, into x_smem kw-expanded (above).
// Element e of the band is (channel e / run, offset e % run of that channel's contiguous run);
// e / W is then c rows_in + r, the staged row. kNarrowStageBatch loads are issued before their
// stores.
__device__ void stage_narrow_band(const Buffers& b, const Geometry& g, int64_t n, int r0,
                                  int rows_in, float* x_smem) {
  const int w = static_cast<int>(g.w), wo = static_cast<int>(g.wo);
  const int run = rows_in * w, total = static_cast<int>(g.c_in) * run;
  const float* x_n = b.x + (n * g.c_in * g.h + r0) * g.w;  // channel 0, row r0
  const int channel_pitch = static_cast<int>(g.h * g.w);   // < 2^31 (plan_narrow)
  for (int base = threadIdx.x; base < total; base += kThreads * kNarrowStageBatch) {
    float v[kNarrowStageBatch];
#pragma unroll
    for (int k = 0; k < kNarrowStageBatch; ++k) {
      const int e = base + k * kThreads, c = e / run;
      v[k] = e < total ? __ldg(x_n + (int64_t{c} * channel_pitch + (e - c * run))) : 0.0f;
    }
#pragma unroll
    for (int k = 0; k < kNarrowStageBatch; ++k) {
      const int e = base + k * kThreads, row = e / w, col = e - row * w;
#pragma unroll
      for (int kw = 0; kw < kTapCols; ++kw) {
        const int j = col - kw;  // the output column this value feeds through tap kw
        if (e < total && j >= 0 && j < wo) x_smem[(row * wo + j) * kTapCols + kw] = v[k];
      }
    }
  }
}

// The band's items (quad q, pixel p) of a staged band: conv, sigmoid, pre-norm store.
__device__ void narrow_band(const Buffers& b, const Geometry& g, const float4* w_smem,
                            const float4* epi_smem, const float* x_smem, int64_t n, int r0,
                            int rows, int q0, int quads) {
  const int wo = static_cast<int>(g.wo), c_in = static_cast<int>(g.c_in);
  const int pixels = rows * wo;
  const int channel_step = kTapCols * (rows + 2) * wo, row_step = kTapCols * wo;
  float* out_band = b.out + n * g.c_out * g.plane() + int64_t{r0} * wo;  // channel 0, row r0
  for (int item = threadIdx.x; item < quads * pixels; item += kThreads) {
    const int q = item / pixels, p = item - q * pixels;
    float acc[kQuad] = {};
    const float4* wp = w_smem + q * c_in * kTaps;
    const float* xp = x_smem + kTapCols * p;  // pixel p = (row i, column j): input row i, col j
    for (int c = 0; c < c_in; ++c, wp += kTaps, xp += channel_step) {
#pragma unroll
      for (int kh = 0; kh < 3; ++kh)
#pragma unroll
        for (int kw = 0; kw < kTapCols; ++kw) {
          const float v = xp[kh * row_step + kw];
          const float4 wq = wp[kh * 3 + kw];
#pragma unroll
          for (int r = 0; r < kQuad; ++r) acc[r] = fmaf(v, lane_of(wq, r), acc[r]);
        }
    }
    const float4 bc = epi_smem[3 * q], bi = epi_smem[3 * q + 1], sc = epi_smem[3 * q + 2];
    const int64_t o0 = int64_t{kQuad} * (q0 + q);
    float* dst = out_band + o0 * g.plane() + p;
#pragma unroll
    for (int r = 0; r < kQuad; ++r)
      if (o0 + r < g.c_out)
        dst[r * g.plane()] = activation(acc[r] + lane_of(bc, r), lane_of(bi, r), lane_of(sc, r));
  }
}

// Persistent over tasks (n, band) in grid-stride order; blockIdx.y picks the chunk of quads,
// whose weights are staged once. Dynamic shared memory: plan.smem bytes, w | epi | x.
__global__ void __launch_bounds__(kThreads)
    narrow_conv_kernel(Buffers b, Geometry g, NarrowPlan plan) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  const int q0 = static_cast<int>(blockIdx.y) * plan.chunk_quads;
  const int quads = min(plan.chunk_quads, static_cast<int>(g.quads) - q0);
  float4* w_smem = reinterpret_cast<float4*>(smem_raw);
  float4* epi_smem = w_smem + plan.chunk_quads * static_cast<int>(g.c_in) * kTaps;
  float* x_smem = reinterpret_cast<float*>(epi_smem + 3 * plan.chunk_quads);
  stage_narrow_weights(b, g, q0, quads, w_smem, epi_smem);  // ordered by the first barrier
  for (int64_t t = blockIdx.x; t < g.batch * plan.bands; t += gridDim.x) {
    const int64_t n = t / plan.bands;
    const int r0 = static_cast<int>(t % plan.bands) * plan.rows;
    const int rows = min(plan.rows, static_cast<int>(g.ho) - r0);
    stage_narrow_band(b, g, n, r0, rows + 2, x_smem);
    __syncthreads();
    narrow_band(b, g, w_smem, epi_smem, x_smem, n, r0, rows, q0, quads);
    __syncthreads();  // x_smem is restaged by the next task
  }
}

}  // namespace kb::custom::L2_021
