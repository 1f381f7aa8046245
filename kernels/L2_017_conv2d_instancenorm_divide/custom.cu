// L2_017 custom: out = instance_norm(conv2d(x, W) + conv.bias) / d, eps from the graph, d = 2.0.
//   x: (N, C_in, H, W), W: (C_out, C_in, 3, 3), conv.bias: (C_out) (unused: it cancels);
//   out: (N, C_out, Ho, Wo) fp32 NCHW (full preset: (128, 128, 126, 126)).
//   Per (n, c) plane: out = (y - mean) / sqrt(var + eps) / d, biased variance.
//
// Cost (docs/problems.md#l2_017, full preset): 301.5 GFLOP (149.8 G MACs); realistic DRAM for the
// two-kernel form 3,658 MB -> 0.85 ms; floor 4.50 ms strict fp32 FMA; 3xTF32 ~1.85 ms ideal. Best
// strict-fp32 peer 9.72 ms; goal <= 7.20 ms.
//
// Design, two kernels:
//  1. the 3xTF32 conv core (kernels/cores/conv2d_tf32x3/conv2d_core.cuh) without the conv bias
//     (the plane mean absorbs it), storing y into the output, and its kStats epilogue: each tile
//     writes the fp32 (mean, M2) of each channel over its pixels to a (N, C_out, stats slots)
//     workspace (StatsTiles): no atomics, deterministic. From 80 output columns (the full
//     preset) the core's wgmma kernel (sm_90a; tiles of 64 channels x 4 rows x 128 columns, 32
//     slots per plane at 126 x 126), else its mma.sync implicit GEMM (128 channels x 128
//     pixels). The tile statistics are formed about a pilot value and merged with Chan's
//     update (epilogue.cuh), never as raw sums of y and y^2.
//  2. normalize_planes_kernel: one CTA per (n, c) plane combines the plane's tile (mean, M2)
//     in double: sum n_t mean_t and sum (M2_t + n_t mean_t^2), then mean and E[y^2] - mean^2 in
//     double, which costs 2 log10(mean/std) of double's 16 digits (the tile statistics carry no
//     such loss), then rewrites the plane in place: (y - mean) * (rsqrt(var + eps) / d).
//     Planes of up to kWarpPlaneMaxPixels take a warp each (normalize_small_planes_kernel).
//     After the core's flat tile, which keeps no tile statistics, a warp a plane forms them from
//     y in two passes (mean, then sum (y - mean)^2, in double; normalize_planes_from_y_kernel),
//     a CTA a plane past kWarpPlaneMaxPixels (normalize_large_planes_from_y_kernel).
// Layers other than the large ones take the core's fp32 kernels (conv2d_core.cuh's "Choice" has
// the order and the rules with their measurements): small planes over all images the flat tile,
// few output channels over many pixels the few-channel kernel, small and long-K layers the
// narrow kernel.
//
// Thin planes (ncu, H100, session 42, N 53, C_in 62, C_out 63, 77 x 3: 0.80x the reference): the
// few-channel conv 40.0 us against cuDNN's 24.7 (its GEMM tiles span the pixels of several
// images) and the CTA-a-plane normalize 9.6 us for 75 values a plane (docs/kernels.md). Session
// 50 (H100): the core's flat tile, whose tiles span images too, and the warp-a-plane normalize
// from y: 0.048 -> 0.032 ms (reference 0.040).
// Batch 1 on wide images (sweep seed 54, H100: N 1, C_in 51, C_out 109, 15 x 97, 0.0605 ms
// against the reference's 0.0448): the wgmma kernel's grid was 8 CTAs (2 channel tiles x 4 row
// tiles of 13 x 95 outputs, 51% full) on 132 SMs, each walking 7 stages of 108 wgmmas alone, plus
// the weight split's launch. Session 54: the core weighs the wgmma kernel against the flat tile
// (conv2d_core.cuh, kWgmmaOverFlatRate), which runs 78 CTAs there, and its 1,235-pixel planes
// are normalized a CTA each: predicted ~0.02 ms, measured 0.027 ms, 1.66x the reference (H100,
// `kb bench L2_017 --dims ...`, /work/.device/6; 0.030 with the warp-a-plane normalize, 0.061
// forced onto the wgmma kernel, 0.069 the mma.sync tile, 0.039 the few-channel kernel).
// Predicted on the H200: conv ~4.6 ms (as L2_001) + normalize 2.1 GB of traffic ~0.6 ms
// -> ~5.2 ms (1.9x over the peer); measured 5.90 ms on mma.sync. Session 20, on the wgmma
// kernel (as L2_031: 5.15 -> 3.19 ms): **3.88 ms** (kb bench L2_017 --time-cap 2 --seed 7, A/B
// in one call: 3.897 / 3.884 against 5.903 / 5.905 ms; 2.5x the best peer).
// Accuracy: InstanceNorm divides the conv error by the plane's std (~0.17 here): conv error
// ~1e-6 -> ~1e-5 on the output vs 1e-4 allowed. The statistics do not depend on the inputs'
// offset: before (one-pass fp32 sums of y and y^2) inputs in [100, 101) put the custom 1.7e-2
// from the reference (a plane mean of hundreds of stds: E[y^2] - mean^2 in fp32 kept no
// digit); with the shifted tile moments the remaining error is the conv's own (3xTF32 ~ fp32:
// ~1e-7 of |y| ~ the plane mean, divided by the std), which the fp32 reference shares:
// tests/gpu/robustness_test.cu measures both against the golden model. Session 20, the wgmma
// kernel at the `robust` preset (kb bench kernelbench22 --seed 7): shift (x + 100) the reference
// 2.08x the tolerance, the custom 1.85x (ill_conditioned: fp32's own cancellation, the custom
// the closer); scale 0.015x / 0.019x; centered 0.005x / 0.012x.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "common/cuda/cuda_check.h"
#include "kernels/cores/block_reduce.cuh"
#include "kernels/cores/conv2d_tf32x3/conv2d_core.cuh"
#include "kernels/implementation.h"

