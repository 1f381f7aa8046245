// L2_091 custom: out = sigmoid((softmax_c(conv_transpose2d(x) + b) + bias[c]) * scale), one kernel.
//   x: (N, C_in, H, W); w: (C_in, C_out, 4, 4); b: (C_out); bias: (C_out, 1, 1);
//   out: (N, C_out, 2H + 1, 2W + 1) fp32, NCHW. ConvTranspose2d(k 4, stride 2, padding 1,
//   output_padding 1); softmax over the channels (dim 1); scale 2.0 from the spec.
//   Full preset: x (128, 64, 64, 64) -> out (128, 128, 129, 129).
//
// Cost (docs/problems.md#l2_091, full preset): 68.2 G MAC = 139.6 GFLOP; min DRAM 1,225 MB (out
// 1,091) -> 0.29 ms. fp32 FMA floor 2.08 ms; 3xTF32 floor ~0.86 ms. Strict-fp32 reference
// ~17.1 ms; best strict-fp32 peer 13.59 ms (autotuned cuDNN; compile 14.48,
// docs/baselines.md); goal <= 3.33 ms (1.6 x the floor).
//
// Design (kernels/cores/conv_transpose2d_tf32x3/parity_gemm.cuh): weights re-packed per call,
// then one GEMM launch. Per axis o + 1 = 2 q + r; both phases take taps at inputs q and q - 1, so
// the conv is one implicit GEMM per class (r_h, r_w): M = N x 65 x 65 q positions (the union over
// phases; 1.6% of them fall outside the 129 x 129 output and are not stored), K = C_in x 4 = 256,
// N = C_out = 128, 3xTF32 on mma.sync m16n8k8. A CTA owns all channels of its 128 pixels, so the
// softmax runs in the epilogue: two threads per pixel (64 channels each) read the shared C tile
// ONCE into 64 registers (+ b, running max), exchange the max, turn the registers into
// exp(y - max) with one FFMA + ex2.approx each, exchange the sum, then write
// sigmoid((e * (1 / sum) + bias) * scale) straight from the registers (one ex2.approx + one
// rcp.approx; a warp stores 32 pixels of one channel: stride-2 runs, the 4 class CTAs of a tile
// run side by side, so L2 merges the halves of each sector).
// Narrow (C_out <= 64, kernels/cores/conv_transpose2d_tf32x3/narrow_gemm.cuh): the same GEMM
// with a channel tile of 8, 16, 32 or 64 (the smallest >= C_out), same A side and C-tile layout,
// so this epilogue runs unchanged with kN / 2 channels per thread. Why: the wide tile pays for
// 128 channels whatever C_out is: 132.7 us of GEMM at N 96, C_in 33, C_out 9, 9 x 39 (0.82x
// PyTorch), 0.43x at N 8, C_in 64, C_out 5, 64 x 64. Predicted: the MMAs drop by 128 / kN (8x
// and 16x there), leaving the A gather (the same per pixel) and the shared-memory fragment reads
// (2-4x fewer with split K): ~4x faster GEMM, ~1.5-3x PyTorch at those shapes.
// Fallback: classes and taps come from the node's attributes; C_out > 128 and layers the fast
// path does not take (groups != 1, > 2 taps per axis and phase, stride > 4, huge sizes) run the
// generic gather of kernels/cores/conv_transpose_gather into a workspace, then a per-pixel
// softmax kernel (max-subtracted, expf).
//
// Predicted (H200): 211M MMAs (L1_003's kernel shape: 69 TFLOP/s effective) -> ~2.1 ms of main
// loop + fill, epilogue and stores not hidden by the co-resident CTA. v1's epilogue (3 passes
// over the C tile, 2 accurate expf + 2 IEEE divisions per output, ~45 instructions) measured
// 3.46 ms, 0.63 ms over L2_093 (same core, a one-pass erff epilogue of ~20). v2's is ~16 per
// output (1 LDS, 3 MUFU, 1 STG, the rest FP32 and uniform bias loads): ~4k cycles of 16,384
// outputs per CTA at the MUFU's 16/clk, overlapping the other CTA's MMAs -> ~2.9-3.1 ms, a
// little over L2_093 (1.6% wasted q, the extra MUFU work). Measured (v2): 2.83 ms (docs/kernels.md;
// 49.4 TFLOP/s), 2.839 ms in docs/bench-h200-2026-12-02b.json (1.36x the floor): under the
// 3.33 ms goal.
//
// Accuracy: the conv in 3xTF32 ~ fp32 (K = 256 in the MMA accumulator), but the output barely
// depends on it (softmax ~1/128 per channel, docs/problems.md#l2_091). The softmax subtracts the
// pixel's max before the exponent (no overflow at any input scale); ex2.approx and rcp.approx
// (relative error <= ~2^-22 each) replace expf and the division: sigmoid moves by at most |t| / 4
// times their relative error, |t| ~ 5: ~1e-6 (details at kLog2e below; a CPU emulation with
// worst-case MUFU errors reached 0.5% of the tolerance). Measured max |err| 1.8e-7 at the full
// preset (bench 2026-12-02b) vs 1e-4 + 1e-4 |r| allowed. Robustness trials (small preset, seed 7,
// vs the golden model): shift (x + 100) 0.003x the tolerance (reference 0.003x), scale (x 1000)
// 0.05x (0.01x), centered 0.0007x (0.0005x). No statistics beyond the per-pixel max and sum.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "common/cuda/cuda_check.h"
#include "kernels/cores/conv_transpose2d_tf32x3/narrow_gemm.cuh"
#include "kernels/cores/conv_transpose2d_tf32x3/parity_gemm.cuh"
#include "kernels/cores/conv_transpose_gather/gather.cuh"
#include "kernels/cores/group_norm_pipeline/pipeline.cuh"
#include "kernels/implementation.h"

