// L2_021 custom: GroupNorm(sigmoid((conv2d(x) + conv.bias + bias[c]) * scale[c])).
//   x: (N, C_in, H, W), w: (C_out, C_in, 3, 3), conv.bias, gamma, beta: (C_out), bias, scale:
//   (C_out, 1, 1); out: (N, C_out, H - 2, W - 2), fp32 NCHW (full preset: x (128, 8, 256, 256)
//   -> out (128, 32, 254, 254), GroupNorm(8, 32), eps 1e-5). With g the sigmoid output, per
//   (n, group of C_out / G channels): out = (g - mean) / sqrt(var + eps) gamma[c] + beta[c],
//   mean and biased var over the group's channels x (H - 2) x (W - 2) values.
//
// Cost (full preset, docs/problems.md#l2_021): 19.0 G MAC -> t_fp32 0.57 ms (strict FFMA); x
// 268 MB + out 1.06 GB -> t_mem 0.31 ms. Floor 0.62 ms. Reference 6.7-6.8 ms, best strict-fp32
// peer 3.55 ms (torch.compile, docs/baselines.md), goal <= 1.00 ms (1.6 x the floor).
//
// Design. On Hopper, where the conv fits it (3x3 unit conv, C_in <= 8, 16 < C_out <= 32, W' >=
// 96: the full preset), the wgmma path (wgmma_rows.cuh) computes the conv twice on the tensor
// cores: a statistics pass, the fold, and a store pass that writes the normalized output once;
// the second conv costs less than the pre-norm tensor's DRAM round trip. Elsewhere the conv is
// computed once and its output re-read: a second pass of the FMA or mma.sync kernels (~0.6 ms
// at the full preset) would cost more than the round trip. Those are three launches
// (kernels/cores/group_norm_pipeline/pipeline.cuh): conv_kernel writes the sigmoid output into
// `out` and per-task group sums to its own partials slot; a one-warp-per-(n, group) fold makes
// coef[n][o]; normalize_flat_kernel rescales `out` in place as float4s, persistent blocks, last
// float4 first (the last samples are still in L2 when the conv launch ends); normalize_kernel
// (tasks of 16 K elements) where the plane or `out` is not 16-byte aligned. The conv launch is one
// of two kernels:
//  - tensor path (3x3 unit conv, C_out >= 16, W' >= 48, not on the wgmma path): the conv3d
//    3xTF32 tile (kernels/cores/conv3d_direct/tf32x3_tile.cuh, D = 1, 32-channel blocks) with
//    TensorEpilogue, which stores g and writes per-(n, row, column tile, channel) sums; the fold
//    reads them with width cpg. 3xTF32 is ~fp32 per product (that header); the sums and sigmoid
//    are as below.
//  - FMA tile (other unit convs that keep 1/16 of a block busy): conv_kernel, S tasks below.
// S task (n, two output rows): stage 4 input rows of all C_in channels (16-byte loads, all issued
// before the first store, when W % 4 == 0) and the weights in shared memory; each thread computes
// 2 rows x 4 channels x 8 columns (64 FFMA accumulators, 30 shared loads per 576 FFMA), then t =
// (acc + bias) * scale, g = 1 / (1 + expf(-t)), written with 8-byte stores; per-channel sums of
// g - pilot and (g - pilot)^2 (fp32 per thread and warp, pilot = a warp-uniform value of the
// channel), turned into raw sums in double once per warp (shared atomics), go to
// partials[n][task][group]. The conv bias starts the accumulator: the same math, one rounding of
// a different order (|err| ~1e-7, ~15x after GroupNorm: << 1e-4). N task (n, channel, part of
// the plane): (g - mean) * rstd * gamma + beta, float4 when aligned.
// Fallback: other geometries (kernel != 3x3, stride/padding/dilation, too wide for shared
// memory, or too narrow to keep 1/16 of a block busy) run group_kernel when a group, its
// sample's input and weights fit in 48 KB of shared memory (one launch, a block per (n, group)),
// else the generic kernels: one thread per output element, parallel statistics (pipeline.cuh),
// in place.
//
// Predicted / measured (H200, full preset): see the ladder; v2 (this code) predicted 1.3-1.45 ms,
// measured 2.40 ms (docs/kernels.md) and 2.433 ms in docs/bench-h200-2026-12-02b.json (17
// TFLOP/s, 3.9x the floor, 2.4x the goal): the pre-norm tensor makes a DRAM round trip (2.1 GB)
// and the conv runs at 17 TFLOP/s.
//
// Accuracy. Error sources: the fp32 FMA conv (no TF32: it fails 7.5x here), the sigmoid rounded
// as the reference rounds it (fp32 add, mul, accurate expf, IEEE division; the ex2/rcp pair with
// -log2(e) folded into the scale cost 4x the tolerance on the odd fixture's one-channel groups,
// v1), the group statistics, and the normalize (v * scale + shift in fp32, coefficients from
// double). GroupNorm divides the upstream error by the group std, as small as 0.067 here (~15x,
// docs/problems.md#l2_021). The pilot (__expf, __fdividef) is only the shift point: the sums
// about it are exact in form.
// Accuracy of the statistics: fp32 sums of g and g^2 (before) lose 2 log10(mean/std) digits, all
// of them when the sigmoid saturates (inputs in [100, 101): g ~ 1, std << 1). About a pilot
// near the data the fp32 sums carry only their own rounding (~1e-7 of n std^2), and the raw
// sums rebuilt in double (sum g = s1 + n p, sum g^2 = s2 + 2 p s1 + n p^2) lose those digits in
// double instead. Where the group std is far below sqrt(eps) (saturated groups) the fp32 sigmoid
// itself (1 - g rounded) dominates, for the reference as much: tests/gpu/robustness_test.cu
// measures both against the golden model.
// Measured max |err| 3.9e-5 (2026-11-30) and 9.1e-6 (bench 2026-12-02b) vs 1e-4 + 1e-4 |r|
// allowed. Robustness trials (small preset, seed 7, vs the golden model; C_out 16 x Wo 17 keeps
// < 1/4 of a block busy, so the generic path ran): shift (x + 100) 0.024x the tolerance
// (reference 0.024x), scale (x 1000) 0.080x (0.081x), centered 0.032x (0.044x), random_affine
// (gamma, beta) 0.049x (0.043x). On the tensor path (the robust preset, N 2 x 8 -> 32 x 11 x 71,
// kernelbench22 in docs/bench-h200-2026-12-02-s8.json): shift 0.057x (0.042x), centered 0.030x
// (0.030x), random_affine 0.024x (0.015x), and scale 1.35x (0.69x): `marginal`, the MMA's
// truncating accumulation at the magnitude of the cancelling partial sums (tf32x3_tile.cuh),
// divided by a small group std. The FMA tile matched the reference there (0.685x).
//
// Ladder (H200, full preset; fp32 floor 0.62 ms):
//   v1 one-launch ticket pipeline, S (conv) and N (normalize) tasks interleaved, lag 3 phases
//      predicted 0.75-0.9 ms -> measured 2.862. Why, from the code: an S task is ~40x an N task,
//      so 3 phases put the last S(n) ticket only ~0.97 grid of S tasks ahead of the first N(n)
//      ticket: N(n) blocks (128 per sample, half the grid) spin on stragglers; each S task stages
//      33 scalar loads per thread with 64-bit div/mod, ~8 dependent L2/DRAM round trips, before
//      any FFMA; an N task keeps only 4 float4 loads per thread in flight; 2 blocks/SM (127 regs)
//      hide none of it.
//   v2 three launches: conv (16-byte staging, one round trip) ~0.72 ms of issue -> ~0.80;
//      coefficient fold ~5 us; normalize in place 2.1 GB -> ~0.55 ms: predicted 1.3-1.45 ms ->
//      measured 2.40 ms (docs/kernels.md)
//   v3 (session 8) the conv on the tensor cores: the conv3d 3xTF32 tile at D = 1 with a fragment
//      epilogue (sigmoid, pre-norm store, row sums). Predicted ~1.1-1.2 ms (MMAs ~0.35 ms, the
//      epilogue's ~25 instructions per output ~0.2 ms, normalize ~0.5 ms) -> measured 2.45 ms
//      (kb bench L2_021 --time-cap 3 --seed 7; 2.40 for v2 on the same machine). ncu source
//      counters: 3,270 warp instructions per (tile, warp) where the model had ~1,700: the patch
//      staging (4-byte copies, ~515), register moves packing float2 A pairs into MMA operands (26
//      per k step) and the epilogue (~1,200: expf + IEEE division ~23 per output). The tile now
//      stages by 16-byte copies and keeps big / small in separate arrays: 2,818 per (tile, warp),
//      **2.115 ms** (L1_054 0.948 -> 0.82 ms, L1_060 2.90 -> 2.43 ms from the same tile change);
//      with a block per (sample, group) folding the 66 MB of partials, 2.064 ms (kernelbench22).
//   v4 (session 17) the normalize pass as one persistent float4 stream (normalize_flat_kernel):
//      the task kernel's 16,384 blocks of 16 K elements each ran 4 rounds of 4 float4 loads per
//      thread and ended (session 12's ncu: 644 us, DRAM 67%). Predicted -0.1 ms (2.1 GB at ~4 TB/s)
//      -> measured 2.078-2.085 -> **1.951-1.953 ms** (kb bench L2_021 --time-cap 2 --seed 7, two
//      runs each against the session-16 pack, same call; the task kernel in the same build 2.078).
//   v5 (session 24) the sigmoid's division as the IEEE division's own fast path, without its
//      branch to the slow path (activation.cuh; bit-identical for arguments above -87): the
//      epilogue's BSSY / BRA / BSYNC were ~8% of its instructions: 1.95 -> 1.80 ms on this path.
//   v6 (session 24) the wgmma path (wgmma_rows.cuh): the conv twice on Hopper's tensor cores,
//      statistics then normalized stores, no pre-norm round trip. Predicted ~0.7 ms (tensor
//      ~0.3 ms per pass, epilogue under it) -> measured 1.77 ms with two lockstep warpgroups per
//      CTA, 1.55 ms with 4 independent warpgroups and staged stores (statistics 0.63 ms, store
//      0.91 ms under ncu; kb bench L2_021 --time-cap 2 --seed 7, docs/kernels.md).
//   next (for <= 1.0): both passes are latency-bound (7.7 cycles per issued instruction, 16
//      warps per SM); the store pass's copy-out index math (~40% of its instructions) first.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <optional>