namespace kb::custom::L2_017 {

constexpr int kNormThreads = 256;
constexpr int kNormWarps = kNormThreads / 32;

// The raw conv (no bias) and its per-tile plane sums.
struct PlaneStats {
  static constexpr bool kStats = true;
  static constexpr bool kPromotedSums = false;
  struct Row {};
  __device__ Row row(int) const { return {}; }
  __device__ float operator()(const Row&, float conv) const { return conv; }
};

// Plane `plane`'s sums over its tiles' statistics, tiles first, first + step, ...: s = sum n_t
// mean_t and q = sum (M2_t + n_t mean_t^2), in double.
__device__ __forceinline__ void plane_sums(const float2* stats, conv2d_tf32x3::StatsTiles tiles,
                                           int64_t plane, int first, int step, double& s,
                                           double& q) {
  s = 0.0, q = 0.0;
  for (int i = first; i < tiles.slots; i += step) {  // tile i: (mean, M2), n_t pixels
    const float2 v = stats[plane * tiles.slots + i];
    const double n_t = tiles.count(i), mean_t = v.x;
    s += n_t * mean_t;
    q += v.y + n_t * mean_t * mean_t;
  }
}

// The plane's (mean, scale) from its mean and biased variance.
__device__ __forceinline__ float2 coefficients(double mean, double var, float eps,
                                               float inv_divisor) {
  return make_float2(static_cast<float>(mean),
                     static_cast<float>(1.0 / sqrt((var > 0.0 ? var : 0.0) + eps)) * inv_divisor);
}
// ... from its sums: mean and E[y^2] - mean^2 in double.
__device__ __forceinline__ float2 plane_coefficients(double s, double q, int hw, float eps,
                                                     float inv_divisor) {
  const double mean = s / hw;
  return coefficients(mean, q / hw - mean * mean, eps, inv_divisor);
}

// v summed over the warp by a fixed shuffle tree (every lane gets the sum).
__device__ __forceinline__ double warp_sum(double v) {
  for (int off = 16; off > 0; off /= 2) v += __shfl_xor_sync(0xffffffffu, v, off);
  return v;
}

// row[i] = (row[i] - mean) * scale for the plane's elements first, first + step, ... (vec: in
// float4s, hw % 4 == 0 and row 16-byte aligned).
__device__ __forceinline__ void normalize_row(float* row, int hw, float2 coef, bool vec, int first,
                                              int step) {
  const float mean = coef.x, scale = coef.y;
  if (vec) {
    float4* row4 = reinterpret_cast<float4*>(row);
    for (int i = first; i < hw / 4; i += step) {
      float4 v = row4[i];
      v = make_float4((v.x - mean) * scale, (v.y - mean) * scale, (v.z - mean) * scale,
                      (v.w - mean) * scale);
      row4[i] = v;
    }
  } else {
    for (int i = first; i < hw; i += step) row[i] = (row[i] - mean) * scale;
  }
}

// One CTA per plane (blockIdx.x = n * C_out + c). y: (N*C_out, hw), stats: (N*C_out,
// tiles.slots), laid out as the conv core says (StatsTiles).
__global__ void __launch_bounds__(kNormThreads)
    normalize_planes_kernel(float* y, const float2* stats, conv2d_tf32x3::StatsTiles tiles, int hw,
                            float eps, float inv_divisor, bool vec) {
  __shared__ double red[2][kNormWarps];
  __shared__ float2 coef;  // mean, scale
  const int64_t plane = blockIdx.x;
  const int t = static_cast<int>(threadIdx.x);
  double s, q;
  plane_sums(stats, tiles, plane, t, kNormThreads, s, q);
  // Block sums in thread 0, fixed order; two scratch arrays: no barrier between the two.
  s = cores::block_sum<kNormThreads>(s, red[0]);
  q = cores::block_sum<kNormThreads>(q, red[1]);
  if (t == 0) coef = plane_coefficients(s, q, hw, eps, inv_divisor);
  __syncthreads();
  normalize_row(y + plane * hw, hw, coef, vec, t, kNormThreads);
}

// Small planes (hw <= kWarpPlaneMaxPixels), a warp each: kNormWarps planes a CTA, the sums
// over the warp by a fixed shuffle tree. The CTA a plane left ~3/4 of its threads idle on the
// 75-pixel planes of N 53, C_in 62, C_out 63, 77 x 3: 9.6 of the custom's 49.6 us (ncu, H100,
// session 42), where PyTorch's row kernel normalizes in 5.3 (since session 50 that layer's
// conv is the flat tile's, normalized by normalize_planes_from_y_kernel). Session 43 (H100, `kb
// bench L2_017
// --dims D`, one lease, custom ms, CTA a plane -> warp a plane, reference in brackets): that
// layer 0.050 -> 0.047 [0.040]; N 30, C_in 20, C_out 63, 77 x 3 0.025 -> 0.024 [0.025]; N 16,
// C_in 32, C_out 64, 22 x 22 (484 pixels) 0.037 -> 0.038 [0.035]; N 1, C_in 3, C_out 5, 7 x 5
// 0.009 both.
constexpr int kWarpPlaneMaxPixels = 512;
__global__ void __launch_bounds__(kNormThreads)
    normalize_small_planes_kernel(float* y, const float2* stats, conv2d_tf32x3::StatsTiles tiles,
                                  int64_t planes, int hw, float eps, float inv_divisor, bool vec) {
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const int64_t plane = int64_t{blockIdx.x} * kNormWarps + threadIdx.x / 32;
  if (plane >= planes) return;  // whole warps
  double s, q;
  plane_sums(stats, tiles, plane, lane, 32, s, q);
  normalize_row(y + plane * hw, hw,
                plane_coefficients(warp_sum(s), warp_sum(q), hw, eps, inv_divisor), vec, lane, 32);
}

// Planes whose conv kept no tile statistics (the core's flat tile: stats_tiles() has no slots),
// a warp each, kNormWarps planes a CTA: the plane's mean and M2 = sum (y - mean)^2 in two passes
// over y (double sums over the warp by a fixed shuffle tree), then the normalized plane written.
// Correct at any hw; its passes hit L1 on small planes. Past 512 pixels (the flat tile's layers of
// 17-32 channels and small grids) it stayed ahead of the tile's path: session 51, N 88, C_in 49,
// C_out 18, 83 x 49, conv and this 0.424 ms against 0.786 (conv2d_core.cuh, kTileOverFlatRate);
// since session 54 planes past kWarpPlaneMaxPixels take a CTA each (the kernel below).
__global__ void __launch_bounds__(kNormThreads)
    normalize_planes_from_y_kernel(float* y, int64_t planes, int hw, float eps, float inv_divisor,
                                   bool vec) {
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const int64_t plane = int64_t{blockIdx.x} * kNormWarps + threadIdx.x / 32;
  if (plane >= planes) return;  // whole warps
  float* row = y + plane * hw;
  double s = 0.0;
  for (int i = lane; i < hw; i += 32) s += row[i];
  const double mean = warp_sum(s) / hw;
  double q = 0.0;
  for (int i = lane; i < hw; i += 32) {
    const double d = row[i] - mean;
    q += d * d;
  }
  normalize_row(row, hw, coefficients(mean, warp_sum(q) / hw, eps, inv_divisor), vec, lane, 32);
}

// Planes past kWarpPlaneMaxPixels whose conv kept no tile statistics, a CTA each (blockIdx.x = n
// * C_out + c): the warp form's two passes over y by the block's threads (double sums over the
// block, fixed order), then the plane rewritten. The warp form leaves a batch-1 layer's few planes
// on a few SMs, each lane walking hw / 32 values three times: N 1, C_in 51, C_out 109, 15 x 97
// (109 planes of 1,235 pixels, the flat tile's since the wgmma model) in 14 CTAs, 39 values a
// lane; here 109 CTAs, 5 a thread: 0.030 -> 0.027 ms for conv and normalize (H100, session 54;
// N 88, C_in 49, C_out 18, 83 x 49: 0.424 ms either way).
__global__ void __launch_bounds__(kNormThreads)
    normalize_large_planes_from_y_kernel(float* y, int hw, float eps, float inv_divisor, bool vec) {
  __shared__ double red[2][kNormWarps];
  __shared__ double plane_mean;
  __shared__ float2 coef;  // mean, scale
  const int t = static_cast<int>(threadIdx.x);
  float* row = y + int64_t{blockIdx.x} * hw;
  double s = 0.0;
  for (int i = t; i < hw; i += kNormThreads) s += row[i];
  s = cores::block_sum<kNormThreads>(s, red[0]);
  if (t == 0) plane_mean = s / hw;
  __syncthreads();
  const double mean = plane_mean;
  double q = 0.0;
  for (int i = t; i < hw; i += kNormThreads) {
    const double d = row[i] - mean;
    q += d * d;
  }
  q = cores::block_sum<kNormThreads>(q, red[1]);  // red[1]: red[0] is not touched again
  if (t == 0) coef = coefficients(mean, q / hw, eps, inv_divisor);
  __syncthreads();
  normalize_row(row, hw, coef, vec, t, kNormThreads);
}

class ConvInstanceNorm final : public Implementation {
 public:
  ~ConvInstanceNorm() override { KB_CUDA_WARN(cudaFree(stats_)); }