namespace kb::custom::L2_091 {

namespace pg = parity_gemm;

// Fast exp and reciprocal (one MUFU op each, relative error <= ~2^-22): p = e / sum keeps the
// relative error of e; sigmoid(t) moves by at most |t| / 4 times the relative error of its
// exp(-t) (plus rcp's), |t| = |scale (p + bias)| ~ 5: ~1e-6 against the 1e-4 tolerance (a CPU
// emulation with worst-case MUFU errors and |y| up to ~200 reached 0.5% of it). The softmax's
// exponent is v log2e - max log2e in one FFMA: the rounding of max log2e is a factor common to
// every channel of the pixel and cancels in e / sum.
using ::kb::gn_pipeline::ex2_approx;
using ::kb::gn_pipeline::rcp_approx;
constexpr float kLog2e = 1.4426950408889634f;

// The per-channel tail after the softmax, shared by the GEMM epilogues and the fallback.
struct SigmoidTail {
  const float* conv_bias;  // (C_out)
  const float* bias;       // (C_out, 1, 1)
  float scale;

  // out = sigmoid((p + bias[co]) * scale), p = the softmax of channel co.
  __device__ __forceinline__ float apply(int co, float p) const {
    const float t = (p + __ldg(bias + co)) * scale;
    return rcp_approx(1.0f + ex2_approx(-kLog2e * t));
  }
};

// All of a pixel's channels live in one CTA (C_out <= kN, n0 = 0; kN = 128 for the wide GEMM,
// 8 .. 64 for the narrow one): thread (m, half) keeps the kN / 2 values of channels
// [half kN / 2, (half + 1) kN / 2) of tile pixel m in registers, so the epilogue reads the C tile
// once and writes each output once.
constexpr int kHalves = pg::kThreads / pg::kTile;  // 2 threads per pixel
static_assert(kHalves == 2, "the max / sum exchange below pairs two halves");

template <int kN>
struct SoftmaxEpilogue : SigmoidTail {
  static constexpr int kChannelsPerThread = kN / kHalves;  // 64 in the wide GEMM
  static constexpr int scratch_floats() {
    if constexpr (kN == pg::kTile)
      return pg::kEpilogueFloats;
    else
      return pg::Narrow<kN>::kEpilogueFloats;
  }
  static_assert(2 * kHalves * pg::kTile <= scratch_floats(), "softmax scratch fits");