#include "common/cuda/cuda_check.h"
#include "common/cuda/device_query.h"
#include "kernels/L2_021_conv2d_add_scale_sigmoid_groupnorm/activation.cuh"
#include "kernels/L2_021_conv2d_add_scale_sigmoid_groupnorm/wgmma_rows.cuh"
#include "kernels/cores/block_reduce.cuh"
#include "kernels/cores/conv3d_direct/tf32x3_tile.cuh"
#include "kernels/cores/group_norm_pipeline/pipeline.cuh"
#include "kernels/implementation.h"

namespace kb::custom::L2_021 {

namespace sp = kb::gn_pipeline;
namespace tc = kb::custom::conv3d_direct::tf32;

constexpr int kThreads = 256;
constexpr int kWarp = 32;
constexpr int kTileRows = 2;  // output rows per S task
constexpr int kInRows = kTileRows + 2;
constexpr int kCols = 8;      // output columns per thread
constexpr int kQuad = 4;      // output channels per thread
static_assert(kThreads % kWarp == 0, "whole warps");

struct Geometry {
  int64_t batch, c_in, c_out, h, w, ho, wo;
  int64_t groups, cpg;
  int64_t quads, col_groups, col_groups_pad, row_pad;  // fast path tiling
  int64_t s_tasks;                                      // conv tasks per sample
  int64_t parts, part_len;                              // N tasks: parts of a channel plane
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

// ---- Tensor-core path: the conv3d 3xTF32 tile (D = 1) with a statistics epilogue ----

constexpr int kTensorChannels = 32;  // the tile's channel block (two warps of 16 across it)

// The 3xTF32 tile's fragment epilogue: the sigmoid output stored pre-norm, and per (sample, output
// row, column tile, channel) the sums of g and g^2 over the row's columns in the tile, into
// partials[((n H' + h) col_tiles + column tile) C_out + co]: every slot written once per run,
// folded by coefficients_kernel (width cpg). A lane sums its 8 values of a channel about a
// warp-uniform pilot (the channel's first output in the row) in fp32, the 8 lanes of the channel
// combine by shuffles, and the raw sums are formed in double: sum g = s1 + n p, sum g^2 = s2 + 2 p
// s1 + n p^2.
struct TensorEpilogue {
  static constexpr bool kFragment = true;
  const float* b_conv;  // (C_out)
  const float* bias;    // (C_out)
  const float* scale;   // (C_out)
  double2* partials;