  Status setup(const ProblemInstance& p, cudaStream_t) override {
    x_ = input_index(p, "x");
    weight_ = param_index(p, "conv.weight");
    eps_ = static_cast<float>(p.number("instance_norm", "eps"));
    inv_divisor_ = static_cast<float>(1.0 / p.number("divide", "value"));
    KB_TRY(conv_.setup<PlaneStats>(p, "conv"));
    const conv2d_tf32x3::ConvGeometry& g = conv_.geometry();
    planes_ = int64_t{g.n} * g.c_out;
    if (planes_ > 0x7fffffff) return Status::failed_precondition("L2_017 custom: too many planes");
    const int slots = conv_.stats_tiles().slots;
    if (slots > 0) KB_CUDA_TRY(cudaMalloc(&stats_, planes_ * slots * sizeof(float2)));
    return Status::ok();
  }

  Status run(const ImplArgs& args, cudaStream_t stream) override {
    const conv2d_tf32x3::ConvGeometry& g = conv_.geometry();
    float* y = args.output.data;  // (N, C_out, Ho, Wo): conv first, then normalized in place
    KB_TRY(conv_.run(args.inputs[x_].data, args.params[weight_].data, y, stats_, PlaneStats{},
                     stream));
    const bool vec = g.hw_out() % 4 == 0 && reinterpret_cast<uintptr_t>(y) % 16 == 0;
    const int64_t warp_blocks = (planes_ + kNormWarps - 1) / kNormWarps;
    if (conv_.stats_tiles().slots == 0 && g.hw_out() > kWarpPlaneMaxPixels) {
      normalize_large_planes_from_y_kernel<<<static_cast<unsigned>(planes_), kNormThreads, 0,
                                             stream>>>(y, g.hw_out(), eps_, inv_divisor_, vec);
    } else if (conv_.stats_tiles().slots == 0) {
      normalize_planes_from_y_kernel<<<static_cast<unsigned>(warp_blocks), kNormThreads, 0,
                                       stream>>>(y, planes_, g.hw_out(), eps_, inv_divisor_, vec);
    } else if (g.hw_out() <= kWarpPlaneMaxPixels) {
      normalize_small_planes_kernel<<<static_cast<unsigned>(warp_blocks), kNormThreads, 0,
                                      stream>>>(y, stats_, conv_.stats_tiles(), planes_, g.hw_out(),
                                                eps_, inv_divisor_, vec);
    } else {
      normalize_planes_kernel<<<static_cast<unsigned>(planes_), kNormThreads, 0, stream>>>(
          y, stats_, conv_.stats_tiles(), g.hw_out(), eps_, inv_divisor_, vec);
    }
    KB_CUDA_TRY(cudaGetLastError());
    return Status::ok();
  }

 private:
  conv2d_tf32x3::Conv2dTf32x3 conv_;
  size_t x_ = 0, weight_ = 0;
  float eps_ = 1e-5f, inv_divisor_ = 1.0f;
  int64_t planes_ = 0;
  float2* stats_ = nullptr;  // (N, C_out, stats slots): owned, freed by the destructor
};

}  // namespace kb::custom::L2_017

KB_REGISTER_IMPLEMENTATION(L2_017, custom, kb::custom::L2_017::ConvInstanceNorm)