  // Scratch after the C tile (kN x 128): [0, 256) max and [256, 512) sum partials per (half,
  // pixel).
  __device__ __forceinline__ void operator()(const pg::GemmParams& p, const pg::Tile& t,
                                             float* smem, const pg::OutputRows&) const {
    const float* c_tile = smem;
    float* max_part = smem + kN * pg::kTile;
    float* sum_part = max_part + kHalves * pg::kTile;
    const int m = threadIdx.x % pg::kTile, half = threadIdx.x / pg::kTile;
    const int lo = half * kChannelsPerThread, c_out = p.plan.c_out;

    float v[kChannelsPerThread];  // y + b, then exp(y + b - max)
    float max = -INFINITY;
#pragma unroll
    for (int j = 0; j < kChannelsPerThread; ++j) {
      const int co = lo + j;
      v[j] = co < c_out ? c_tile[pg::c_smem_index(co, m)] + __ldg(conv_bias + co) : -INFINITY;
      max = fmaxf(max, v[j]);
    }
    max_part[half * pg::kTile + m] = max;
    __syncthreads();
    const float shift = fmaxf(max_part[m], max_part[pg::kTile + m]) * kLog2e;
    float sum = 0.0f;
#pragma unroll
    for (int j = 0; j < kChannelsPerThread; ++j) {
      v[j] = ex2_approx(fmaf(v[j], kLog2e, -shift));  // -inf (absent channel) -> 0
      sum += v[j];
    }
    sum_part[half * pg::kTile + m] = sum;
    __syncthreads();
    const float inv_sum = 1.0f / (sum_part[m] + sum_part[pg::kTile + m]);

    int64_t pixel = 0;
    if (!output_pixel(p.plan, t, m, pixel)) return;
    float* out = p.y + pixel;
    const int64_t plane = p.plan.out_plane();
#pragma unroll
    for (int j = 0; j < kChannelsPerThread; ++j) {  // a warp stores 32 pixels of channel co
      const int co = lo + j;
      if (co < c_out) out[co * plane] = apply(co, v[j] * inv_sum);
    }
  }

  // The y index of (n, 0, oh, ow) of tile pixel m, false when m is past M or (oh, ow) outside
  // the output for this phase class (pg::output_rows for one pixel).
  __device__ __forceinline__ static bool output_pixel(const pg::ParityPlan& p, const pg::Tile& t,
                                                      int m, int64_t& pixel) {
    if (t.m0 + m >= p.m_total) return false;
    const pg::Pixel px = pg::pixel_of(p, t.m0 + m);
    const int oh = px.qh * p.h.stride + t.rh - p.h.pad, ow = px.qw * p.w.stride + t.rw - p.w.pad;
    if (oh < 0 || oh >= p.h.out || ow < 0 || ow >= p.w.out) return false;
    pixel = int64_t{px.n} * p.c_out * p.out_plane() + int64_t{oh} * p.w.out + ow;
    return true;
  }
};

// Fallback: one thread per (n, pixel) over the generic gather's y (no bias).
__global__ void __launch_bounds__(256)
    fallback_softmax_kernel(const float* __restrict__ y, float* __restrict__ out, SigmoidTail e,
                            int64_t pixels, int64_t plane, int64_t c_out) {
  for (int64_t i = int64_t{blockIdx.x} * 256 + threadIdx.x; i < pixels;
       i += int64_t{gridDim.x} * 256) {
    const int64_t base = i / plane * c_out * plane + i % plane;
    float max = -INFINITY, sum = 0.0f;
    for (int64_t c = 0; c < c_out; ++c) max = fmaxf(max, y[base + c * plane] + e.conv_bias[c]);
    for (int64_t c = 0; c < c_out; ++c) sum += expf(y[base + c * plane] + e.conv_bias[c] - max);
    for (int64_t c = 0; c < c_out; ++c) {
      const float v = expf(y[base + c * plane] + e.conv_bias[c] - max);
      out[base + c * plane] = e.apply(static_cast<int>(c), v / sum);
    }
  }
}

// The channel tile of the GEMM: the narrow kernel's smallest tile >= C_out (its MMAs scale with
// the tile: 14x fewer at C_out 9 than the wide 128), the wide kernel above 64.
inline int channel_tile(int64_t c_out) {
  for (int n : {8, 16, 32, 64})
    if (c_out <= n) return n;
  return pg::kTile;
}

// f(std::integral_constant<int, kN>) for the channel tile `tile` (channel_tile's values).
template <class F>
Status with_channel_tile(int tile, F&& f) {
  switch (tile) {
    case 8:
      return f(std::integral_constant<int, 8>{});
    case 16:
      return f(std::integral_constant<int, 16>{});
    case 32:
      return f(std::integral_constant<int, 32>{});
    case 64:
      return f(std::integral_constant<int, 64>{});
    default:
      return f(std::integral_constant<int, pg::kTile>{});
  }
}

class ConvTransposeSoftmaxBiasSigmoid final : public Implementation {
 public:
  ~ConvTransposeSoftmaxBiasSigmoid() override { KB_CUDA_WARN(cudaFree(workspace_)); }