  template <int kNT>
  __device__ void fragment(const tc::Params& p, const tc::WarpFragment& f,
                           const float (&acc)[4][kNT][4]) const {
    const int cols = min(tc::kTileCols, p.out_w - f.tile.w0);  // columns of the row in range
    const int64_t slot =
        (int64_t{f.tile.n} * p.out_h + f.h) * p.col_tiles + f.tile.w0 / tc::kTileCols;
#pragma unroll
    for (int nt = 0; nt < kNT; ++nt)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const int co = f.co + 8 * nt + 2 * f.t + e;
        const bool ok = co < p.cout;
        const int c = ok ? co : 0;
        const float bc = b_conv[c], bi = bias[c], sc = scale[c];
        float v[2][4];
#pragma unroll
        for (int half = 0; half < 2; ++half)
#pragma unroll
          for (int j = 0; j < 4; ++j)
            v[half][j] = activation(acc[j][nt][2 * half + e] + bc, bi, sc);
        const float pilot = __shfl_sync(0xffffffffu, v[0][0], f.t);  // lane t: column 0
        float s1 = 0.0f, s2 = 0.0f;
#pragma unroll
        for (int half = 0; half < 2; ++half)
#pragma unroll
          for (int j = 0; j < 4; ++j) {
            const float d = 32 * half + 4 * f.g + j < cols ? v[half][j] - pilot : 0.0f;
            s1 += d;
            s2 = fmaf(d, d, s2);
          }
#pragma unroll
        for (int m = 4; m < kWarp; m <<= 1) {  // the 8 lanes of the channel (lane bits 2-4: g)
          s1 += __shfl_xor_sync(0xffffffffu, s1, m);
          s2 += __shfl_xor_sync(0xffffffffu, s2, m);
        }
        if (!ok) continue;
        tc::store_quad<false>(p, f, co, 0, v[0]);  // normalize reads the last ones from L2
        tc::store_quad<false>(p, f, co, 1, v[1]);
        if (f.g == 0) {
          const double pd = pilot, d1 = s1, n = cols;
          partials[slot * p.cout + co] =
              make_double2(fma(n, pd, d1), fma(n * pd, pd, fma(2.0 * pd, d1, double{s2})));
        }
      }
  }
};

// ---- Fast path: shared memory ----

struct SmemLayout {   // dynamic shared memory, in this order
  double2* chan;      // [C_out] (sum g, sum g^2) of the current S task
  float4* w;          // [C_in][3][3][quads]: the quad's 4 output channels, zero past C_out
  float4* epi;        // [quads][3]: conv bias, bias, scale of the quad's channels
  float* x;           // [C_in][kInRows][row_pad]
};

__host__ __device__ inline size_t smem_bytes(const Geometry& g) {
  return sizeof(double2) * g.c_out + sizeof(float4) * (g.c_in * 9 + 3) * g.quads +
         sizeof(float) * g.c_in * kInRows * g.row_pad;
}

__device__ SmemLayout carve(unsigned char* base, const Geometry& g) {
  SmemLayout s;
  s.chan = reinterpret_cast<double2*>(base);
  s.w = reinterpret_cast<float4*>(s.chan + g.c_out);
  s.epi = s.w + g.c_in * 9 * g.quads;
  s.x = reinterpret_cast<float*>(s.epi + 3 * g.quads);
  return s;
}

__device__ void stage_parameters(const Buffers& b, const Geometry& g, const SmemLayout& s) {
  for (int64_t e = threadIdx.x; e < g.c_in * 9 * g.quads; e += kThreads) {
    const int64_t cq = e % g.quads, tap = (e / g.quads) % 9, c = e / (9 * g.quads);
    float v[kQuad];
    for (int r = 0; r < kQuad; ++r) {
      const int64_t o = kQuad * cq + r;
      v[r] = o < g.c_out ? b.w[(o * g.c_in + c) * 9 + tap] : 0.0f;
    }
    s.w[e] = make_float4(v[0], v[1], v[2], v[3]);
  }
  for (int64_t e = threadIdx.x; e < 3 * g.quads; e += kThreads) {
    const int64_t cq = e / 3, which = e % 3;
    const float* src = which == 0 ? b.b_conv : which == 1 ? b.bias : b.scale;
    float v[kQuad];
    for (int r = 0; r < kQuad; ++r) {
      const int64_t o = kQuad * cq + r;
      v[r] = o < g.c_out ? src[o] : 0.0f;
    }
    s.epi[cq * 3 + which] = make_float4(v[0], v[1], v[2], v[3]);
  }
}

// x rows r0 .. r0 + 3 of sample n into s.x, zero past H and W.
__device__ void stage_input(const Buffers& b, const Geometry& g, const SmemLayout& s, int64_t n,
                            int64_t r0) {
  const int64_t row_len = g.row_pad, total = g.c_in * kInRows * row_len;
  for (int64_t e = threadIdx.x; e < total; e += kThreads) {
    const int64_t col = e % row_len, r = (e / row_len) % kInRows, c = e / (row_len * kInRows);
    const bool ok = col < g.w && r0 + r < g.h;
    s.x[e] = ok ? __ldg(b.x + ((n * g.c_in + c) * g.h + r0 + r) * g.w + col) : 0.0f;
  }
}

constexpr int kStageBatch = 9;  // float4 loads in flight per thread (full preset: 2112 = 9 x 256 - 192)

// stage_input with 16-byte loads (W % 4 == 0, x 16-byte aligned): one round trip of latency.
__device__ void stage_input_vec(const Buffers& b, const Geometry& g, const SmemLayout& s, int64_t n,
                                int64_t r0) {
  const int row4 = static_cast<int>(g.row_pad / 4), w4 = static_cast<int>(g.w / 4);
  const int total = static_cast<int>(g.c_in) * kInRows * row4;
  float4* dst = reinterpret_cast<float4*>(s.x);  // [C_in][kInRows][row4]
  for (int base = threadIdx.x; base < total; base += kThreads * kStageBatch) {
    float4 v[kStageBatch];
#pragma unroll
    for (int j = 0; j < kStageBatch; ++j) {
      const int e = base + j * kThreads, col4 = e % row4, cr = e / row4;  // cr = c * kInRows + r
      const int64_t row = r0 + cr % kInRows;
      const bool ok = e < total && col4 < w4 && row < g.h;
      v[j] = ok ? __ldg(reinterpret_cast<const float4*>(
                            b.x + ((n * g.c_in + cr / kInRows) * g.h + row) * g.w) + col4)
                : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    }
#pragma unroll
    for (int j = 0; j < kStageBatch; ++j)
      if (base + j * kThreads < total) dst[base + j * kThreads] = v[j];
  }
}

// ---- Fast path: S task ----

__device__ __forceinline__ void load_row(const float* src, float (&v)[kCols + 2]) {
  const float4 a = *reinterpret_cast<const float4*>(src);
  const float4 c = *reinterpret_cast<const float4*>(src + 4);
  const float2 d = *reinterpret_cast<const float2*>(src + 8);
  v[0] = a.x, v[1] = a.y, v[2] = a.z, v[3] = a.w, v[4] = c.x, v[5] = c.y, v[6] = c.z, v[7] = c.w;
  v[8] = d.x, v[9] = d.y;
}

__device__ __forceinline__ float lane_of(const float4& v, int r) {
  return r == 0 ? v.x : r == 1 ? v.y : r == 2 ? v.z : v.w;
}

// acc[i][q][j] = conv of output row r0 + i, channel 4 cq + q, column 8 cg + j (no bias).
__device__ void conv_block(const Geometry& g, const SmemLayout& s, int cq, int cg,
                           float (&acc)[kTileRows][kQuad][kCols]) {
  const int quads = static_cast<int>(g.quads), row_pad = static_cast<int>(g.row_pad);
  const float4* wp = s.w + cq;         // [c][kh][kw] step quads
  const float* xp = s.x + kCols * cg;  // [c][r] step row_pad
#pragma unroll 1
  for (int c = 0; c < static_cast<int>(g.c_in); ++c, wp += 9 * quads, xp += kInRows * row_pad) {
#pragma unroll
    for (int r = 0; r < kInRows; ++r) {
      float v[kCols + 2];
      load_row(xp + r * row_pad, v);
#pragma unroll
      for (int kh = 0; kh < 3; ++kh) {
        const int i = r - kh;  // output row fed by input row r through kernel row kh
        if (i < 0 || i >= kTileRows) continue;
#pragma unroll
        for (int kw = 0; kw < 3; ++kw) {
          const float4 wq = wp[(kh * 3 + kw) * quads];
#pragma unroll
          for (int q = 0; q < kQuad; ++q)
#pragma unroll
            for (int j = 0; j < kCols; ++j)
              acc[i][q][j] = fmaf(lane_of(wq, q), v[j + kw], acc[i][q][j]);
        }
      }
    }
  }
}

// Sums of a warp into s.chan[o] (double, shared atomics); lane values must be warp-wide.
// s1, s2: a lane's sums of g - pilot and (g - pilot)^2 over n values (pilot warp-uniform); the
// raw sums of g and g^2 are formed in double from the warp's totals.
__device__ __forceinline__ void warp_sum_into(double2* dst, float s1, float s2, float n, float pilot) {
  const float3 t = cores::warp_sum(make_float3(s1, s2, n));  // (s1, s2, n) of the warp
  if (threadIdx.x % kWarp == 0) {
    const double p = pilot, d1 = t.x;
    atomicAdd(&dst->x, fma(t.z, p, d1));
    atomicAdd(&dst->y, fma(t.z * p, p, fma(2.0 * p, d1, static_cast<double>(t.y))));
  }
}

// A value near channel q's outputs, the same in every lane: lane 0's first output, by fast
// intrinsics (any value near the data serves; the sums about it are exact in form).
__device__ __forceinline__ float warp_pilot(float acc0, float conv_bias, float bias, float scale) {
  const float t = (acc0 + conv_bias + bias) * scale;
  return __shfl_sync(0xffffffffu, __fdividef(1.0f, 1.0f + __expf(-t)), 0);
}

// One thread slot: activation, pre-norm store and sums of its 2 x 4 x 8 outputs.
__device__ void slot_epilogue(const Buffers& b, const Geometry& g, const SmemLayout& s, int64_t n,
                              int64_t r0, int64_t cq, int64_t cg,
                              float (&acc)[kTileRows][kQuad][kCols]) {
  const float4 bc = s.epi[cq * 3], bi = s.epi[cq * 3 + 1], ns = s.epi[cq * 3 + 2];
  const int64_t col0 = kCols * cg;
  // cq is warp-uniform (col_groups_pad % 32 == 0). One group for the quad: fold it, one pilot.
  const int64_t o0 = kQuad * cq;
  const bool fold = o0 / g.cpg == (o0 + kQuad - 1) / g.cpg && o0 + kQuad <= g.c_out;
  float pilot[kQuad];
#pragma unroll
  for (int q = 0; q < kQuad; ++q) {  // constant indices only: acc stays in registers
    pilot[q] = warp_pilot(acc[0][q][0], lane_of(bc, q), lane_of(bi, q), lane_of(ns, q));
    if (fold) pilot[q] = pilot[0];
  }
  // In-range outputs of one channel of this slot (a channel past C_out is never summed).
  const int64_t rows_in = g.ho - r0 < kTileRows ? g.ho - r0 : kTileRows;
  const int64_t cols_in = g.wo - col0 < kCols ? (g.wo > col0 ? g.wo - col0 : 0) : kCols;
  const float count = static_cast<float>(rows_in * cols_in);
  float s1[kQuad], s2[kQuad];
#pragma unroll
  for (int q = 0; q < kQuad; ++q) {
    const int64_t o = kQuad * cq + q;
    s1[q] = s2[q] = 0.0f;
#pragma unroll
    for (int i = 0; i < kTileRows; ++i) {
      const bool row_ok = r0 + i < g.ho && o < g.c_out;
      float* dst = b.out + ((n * g.c_out + o) * g.ho + r0 + i) * g.wo + col0;
#pragma unroll
      for (int j = 0; j < kCols; j += 2) {
        const bool ok0 = row_ok && col0 + j < g.wo, ok1 = row_ok && col0 + j + 1 < g.wo;
        const float a0 = activation(acc[i][q][j] + lane_of(bc, q), lane_of(bi, q), lane_of(ns, q));
        const float a1 = activation(acc[i][q][j + 1] + lane_of(bc, q), lane_of(bi, q), lane_of(ns, q));
        if (g.wo % 2 == 0 && ok1) {  // rows start 8-byte aligned
          *reinterpret_cast<float2*>(dst + j) = make_float2(a0, a1);
        } else {
          if (ok0) dst[j] = a0;
          if (ok1) dst[j + 1] = a1;
        }
        const float v0 = ok0 ? a0 - pilot[q] : 0.0f, v1 = ok1 ? a1 - pilot[q] : 0.0f;
        s1[q] += v0 + v1;
        s2[q] = fmaf(v0, v0, fmaf(v1, v1, s2[q]));
      }
    }
  }
  if (fold) {
    warp_sum_into(&s.chan[o0], (s1[0] + s1[1]) + (s1[2] + s1[3]), (s2[0] + s2[1]) + (s2[2] + s2[3]),
                  kQuad * count, pilot[0]);
  } else {
#pragma unroll
    for (int q = 0; q < kQuad; ++q)
      if (o0 + q < g.c_out) warp_sum_into(&s.chan[o0 + q], s1[q], s2[q], count, pilot[q]);
  }
}

// Task `task` of sample n: pre-norm rows 2 task, 2 task + 1 into `out`, group sums to
// b.partials[n][task][*].
__device__ void stats_task(const Buffers& b, const Geometry& g, const SmemLayout& s, int64_t n,
                           int64_t task) {
  const int64_t r0 = task * kTileRows;
  if (g.w % 4 == 0 && reinterpret_cast<uintptr_t>(b.x) % 16 == 0) {
    stage_input_vec(b, g, s, n, r0);
  } else {
    stage_input(b, g, s, n, r0);
  }
  for (int64_t o = threadIdx.x; o < g.c_out; o += kThreads) s.chan[o] = make_double2(0.0, 0.0);
  __syncthreads();
  for (int64_t slot = threadIdx.x; slot < g.quads * g.col_groups_pad; slot += kThreads) {
    const int64_t cq = slot / g.col_groups_pad, cg = slot % g.col_groups_pad;
    float acc[kTileRows][kQuad][kCols] = {};
    // Padded slots (cg >= col_groups) compute any in-range tile and store nothing.
    conv_block(g, s, static_cast<int>(cq), static_cast<int>(cg < g.col_groups ? cg : 0), acc);
    slot_epilogue(b, g, s, n, r0, cq, cg < g.col_groups ? cg : g.wo, acc);
  }
  __syncthreads();
  // Group sums: a folded quad sits in its first channel's slot, so add every channel's slot.
  for (int64_t k = threadIdx.x; k < g.groups; k += kThreads) {
    double2 sum = make_double2(0.0, 0.0);
    for (int64_t o = k * g.cpg; o < (k + 1) * g.cpg; ++o) {
      sum.x += s.chan[o].x;
      sum.y += s.chan[o].y;
    }
    b.partials[(n * g.s_tasks + task) * g.groups + k] = sum;
  }
  __syncthreads();  // s.x and s.chan are rewritten by the next task
}

// Persistent: stages the weights once, then runs conv tasks (n, task) in grid-stride order.
__global__ void __launch_bounds__(kThreads, 2) conv_kernel(Buffers b, Geometry g) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  const SmemLayout s = carve(smem_raw, g);
  stage_parameters(b, g, s);  // the first task's barrier orders it before any use
  for (int64_t t = blockIdx.x; t < g.batch * g.s_tasks; t += gridDim.x)
    stats_task(b, g, s, t / g.s_tasks, t % g.s_tasks);
}

// ---- Fast path: normalize in place ----

// Task (n, o, part): out = out * scale + shift over part of a channel plane.
__device__ void normalize_task(const Buffers& b, const Geometry& g, int64_t task) {
  const int64_t part = task % g.parts, o = (task / g.parts) % g.c_out;
  const int64_t n = task / (g.parts * g.c_out);
  const float2 cf = b.coef[n * g.c_out + o];
  float* base = b.out + (n * g.c_out + o) * g.plane();
  const int64_t lo = part * g.part_len, hi = min(g.plane(), lo + g.part_len);
  const bool vec = g.plane() % 4 == 0 && reinterpret_cast<uintptr_t>(b.out) % 16 == 0;
  if (vec) {  // part_len % 4 == 0
    // kInFlight float4 loads per thread issued before their stores: with one, the pass was
    // latency-bound (ncu: 101 cycles per warp on L1TEX per issued instruction, DRAM 63% busy).
    constexpr int kInFlight = 4;
    float4* p4 = reinterpret_cast<float4*>(base);
    const int64_t end = hi / 4;
    for (int64_t i0 = lo / 4 + threadIdx.x; i0 < end; i0 += kInFlight * kThreads) {
      float4 v[kInFlight];
#pragma unroll
      for (int k = 0; k < kInFlight; ++k)
        if (i0 + k * kThreads < end) v[k] = __ldcs(p4 + i0 + k * kThreads);
#pragma unroll
      for (int k = 0; k < kInFlight; ++k)
        if (i0 + k * kThreads < end)
          __stcs(p4 + i0 + k * kThreads,
                 make_float4(fmaf(v[k].x, cf.x, cf.y), fmaf(v[k].y, cf.x, cf.y),
                             fmaf(v[k].z, cf.x, cf.y), fmaf(v[k].w, cf.x, cf.y)));
    }
  } else {
    for (int64_t i = lo + threadIdx.x; i < hi; i += kThreads)
      __stcs(base + i, fmaf(__ldcs(base + i), cf.x, cf.y));
  }
}