  Status setup(const ProblemInstance& p, cudaStream_t) override {
    KB_TRY(conv_.bind(p));
    const int64_t dim = p.int_attr("softmax", "dim");
    if (dim != 1 && dim != 1 - static_cast<int64_t>(p.shape_of("y").size()))
      return Status::failed_precondition("L2_091 custom: softmax must run over the channels");
    conv_bias_ = param_index(p, "conv_transpose.bias");
    bias_ = param_index(p, "bias");
    tail_ = {nullptr, nullptr, static_cast<float>(p.number("scale", "value"))};
    Result<pg::ParityPlan> plan = pg::plan_parity_gemm(conv_.geometry, /*max_c_out=*/pg::kTile);
    fast_ = plan.is_ok();
    if (!fast_) {  // y of the generic gather
      KB_CUDA_TRY(cudaMalloc(&workspace_, conv_.geometry.output_numel() * sizeof(float)));
      return Status::ok();
    }
    plan_ = plan.value();
    tile_ = channel_tile(plan_.c_out);
    return with_channel_tile(tile_, [&](auto n) -> Status {
      constexpr int kN = decltype(n)::value;
      size_t floats = 0;
      if constexpr (kN == pg::kTile) {
        KB_TRY(pg::prepare_parity_gemm<SoftmaxEpilogue<kN>>());
        floats = pg::packed_weight_floats(plan_);
      } else {
        KB_TRY((pg::prepare_narrow_gemm<kN, SoftmaxEpilogue<kN>>()));
        floats = pg::narrow_packed_floats<kN>(plan_);
      }
      KB_CUDA_TRY(cudaMalloc(&workspace_, floats * sizeof(float)));
      return Status::ok();
    });
  }

  Status run(const ImplArgs& args, cudaStream_t stream) override {
    const float* x = conv_.input(args);
    const float* w = conv_.weight(args);
    SigmoidTail e = tail_;
    e.conv_bias = args.params[conv_bias_].data;
    e.bias = args.params[bias_].data;
    if (conv_.geometry.output_numel() == 0) return Status::ok();
    if (fast_) {
      const pg::GemmParams params{plan_, x, nullptr, args.output.data};
      return with_channel_tile(tile_, [&](auto n) {
        constexpr int kN = decltype(n)::value;
        const SoftmaxEpilogue<kN> epilogue{e};
        if constexpr (kN == pg::kTile)
          return pg::launch_parity_gemm(params, w, workspace_, epilogue, stream);
        else
          return pg::launch_narrow_gemm<kN>(params, w, workspace_, epilogue, stream);
      });
    }
    KB_TRY(gather::launch_generic(x, w, workspace_, conv_.geometry, stream));
    const int64_t plane = conv_.geometry.out[0] * conv_.geometry.out[1] * conv_.geometry.out[2];
    const int64_t pixels = conv_.geometry.batch * plane;
    const int64_t blocks = std::min<int64_t>((pixels + 255) / 256, int64_t{1} << 20);
    fallback_softmax_kernel<<<static_cast<unsigned>(blocks), 256, 0, stream>>>(
        workspace_, args.output.data, e, pixels, plane, conv_.geometry.out_channels);
    KB_CUDA_TRY(cudaGetLastError());
    return Status::ok();
  }

 private:
  gather::ConvTransposeNode conv_{"conv_transpose", "x", "conv_transpose.weight"};
  pg::ParityPlan plan_;
  SigmoidTail tail_{};
  size_t conv_bias_ = 0, bias_ = 0;
  bool fast_ = false;
  int tile_ = pg::kTile;        // channel tile of the GEMM (channel_tile)
  float* workspace_ = nullptr;  // owned: packed weights (fast) or y (fallback)
};

}  // namespace kb::custom::L2_091

KB_REGISTER_IMPLEMENTATION(L2_091, custom, kb::custom::L2_091::ConvTransposeSoftmaxBiasSigmoid)