// Tasks last sample first: the conv launch's last samples are still in L2.
__global__ void __launch_bounds__(kThreads) normalize_kernel(Buffers b, Geometry g) {
  const int64_t tasks = g.batch * g.c_out * g.parts;
  for (int64_t t = blockIdx.x; t < tasks; t += gridDim.x) normalize_task(b, g, tasks - 1 - t);
}

// The same pass over the whole of `out` as float4s (plane % 4 == 0, out 16-byte aligned, fewer
// than 2^32 float4s), persistent blocks striding over it, last float4 first: each thread keeps
// kInFlight loads in flight the whole pass, where a task of 16 K elements (normalize_kernel) ends
// after 4 rounds and leaves its SM's share of the DRAM queue to the next block's start-up.
__global__ void __launch_bounds__(kThreads)
    normalize_flat_kernel(Buffers b, uint32_t total4, uint32_t plane4) {
  constexpr int kInFlight = 4;
  float4* p4 = reinterpret_cast<float4*>(b.out);
  const uint32_t stride = gridDim.x * kThreads;
  for (uint32_t i0 = blockIdx.x * kThreads + threadIdx.x; i0 < total4; i0 += kInFlight * stride) {
    float4 v[kInFlight];
#pragma unroll
    for (int k = 0; k < kInFlight; ++k)
      if (i0 + k * stride < total4) v[k] = __ldcs(p4 + (total4 - 1 - (i0 + k * stride)));
#pragma unroll
    for (int k = 0; k < kInFlight; ++k) {
      if (i0 + k * stride >= total4) continue;
      const uint32_t i = total4 - 1 - (i0 + k * stride);
      const float2 cf = b.coef[i / plane4];  // (n, channel) of this float4
      __stcs(p4 + i, make_float4(fmaf(v[k].x, cf.x, cf.y), fmaf(v[k].y, cf.x, cf.y),
                                 fmaf(v[k].z, cf.x, cf.y), fmaf(v[k].w, cf.x, cf.y)));
    }
  }
}

// ---- Generic path (any conv geometry): three simple kernels, in place in `out` ----

struct ConvGeom {
  int64_t kh, kw, stride[2], pad[2], dil[2];
};

// The conv at output (i, j) of one sample and channel, any geometry: x_n is the sample's input
// (C_in, H, W), w_o the channel's weights (C_in, kH, kW), in global or shared memory.
__device__ float conv_at(const float* x_n, const float* w_o, const Geometry& g, const ConvGeom& cv,
                         int64_t i, int64_t j) {
  float acc = 0.0f;
  for (int64_t c = 0; c < g.c_in; ++c)
    for (int64_t kh = 0; kh < cv.kh; ++kh) {
      const int64_t ih = i * cv.stride[0] - cv.pad[0] + kh * cv.dil[0];
      if (ih < 0 || ih >= g.h) continue;
      for (int64_t kw = 0; kw < cv.kw; ++kw) {
        const int64_t iw = j * cv.stride[1] - cv.pad[1] + kw * cv.dil[1];
        if (iw < 0 || iw >= g.w) continue;
        acc = fmaf(x_n[(c * g.h + ih) * g.w + iw], w_o[(c * cv.kh + kh) * cv.kw + kw], acc);
      }
    }
  return acc;
}

// g of channel o from its conv value, rounded as the reference: ((y + conv bias) + bias) * scale.
__device__ __forceinline__ float generic_sigmoid(const Buffers& b, int64_t o, float acc) {
  return activation(acc + b.b_conv[o], b.bias[o], b.scale[o]);
}

__global__ void __launch_bounds__(kThreads) generic_activation_kernel(Buffers b, Geometry g, ConvGeom cv) {
  const int64_t total = g.batch * g.c_out * g.plane();
  for (int64_t e = int64_t{blockIdx.x} * kThreads + threadIdx.x; e < total;
       e += int64_t{gridDim.x} * kThreads) {
    const int64_t j = e % g.wo, i = (e / g.wo) % g.ho, o = (e / g.plane()) % g.c_out;
    const int64_t n = e / (g.plane() * g.c_out);
    const float acc =
        conv_at(b.x + n * g.c_in * g.h * g.w, b.w + o * g.c_in * cv.kh * cv.kw, g, cv, i, j);
    b.out[e] = generic_sigmoid(b, o, acc);
  }
}

// ---- Small groups: one block per (n, group), one launch ----
//
// When the group's values, the sample's input and the group's weights fit in shared memory
// (group_smem_floats), one block per (n, group) stages the input and weights with parallel loads,
// computes the group's g into shared memory (conv_at), the mean, the centred sum of squares (two
// passes, no cancellation), and writes (g - mean) (rstd gamma) + beta. The generic path's four
// launches, each thread's conv a chain of dependent global loads, took 45 us at the sweep's N 99,
// C_in 3, C_out 8, 61 x 9 (the reference 37 us). H200, session 11 (`kb bench L2_021 --dims ...`,
// one call): there 30 against the generic path's 48 us; N 37, C_in 6, 5 x 5: 11 against 29;
// small / odd presets 16 / 10 against 24 / 24 us. Without the staging (global loads) it was 45.
constexpr int64_t kGroupMaxSmemFloats = 12 * 1024;  // 48 KB: no opt-in needed

__host__ __device__ inline int64_t group_smem_floats(const Geometry& g, const ConvGeom& cv) {
  return g.cpg * g.plane() + g.c_in * g.h * g.w + g.cpg * g.c_in * cv.kh * cv.kw;
}

__global__ void __launch_bounds__(kThreads) group_kernel(Buffers b, Geometry g, ConvGeom cv) {
  extern __shared__ float smem[];  // v (the group's g) | the sample's x | the group's weights
  __shared__ float warp_sums[2][kThreads / kWarp];
  __shared__ float stats[2];  // mean, rstd
  const int64_t n = blockIdx.x / g.groups, o0 = blockIdx.x % g.groups * g.cpg;
  const int len = static_cast<int>(g.cpg * g.plane()), plane = static_cast<int>(g.plane());
  const int x_len = static_cast<int>(g.c_in * g.h * g.w);
  const int w_per_o = static_cast<int>(g.c_in * cv.kh * cv.kw);
  float* v = smem;
  float* xs = v + len;
  float* ws = xs + x_len;
  for (int e = threadIdx.x; e < x_len; e += kThreads) xs[e] = __ldg(b.x + n * x_len + e);
  for (int e = threadIdx.x; e < static_cast<int>(g.cpg) * w_per_o; e += kThreads)
    ws[e] = __ldg(b.w + o0 * w_per_o + e);
  __syncthreads();
  float sum = 0.0f;
  for (int e = threadIdx.x; e < len; e += kThreads) {
    const int o = e / plane, r = e % plane;
    v[e] = generic_sigmoid(b, o0 + o, conv_at(xs, ws + o * w_per_o, g, cv, r / g.wo, r % g.wo));
    sum += v[e];
  }
  sum = cores::block_sum<kThreads>(sum, warp_sums[0]);
  if (threadIdx.x == 0) stats[0] = sum / static_cast<float>(len);
  __syncthreads();
  const float mean = stats[0];
  float sq = 0.0f;
  for (int e = threadIdx.x; e < len; e += kThreads) sq = fmaf(v[e] - mean, v[e] - mean, sq);
  sq = cores::block_sum<kThreads>(sq, warp_sums[1]);
  if (threadIdx.x == 0)
    stats[1] = static_cast<float>(1.0 / sqrt(static_cast<double>(sq) / len + g.eps));
  __syncthreads();
  const float rstd = stats[1];
  float* out = b.out + (n * g.c_out + o0) * g.plane();
  for (int e = threadIdx.x; e < len; e += kThreads) {
    const int o = static_cast<int>(o0) + e / plane;
    out[e] = fmaf(v[e] - mean, rstd * __ldg(&b.gamma[o]), __ldg(&b.beta[o]));
  }
}

__global__ void __launch_bounds__(kThreads) generic_normalize_kernel(Buffers b, Geometry g) {
  const int64_t total = g.batch * g.c_out * g.plane();
  for (int64_t e = int64_t{blockIdx.x} * kThreads + threadIdx.x; e < total;
       e += int64_t{gridDim.x} * kThreads) {
    const float2 cf = b.coef[e / g.plane()];
    b.out[e] = fmaf(b.out[e], cf.x, cf.y);
  }
}

// ---- Host side ----

class ConvSigmoidGroupNorm final : public Implementation {
 public:
  ~ConvSigmoidGroupNorm() override { KB_CUDA_WARN(cudaFree(workspace_)); }

  Status setup(const ProblemInstance& p, cudaStream_t) override {
    x_ = input_index(p, "x");
    w_ = param_index(p, "conv.weight");
    b_conv_ = param_index(p, "conv.bias");
    bias_ = param_index(p, "bias");
    scale_ = param_index(p, "scale");
    gamma_ = param_index(p, "group_norm.weight");
    beta_ = param_index(p, "group_norm.bias");
    const Shape& xs = p.shape_of("x");            // (N, C_in, H, W)
    const Shape& ws = p.shape_of("conv.weight");  // (C_out, C_in, kH, kW)
    const Shape& os = p.output_shape();           // (N, C_out, Ho, Wo)
    if ((p.has_attr("conv", "groups") && p.int_attr("conv", "groups") != 1) || ws[1] != xs[1])
      return Status::failed_precondition("L2_021 custom: needs a conv with groups 1");
    g_ = Geometry{};
    g_.batch = xs[0], g_.c_in = xs[1], g_.c_out = os[1], g_.h = xs[2], g_.w = xs[3];
    g_.ho = os[2], g_.wo = os[3];
    g_.groups = p.int_attr("group_norm", "num_groups");
    g_.cpg = g_.c_out / g_.groups;
    g_.eps = static_cast<float>(p.number("group_norm", "eps"));
    cv_.kh = ws[2], cv_.kw = ws[3];
    bool unit = cv_.kh == 3 && cv_.kw == 3;  // 3x3, stride 1, padding 0, dilation 1
    for (int a = 0; a < 2; ++a) {
      cv_.stride[a] = attr_or(p, "stride", a, 1);
      cv_.pad[a] = attr_or(p, "padding", a, 0);
      cv_.dil[a] = attr_or(p, "dilation", a, 1);
      unit = unit && cv_.stride[a] == 1 && cv_.pad[a] == 0 && cv_.dil[a] == 1;
    }
    g_.quads = (g_.c_out + kQuad - 1) / kQuad;
    g_.col_groups = (g_.wo + kCols - 1) / kCols;
    g_.col_groups_pad = (g_.col_groups + kWarp - 1) / kWarp * kWarp;
    g_.row_pad = kCols * g_.col_groups + kCols;  // the last column group reads 2 past its 8
    g_.parts = (g_.plane() + kPartTarget - 1) / kPartTarget;
    g_.part_len = (g_.plane() + g_.parts - 1) / g_.parts;
    g_.part_len = (g_.part_len + 3) / 4 * 4;
    g_.s_tasks = (g_.ho + kTileRows - 1) / kTileRows;
    smem_ = smem_bytes(g_);
    // A conv task's block maps quads x col_groups_pad slots to its 256 threads; narrow images
    // with few channels leave most of them idle (C_out 8, Wo 9: 4 working threads of 256, 3.6x
    // slower than the reference in the shape sweep). Below 1/16 of the block the generic kernels
    // are faster (N 4, C_in 8, C_out 8, 30 x 30, 8 of 256: 31 against 36 us); above it the tile
    // (N 53, C_in 2, C_out 8, 91 x 229, 58 of 256: 190 us against the generic path's 462 and
    // the reference's 408; N 8, C_in 3, C_out 8, 64 x 64, 16 of 256: 33 against 37; session 22).
    const int64_t slots = g_.quads * g_.col_groups_pad;
    const double busy = static_cast<double>(g_.quads * g_.col_groups) /
                        static_cast<double>((slots + kThreads - 1) / kThreads * kThreads);
    fast_ = unit && smem_ <= 100 * 1024 && busy >= 1.0 / 16;
    rows_taken_ = false;
    if (unit) KB_TRY(rows_.setup({g_.batch, g_.c_in, g_.c_out, g_.h, g_.w}, &rows_taken_));
    if (!rows_taken_) KB_TRY(setup_tensor(unit));
    int64_t parts = g_.s_tasks;
    if (rows_taken_) parts = std::max(parts, rows_.parts() * g_.cpg);
    if (tensor_) parts = std::max(parts, g_.ho * tensor_->params.col_tiles * g_.c_out / g_.groups);
    if (fast_) {
      KB_CUDA_TRY(cudaFuncSetAttribute(conv_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       static_cast<int>(smem_)));
      KB_ASSIGN_OR_RETURN(
          conv_blocks_, sp::persistent_blocks(reinterpret_cast<const void*>(conv_kernel), kThreads,
                                              smem_, g_.batch * g_.s_tasks));
    }
    if (!fast_) {
      KB_ASSIGN_OR_RETURN(const int sms, cuda::sm_count());
      // Blocks for at least half the SMs: at N 5 x 8 groups (40 blocks) the generic path was
      // faster (25 against 28 us).
      small_groups_ = !tensor_ && group_smem_floats(g_, cv_) <= kGroupMaxSmemFloats &&
                      g_.batch * g_.groups >= sms / 2 && g_.batch * g_.groups < 0x7fffffff;
      generic_parts_ = sp::group_partial_parts(g_.batch, g_.groups, g_.cpg * g_.plane(), sms);
    }
    KB_ASSIGN_OR_RETURN(
        flat_blocks_,
        sp::persistent_blocks(reinterpret_cast<const void*>(normalize_flat_kernel), kThreads, 0,
                              (g_.batch * g_.c_out * g_.plane() / 4 + kThreads - 1) / kThreads));
    parts = std::max(parts, generic_parts_);  // the generic path also serves a misaligned output
    // workspace: partials [N * parts * groups] double2 | coef [N * C_out] float2
    partials_count_ = g_.batch * parts * g_.groups;
    const size_t bytes = sizeof(double2) * partials_count_ + sizeof(float2) * g_.batch * g_.c_out;
    KB_CUDA_TRY(cudaMalloc(&workspace_, bytes));
    return Status::ok();
  }

  Status run(const ImplArgs& args, cudaStream_t stream) override {
    // Every workspace slot a launch reads was written earlier in this run: no zeroing.
    auto* partials = static_cast<double2*>(workspace_);
    auto* coef = reinterpret_cast<float2*>(partials + partials_count_);
    const Buffers b{args.inputs[x_].data,
                    args.params[w_].data,
                    args.params[b_conv_].data,
                    args.params[bias_].data,
                    args.params[scale_].data,
                    args.params[gamma_].data,
                    args.params[beta_].data,
                    args.output.data,
                    partials,
                    coef};
    if (rows_taken_) {
      rows::Args a{};
      a.x = b.x, a.w = b.w, a.b_conv = b.b_conv, a.bias = b.bias, a.scale = b.scale;
      a.partials = partials, a.coef = coef, a.out = b.out;
      KB_TRY(rows_.run_statistics(a, stream));
      sp::launch_coefficients(partials, g_.batch, rows_.parts(), g_.groups, g_.cpg,
                              static_cast<double>(g_.cpg * g_.plane()), b.gamma, b.beta, g_.eps,
                              coef, stream, g_.cpg);
      KB_CUDA_TRY(cudaGetLastError());
      return rows_.run_store(a, stream);
    }
    if (tensor_) {
      tc::Params p = tensor_->params;
      p.x = b.x, p.w = b.w, p.y = b.out;
      const TensorEpilogue epilogue{b.b_conv, b.bias, b.scale, partials};
      tc::conv3d_tf32x3_kernel<1, 3, 3, kTensorChannels, TensorEpilogue>
          <<<tensor_->launch.grid, tc::kThreads, tensor_->launch.smem, stream>>>(p, epilogue);
      KB_CUDA_TRY(cudaGetLastError());
      sp::launch_coefficients(partials, g_.batch, g_.ho * p.col_tiles, g_.groups, g_.cpg,
                              static_cast<double>(g_.cpg * g_.plane()), b.gamma, b.beta, g_.eps,
                              coef, stream, g_.cpg);
      KB_CUDA_TRY(cudaGetLastError());
      launch_normalize(b, stream);
      KB_CUDA_TRY(cudaGetLastError());
      return Status::ok();
    }
    const bool aligned = reinterpret_cast<uintptr_t>(args.output.data) % 8 == 0;
    if (fast_ && aligned) {
      conv_kernel<<<conv_blocks_, kThreads, smem_, stream>>>(b, g_);
      KB_CUDA_TRY(cudaGetLastError());
      sp::launch_coefficients(partials, g_.batch, g_.s_tasks, g_.groups, g_.cpg,
                              static_cast<double>(g_.cpg * g_.plane()), b.gamma, b.beta, g_.eps,
                              coef, stream);
      KB_CUDA_TRY(cudaGetLastError());
      launch_normalize(b, stream);
      KB_CUDA_TRY(cudaGetLastError());
      return Status::ok();
    }
    if (small_groups_) {
      if (g_.batch * g_.groups == 0) return Status::ok();  // no output elements
      group_kernel<<<static_cast<unsigned>(g_.batch * g_.groups), kThreads,
                     sizeof(float) * group_smem_floats(g_, cv_), stream>>>(b, g_, cv_);
      KB_CUDA_TRY(cudaGetLastError());
      return Status::ok();
    }
    const int64_t total = g_.batch * g_.c_out * g_.plane();
    const auto blocks = static_cast<unsigned>(std::clamp<int64_t>((total + kThreads - 1) / kThreads, 1, 65536));
    generic_activation_kernel<<<blocks, kThreads, 0, stream>>>(b, g_, cv_);
    KB_CUDA_TRY(cudaGetLastError());
    const int64_t group_len = g_.cpg * g_.plane();
    sp::launch_group_partials(b.out, g_.batch, g_.groups, group_len, generic_parts_, partials,
                              stream);
    KB_CUDA_TRY(cudaGetLastError());
    sp::launch_coefficients(partials, g_.batch, generic_parts_, g_.groups, g_.cpg,
                            static_cast<double>(group_len), b.gamma, b.beta, g_.eps, coef, stream);
    KB_CUDA_TRY(cudaGetLastError());
    generic_normalize_kernel<<<blocks, kThreads, 0, stream>>>(b, g_);
    KB_CUDA_TRY(cudaGetLastError());
    return Status::ok();
  }

 private:
  static constexpr int64_t kPartTarget = 16384;  // elements of one N task

  // The tensor-core path: 3x3, stride 1, no padding (unit), at least 16 channels (a 32-channel
  // block) and rows of at least 48 columns (64-column tiles), and the patch fits in shared memory.
  // Narrower shapes keep the FMA tile or the generic kernels.
  Status setup_tensor(bool unit) {
    tensor_.reset();
    if (!unit || g_.c_out < 16 || g_.wo < 48) return Status::ok();
    const int64_t limit = int64_t{1} << 30;  // the tile's sizes are int
    if (g_.batch >= limit || g_.c_in * 9 >= limit || g_.c_out >= limit || g_.h >= limit ||
        g_.w >= limit) {
      return Status::ok();
    }
    tc::Params p = {};
    p.batch = static_cast<int>(g_.batch), p.cin = static_cast<int>(g_.c_in);
    p.cout = static_cast<int>(g_.c_out);
    p.in_d = 1, p.in_h = static_cast<int>(g_.h), p.in_w = static_cast<int>(g_.w);
    p.out_d = 1, p.out_h = static_cast<int>(g_.ho), p.out_w = static_cast<int>(g_.wo);
    tc::derive_params<1, 3, 3>(p);
    KB_ASSIGN_OR_RETURN(const std::optional<tc::Launch> launch,
                        (tc::plan_launch<1, 3, 3, kTensorChannels, TensorEpilogue>(p)));
    if (launch) tensor_ = TensorPlan{p, *launch};
    return Status::ok();
  }

  // Normalizes `out` in place with coef: the flat float4 pass where the plane and `out` allow
  // (and its uint32 indices cannot wrap), else the task kernel (float4 or scalar per task).
  void launch_normalize(const Buffers& b, cudaStream_t stream) const {
    const int64_t total = g_.batch * g_.c_out * g_.plane();
    if (g_.plane() % 4 == 0 && reinterpret_cast<uintptr_t>(b.out) % 16 == 0 &&
        total / 4 < (int64_t{1} << 32) - int64_t{1} * kThreads * flat_blocks_ * 4) {
      normalize_flat_kernel<<<flat_blocks_, kThreads, 0, stream>>>(
          b, static_cast<uint32_t>(total / 4), static_cast<uint32_t>(g_.plane() / 4));
      return;
    }
    const int64_t tasks = g_.batch * g_.c_out * g_.parts;
    normalize_kernel<<<static_cast<unsigned>(std::clamp<int64_t>(tasks, 1, int64_t{1} << 20)),
                       kThreads, 0, stream>>>(b, g_);
  }

  struct TensorPlan {
    tc::Params params = {};  // sizes; tensors set per run
    tc::Launch launch = {};
  };

  static int64_t attr_or(const ProblemInstance& p, const char* attr, int a, int64_t fill) {
    return p.has_attr("conv", attr) ? p.ints("conv", attr)[a] : fill;
  }

  size_t x_ = 0, w_ = 0, b_conv_ = 0, bias_ = 0, scale_ = 0, gamma_ = 0, beta_ = 0;
  Geometry g_{};
  ConvGeom cv_{};
  bool fast_ = false;
  bool small_groups_ = false;         // group_kernel runs (instead of the generic path)
  rows::RowsConv rows_;               // the wgmma path's plan
  bool rows_taken_ = false;           // the wgmma path runs (wgmma_rows.cuh)
  std::optional<TensorPlan> tensor_;  // set when the tensor path runs
  size_t smem_ = 0;
  int conv_blocks_ = 1;
  int flat_blocks_ = 1;        // resident blocks of normalize_flat_kernel
  int64_t generic_parts_ = 1;  // generic path: statistics blocks per (n, group)
  int64_t partials_count_ = 0;
  void* workspace_ = nullptr;  // partials, coefficients; owned
};

}  // namespace kb::custom::L2_021

KB_REGISTER_IMPLEMENTATION(L2_021, custom, kb::custom::L2_021::ConvSigmoidGroupNorm)
