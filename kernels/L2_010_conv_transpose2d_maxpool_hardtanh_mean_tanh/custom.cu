// L2_010 custom: out = tanh(mean_hw(hardtanh(maxpool2x2(conv_transpose2d(x) + bias), -1, 1))).
//   x: (N, C_in, H, W); weight: (C_in, C_out, 3, 3); bias: (C_out); out: (N, C_out, 1, 1), fp32
//   NCHW. ConvTranspose2d(stride 1, padding 1) keeps H x W; MaxPool2d(2, 2) in floor mode;
//   out[n,c] = tanh(1/(Hp Wp) sum_{i,j} clamp(max_{2x2} y[n,c,2i+a,2j+b] + bias[c], -1, 1)).
//   Full preset: (128, 64, 256, 256) -> conv (128, 64, 256, 256) -> pool (.., 128, 128).
//
// Cost (docs/problems.md#l2_010, full preset): 616.6 GFLOP; min DRAM 2,148 MB -> 0.50 ms;
// floor 9.20 ms strict fp32 FMA (compute-bound); 3xTF32 ideal ~3.8 ms. Reference 12.6-12.9 ms,
// best strict-fp32 peer 12.31 ms (eager, docs/baselines.md), goal <= 10.26 ms (peer / 1.2).
//
// Design: ConvTranspose2d with stride 1 is conv2d with the flipped, transposed weight and padding
// dil*(k-1) - pad. The 2.1 GB conv output never exists. C_out <= 8 takes the narrow path (plain
// fp32, narrow.cuh, narrow3x3.cuh and thin.cuh), and so does C_out <= 16 on a 3x3 kernel
// (dilation 1) where the wgmma path does not run (narrow3x3.cuh in groups of 8 channels: mma.sync's
// 64-channel tiles would be 4-7x padding) or the pooled width is at most 7 (thin.cuh), and C_out
// 17..64 at a pooled width of at most 7 while the conv is small (thin.cuh: N 2Hp 2Wp C_out <=
// 2^19); otherwise three tensor-core paths, three kernels each:
//   fast on wgmma (3x3, dilation 1, padding 1, W >= 80, sm_90a code loaded: the full preset),
//   kernels/cores/conv3x3_wgmma/conv3x3_wgmma.cuh with the pooling epilogue of
//   kernels/cores/conv2d_pool_tf32x3/conv3x3_pool_wgmma.cuh: the same three steps as the next
//     path with 64-channel x 4-row x 128-column tiles, m64n128k8 TF32 wgmmas with both operands
//     in shared memory (the patch as 16-byte pixels: the 9 taps read it at 9 start addresses),
//     one persistent CTA of two warpgroups per SM. Measured (session 19, `kb bench
//     kernelbench22 --time-cap 3 --seed 7`): **5.78 ms** against 10.13 ms for the next path
//     (106.6 TFLOP/s, 0.63x the fp32 floor, 2.13x the best strict-fp32 peer); max |err| 2.9e-6.
//   fast on mma.sync (3x3, dilation 1, padding 1: narrower images, or no sm_90a code),
//   kernels/cores/conv2d_pool_tf32x3/conv3x3_pool_patch.cuh:
//     1. split_weight_kernel: flip + 3xTF32 split + A-fragment order, once per call (295 KB).
//     2. conv3x3_pool_kernel: persistent, one 256-thread CTA per SM; tiles of 64 channels x
//        16 x 16 pixels; per 8-channel chunk the 18 x 18 input patch is loaded once, split once
//        and read by all 9 taps from shared memory; epilogue max4 -> +bias (max and +bias commute
//        exactly) -> clamp -> fixed-order per-tile sum: partial (N, C_out, tiles), 8 MB.
//   generic (any other stride-1 kernel / dilation / padding), generic.cuh on
//   kernels/cores/conv2d_pool_tf32x3/conv2d_pool_core.cuh:
//     1. flip_weight; 2. conv_pool_kernel: the im2col 3xTF32 core (64 x 128 tiles, 4-byte gathers).
//   3. finish_kernel: one warp per (n, co): tanh(sum(partial) / (Hp*Wp)), fixed order.
//   narrow (C_out <= 8, or <= 64 as above): one thread per pooled window, 4 x C_out fp32 FMA
//     accumulators, then finish_kernel. 3x3 with dilation 1 (the problem's geometry), pooled
//     widths of 1..7 (1..4 at C_out <= 2): thin.cuh, threads along the flattened pooled grid of
//     an image (any width fills them), the 4 x 4 input window read straight from global memory,
//     input channels split over up to 8 warp groups, C_out past 8 in ceil(C_out / 8) groups of
//     up to 8. Measured (H100, session 39; predicted ~10 us): 19 us against the reference's 52-53
//     at N 124, C_in 25, C_out 3, 239 x 3, where narrow3x3.cuh took 191. Predicted, not yet
//     measured: 20-25 us against 37 at N 2, C_in 62, C_out 58, 217 x 5 (mma.sync: 52).
//     Wider, 3x3 with dilation 1:
//     narrow3x3.cuh (tiles of the pooled width split evenly, at most 32 columns, input channels
//     split over up to 8 thread groups when the grid is under a wave, double-buffered chunks,
//     C_out as a template argument, 8-channel groups past 8) where its tile is under 32 columns,
//     it splits the channels or groups them; otherwise the older narrow3x3_pool_kernel
//     (narrow.cuh: 8 x 32 pooled positions, chunks of 8 channels staged one at a time), measured
//     the faster there; any other stride-1 geometry: narrow_conv_pool_kernel (narrow.cuh),
//     straight from global memory.
//     Session 22 (`kb bench L2_010 --dims ... --time-cap 1 --trials 3 --seed 7`, custom us,
//     narrow3x3_pool_kernel -> narrow3x3.cuh): 56 -> 39 at N 14, C_in 50, C_out 5, 95 x 25
//     (0.82x -> 1.8-2.3x the reference), 82 -> 25 at N 3, C_in 64, C_out 8, 40 x 40, 33 -> 16
//     at N 1, C_in 23, C_out 7, 5 x 101, 43 -> 42 at N 128, C_in 16, C_out 4, 64 x 20.
//     Session 54: at N 101, C_in 54, C_out 1, 247 x 35 (pooled 123 x 17) the 32-column tiles of
//     narrow3x3_pool_kernel ran 0.304 ms against the reference's 0.2685 (0.88x, H100 sweep,
//     seed 54), 15 of 32 columns idle. thin.cuh now takes C_out <= 16 up to a pooled width of 33
//     (measured ~2x faster there, thin.cuh's kMaxWpNarrowCo); past that narrow3x3.cuh's tiles
//     are fitted to the pooled width (at most 32 columns, split evenly): H100, `kb bench L2_010
//     --dims ...`, /work/.device/6, 32/16-column -> fitted tiles, custom ms: N 32, C_in 32, C_out
//     8, 100 x 200 (Wp 100) 0.195 -> 0.173; N 46, C_in 44, C_out 2, 83 x 125 (Wp 62) 0.127 ->
//     0.120; N 128, C_in 64, C_out 8, 128 x 128 (Wp 64, 32 columns either way) 0.843 / 0.842.
//
// Cost model of the fast path (full preset): 906M mma.sync m16n8k8 (3 per product tile). The
// im2col version issued ~5 instructions per MMA (split of A and B after every shared load, one
// 4-byte cp.async gather per im2col element) and ran 46 TFLOP/s (v1, 13.3 ms). Here per tap and
// warp: 12 LDS.128 + 48 MMA (~1.3 instructions per MMA; staging adds ~0.3), so the tensor pipe
// should bound it: L1_003 reached 69 TFLOP/s (~87% of the mma.sync TF32 rate, ~8 clocks per
// m16n8k8 per SM sub-partition) at ~4 instructions per MMA. Shared memory: 6 KB per warp per tap
// = ~55% of the 128 B/clock at that rate. L2 traffic: 295 KB of weights + 83 KB of patch per tile
// (~1 TB/s in all), DRAM ~2.2 GB. Two warps per sub-partition (118 KB of shared memory -> one CTA
// per SM) and one barrier per 432 MMAs per warp.
// Predicted on the H200: 8.5-9.5 ms (65-72 TFLOP/s), 80-90% of the mma.sync TF32 pipe; the
// risk is latency with only 2 warps per sub-partition. Measured: 10.12 ms (2026-11-30, v2,
// docs/kernels.md; 60.9 TFLOP/s), 10.125 ms in docs/bench-h200-2026-12-02b.json (1.10x the
// floor, 1.22x the peer): under the 10.26 ms goal. v1 (im2col core, 64-row tiles) measured
// 13.3 ms, 0.97x the reference. Shape sweep (docs/kernels.md): at C_out 2 the 64-channel tiles
// waste 31 of 32 MMAs; the narrow path brought 0.29x to 0.75-0.81x the reference, still a miss.
// Session 7: the narrow path of the 3x3 layer stages its input patch in shared memory
// (narrow3x3_pool_kernel; its figures in narrow.cuh). Sweep (seed 2026) worst 1.26x: the sweep
// goal is met.
//
// Accuracy: 3xTF32 (flipped weights and the input patch split once into big + small, 3 MMAs
// per product) ~ fp32 (K = 576, |conv| < 1); the sum of a tile stays in the MMA accumulator. Max,
// +bias and the clamp are exact; the mean sums 16,384 clamped values (|v| <= 1) in fp32 in a
// fixed order (per tile, then per plane), an error ~1e-7 after the division, and tanhf (accurate,
// slope <= 1) does not amplify it. No statistics. Measured max |err| 2.9e-6 at the full preset
// (bench 2026-12-02b) vs 1e-4 + 1e-4 |r| allowed. Robustness trials (small preset, seed 7, vs
// the golden model): shift (x + 100) 0.0004x the tolerance (reference the same), scale (x 1000)
// 0.017x (reference 0.013x), centered 0.0007x (0.0002x).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/cuda/cuda_check.h"
#include "common/cuda/device_query.h"
#include "kernels/L2_010_conv_transpose2d_maxpool_hardtanh_mean_tanh/generic.cuh"
#include "kernels/L2_010_conv_transpose2d_maxpool_hardtanh_mean_tanh/narrow.cuh"
#include "kernels/L2_010_conv_transpose2d_maxpool_hardtanh_mean_tanh/narrow3x3.cuh"
#include "kernels/L2_010_conv_transpose2d_maxpool_hardtanh_mean_tanh/thin.cuh"
#include "kernels/cores/conv2d_pool_tf32x3/conv2d_pool_core.cuh"
#include "kernels/cores/conv2d_pool_tf32x3/conv3x3_pool_patch.cuh"
#include "kernels/cores/conv2d_pool_tf32x3/conv3x3_pool_wgmma.cuh"
#include "kernels/cores/conv3x3_wgmma/conv3x3_wgmma.cuh"
#include "kernels/cores/tf32x3/wgmma.cuh"
#include "kernels/implementation.h"

namespace kb::custom::L2_010 {

using namespace kb::custom::conv2d_pool_tf32x3;
namespace patch = kb::custom::conv3x3_pool_patch;
namespace wgp = kb::custom::conv3x3_wgmma;
using kb::custom::conv3x3_pool_wgmma::PoolSumEpilogue;

// ---- every path's last step ----

// out[nc] = tanh(sum_t partial[nc][t] / count); one warp per (n, co). out: (N*C_out).
__global__ void finish_kernel(const float* __restrict__ partial, float* __restrict__ out,
                              int planes, int tiles, float count) {
  const int warp = static_cast<int>((blockIdx.x * blockDim.x + threadIdx.x) >> 5);
  const int lane = threadIdx.x & 31;
  if (warp >= planes) return;
  const float* row = partial + int64_t{warp} * tiles;
  float s = 0.0f;
  for (int t = lane; t < tiles; t += 32) s += row[t];
#pragma unroll
  for (int m = 16; m > 0; m >>= 1) s += __shfl_xor_sync(0xffffffffu, s, m);
  if (lane == 0) out[warp] = tanhf(s / count);
}

// ---- host side ----

class ConvPoolMeanTanh final : public Implementation {
 public:
  ~ConvPoolMeanTanh() override {
    KB_CUDA_WARN(cudaFree(taps_));
    KB_CUDA_WARN(cudaFree(w_t_));
    KB_CUDA_WARN(cudaFree(partial_));
    KB_CUDA_WARN(cudaFree(w_split_));
  }

  Status setup(const ProblemInstance& p, cudaStream_t) override {
    x_ = input_index(p, "x");
    weight_ = param_index(p, "conv_transpose.weight");
    bias_ = param_index(p, "conv_transpose.bias");
    KB_TRY(read_geometry(p));
    a_.lo = static_cast<float>(p.number("hardtanh", "min_val"));
    a_.hi = static_cast<float>(p.number("hardtanh", "max_val"));
    bool wgmma_loaded = false;
    KB_CUDA_TRY(tf32x3::wgmma::loaded_here(&wgmma_loaded));
    wgmma_ = fast_ && wgmma_loaded && a_.w_in >= wgp::Conv3x3Wgmma::kMinWidth;
    // C_out <= 8, and 9..16 in channel groups (narrow3x3.cuh) where the 64-channel tiles of
    // mma.sync or the generic core would run (wgmma, the faster tensor path, keeps its images;
    // not measured against it) on
    // pooled rows of at least half the narrow tile's 16 columns. H100, `kb bench L2_010 --dims
    // ... --time-cap 0.4 --trials 3`, mma.sync -> groups, custom ms (session 31): 0.215 -> 0.137
    // at N 100, C_in 20, C_out 14, 50 x 60; 0.036 -> 0.028 at C_out 9, 45 x 33; 0.053 -> 0.048
    // at C_out 12, 64 x 64; 0.293 -> 0.306 at N 32, C_in 64, C_out 16, 70 x 70; and at a pooled
    // width of 1 (N 81, C_in 57, C_out 15, 23 x 3) 0.092 -> 0.137, 1 of 16 columns live.
    // Pooled widths of 1..33 (thin.cuh: threads along the flattened pooled grid, any N) take every
    // C_out of 1..16 there (thin::takes; ~2x the tiles' speed at widths 5..33, session 54), ahead
    // of all of these
    // (wgmma needs 80 columns, static_assert below), and C_out 17..64 while N 2Hp 2Wp C_out <=
    // 2^19 (thin::kMaxWideOutputs: a model against mma.sync's one tile per SM running C_in in
    // series; predicted 20-25 us against mma.sync's 52 and the reference's 37 at N 2, C_in 62,
    // C_out 58, 217 x 5, measured 19 (H100, session 39, /work/.device/4; mma.sync / thin /
    // reference us: 36 / 15 / 31 at N 2, C_in 35, C_out 37, 69 x 5, 52 / 19 / 36 at N 4, C_in 64,
    // C_out 32, 100 x 9, 21 / 21 / 32 at N 8, C_in 16, C_out 64, 64 x 15 near the bound); larger
    // layers keep mma.sync, predicted the faster from a pooled width of ~4). 16-column tiles run
    // over half empty there, and at a width of 1 they were the 0.38x of the sweep (N 124, C_in 25,
    // C_out 3, 239 x 3: 191 us against 73.5), as mma.sync's 16 x 16-pixel tiles were slow at 23 x 3
    // (above). H100, session 39 (`kb bench L2_010 --dims ...`, main / thin / reference us,
    // /work/.device/3): 191 / 19 / 52 there, 92 / 21 / 64-108 at N 81, C_in 57, C_out 15, 23 x 3,
    // 42 / 20 / 62 at N 128, C_in 16, C_out 4, 64 x 13, 29 / 19 / 29-76 at N 3, C_in 64, C_out 8,
    // 40 x 14.
    const bool grouped = kh_ == 3 && kw_ == 3 && dil_ == 1 && a_.c_out <= narrow3x3::kMaxCo &&
                         2 * a_.wp >= narrow3x3::kNarrowTileX;
    static_assert(
        2 * std::max(thin::kMaxWp, thin::kMaxWpNarrowCo) + 1 < wgp::Conv3x3Wgmma::kMinWidth,
        "thin.cuh never takes an image that the wgmma path runs");
    thin_ = thin::takes(kh_, kw_, dil_, n_, a_.c_out, hp_, a_.wp);
    narrow_ = thin_ || (n_ <= 65535 && (a_.c_out <= kNarrowCo || (grouped && !wgmma_)));
    if (narrow_) return setup_narrow();
    if (fast_) return setup_fast();
    const std::vector<int> table = build_tap_table(c_in_, a_.h, a_.w_in, kh_, kw_, dil_);
    const size_t partial_floats = size_t(n_) * a_.c_out * std::max(a_.col_tiles, 1);
    KB_CUDA_TRY(cudaMalloc(&taps_, table.size() * sizeof(int)));
    KB_CUDA_TRY(
        cudaMemcpy(taps_, table.data(), table.size() * sizeof(int), cudaMemcpyHostToDevice));
    KB_CUDA_TRY(cudaMalloc(&w_t_, size_t(a_.c_out) * a_.k * sizeof(float)));
    KB_CUDA_TRY(cudaMalloc(&partial_, partial_floats * sizeof(float)));
    for (auto kernel : {&conv_pool_kernel<true>, &conv_pool_kernel<false>}) {
      KB_CUDA_TRY(
          cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes));
      KB_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
                                       cudaSharedmemCarveoutMaxShared));
    }
    return Status::ok();
  }

  Status run(const ImplArgs& args, cudaStream_t stream) override {
    if (narrow_) return run_narrow(args, stream);
    if (fast_) return run_fast(args, stream);
    PoolConvArgs a = a_;
    a.x = args.inputs[x_].data;
    a.w = w_t_;
    a.bias = args.params[bias_].data;
    a.taps = taps_;
    a.partial = partial_;
    const int weight_floats = a.c_out * a.k;
    flip_weight_kernel<<<(weight_floats + 255) / 256, 256, 0, stream>>>(
        args.params[weight_].data, w_t_, c_in_, a.c_out, kh_, kw_);
    KB_CUDA_TRY(cudaGetLastError());
    const unsigned grid = static_cast<unsigned>(n_ * a.col_tiles * a.co_tiles);
    if (grid > 0) {  // no pooling window at all: the mean is 0 / 0 = NaN, as in PyTorch
      if (a.k % 4 == 0)
        conv_pool_kernel<true><<<grid, kThreads, kSmemBytes, stream>>>(a);
      else
        conv_pool_kernel<false><<<grid, kThreads, kSmemBytes, stream>>>(a);
      KB_CUDA_TRY(cudaGetLastError());
    }
    const int planes = n_ * a.c_out;  // out: (N, C_out, 1, 1)
    finish_kernel<<<(planes + 7) / 8, 256, 0, stream>>>(partial_, args.output.data, planes,
                                                        a.col_tiles, float(a.cols_total / 4));
    KB_CUDA_TRY(cudaGetLastError());
    return Status::ok();
  }

 private:
  // ---- narrow path: C_out <= 8, <= 16 on 3x3 kernels (no wgmma, or pooled width <= 33), or
  // <= 64 on small 3x3 convs of pooled width <= 7 (thin::takes) ----

  Status setup_narrow() {
    NarrowArgs& g = narrow_args_;
    g.c_in = c_in_, g.c_out = a_.c_out, g.h = a_.h, g.w = a_.w_in, g.kh = kh_, g.kw = kw_;
    // The transposed conv's own padding (a_.ph/pw are the equivalent conv's, dil*(k-1) - pad).
    g.dil = dil_, g.pad_h = dil_ * (kh_ - 1) - a_.ph, g.pad_w = dil_ * (kw_ - 1) - a_.pw;
    g.hp = hp_, g.wp = a_.wp;
    patch_narrow_ = !thin_ && kh_ == 3 && kw_ == 3 && dil_ == 1;
    split_narrow_ = false;
    if (patch_narrow_) {
      KB_ASSIGN_OR_RETURN(const int sms, cuda::sm_count());
      split_plan_ = narrow3x3::plan(n_, c_in_, g.c_out, g.h, g.w, g.pad_h, g.pad_w, hp_, a_.wp, sms,
                                    a_.lo, a_.hi);
      // 32-column tiles without a channel split are narrow3x3_pool_kernel's own work, and it was
      // the faster there (N 128, C_in 64, C_out 8, 128 x 128: 0.841 against 0.933 ms; N 46,
      // C_in 44, C_out 2, 83 x 125: 0.126 / 0.124; session 22). plan() fits its tiles to the
      // pooled width (at most 32 columns), so only widths whose even split is 32 columns (63-64,
      // 94-96, ...; thin.cuh takes 32) stay there; narrower tiles replaced idle columns (session
      // 54: Wp 62 and 100 now take narrow3x3.cuh at 31 and 25 columns, 5-11% faster, above).
      split_narrow_ = split_plan_.args.splits > 1 || split_plan_.args.tile_x < kPatchTileX ||
                      g.c_out > kNarrowCo;  // channel groups: narrow3x3.cuh only
    }
    if (thin_) {
      KB_ASSIGN_OR_RETURN(const int sms, cuda::sm_count());
      KB_ASSIGN_OR_RETURN(thin_args_, thin::plan(n_, c_in_, g.c_out, g.h, g.w, g.pad_h, g.pad_w,
                                                 hp_, a_.wp, sms, a_.lo, a_.hi));
      g.tiles = thin_args_.tiles;
    } else if (split_narrow_) {
      KB_TRY(narrow3x3::configure(split_plan_));
      g.tiles = split_plan_.args.tiles;
    } else if (patch_narrow_) {
      patch_tiles_x_ = (a_.wp + kPatchTileX - 1) / kPatchTileX;
      g.tiles = (hp_ + kPatchTileY - 1) / kPatchTileY * patch_tiles_x_;
    } else {
      g.tiles = (hp_ * a_.wp + kNarrowThreads - 1) / kNarrowThreads;
    }
    g.lo = a_.lo, g.hi = a_.hi;
    KB_CUDA_TRY(
        cudaMalloc(&partial_, std::max<size_t>(size_t(n_) * g.c_out * g.tiles, 1) * sizeof(float)));
    return Status::ok();
  }

  Status run_narrow(const ImplArgs& args, cudaStream_t stream) {
    NarrowArgs g = narrow_args_;
    g.x = args.inputs[x_].data;
    g.weight = args.params[weight_].data;
    g.bias = args.params[bias_].data;
    g.partial = partial_;
    if (g.tiles > 0 &&
        n_ > 0) {  // no pooling window at all: the mean is 0 / 0 = NaN, as in PyTorch
      const dim3 grid(static_cast<unsigned>(g.tiles), static_cast<unsigned>(n_));
      if (thin_) {  // grid (N tiles, co_groups): any N
        narrow3x3::Args t = thin_args_;
        t.x = g.x, t.weight = g.weight, t.bias = g.bias, t.partial = g.partial;
        KB_TRY(thin::launch(t, n_, stream));
      } else if (split_narrow_) {
        narrow3x3::Args s = split_plan_.args;
        s.x = g.x, s.weight = g.weight, s.bias = g.bias, s.partial = g.partial;
        KB_TRY(narrow3x3::launch(s, split_plan_.smem_bytes, n_, stream));
      } else if (patch_narrow_) {
        narrow3x3_pool_kernel<<<grid, kNarrowThreads, 0, stream>>>(g, patch_tiles_x_);
      } else {
        narrow_conv_pool_kernel<<<grid, kNarrowThreads, 0, stream>>>(g);
      }
      KB_CUDA_TRY(cudaGetLastError());
    }
    const int planes = n_ * g.c_out;
    finish_kernel<<<(planes + 7) / 8, 256, 0, stream>>>(partial_, args.output.data, planes, g.tiles,
                                                        float(int64_t{hp_} * a_.wp));
    KB_CUDA_TRY(cudaGetLastError());
    return Status::ok();
  }

  // ---- fast path: 3x3, dilation 1, padding 1 (conv3x3_pool_patch.cuh) ----

  Status setup_fast() {
    if (wgmma_) return setup_wgmma();
    patch::PatchArgs& f = f_;
    f.c_in = c_in_, f.c_out = a_.c_out, f.h = a_.h, f.w = a_.w_in;
    f.hp = hp_;
    f.wp = a_.wp;
    f.chunks = (c_in_ + patch::kChunkCi - 1) / patch::kChunkCi;
    f.co_tiles = (a_.c_out + patch::kTileCo - 1) / patch::kTileCo;
    f.tiles_h = (2 * f.hp + patch::kTileRows - 1) / patch::kTileRows;
    f.tiles_w = (2 * f.wp + patch::kTileCols - 1) / patch::kTileCols;
    const int64_t tiles = int64_t{n_} * f.co_tiles * f.tiles_h * f.tiles_w;
    if (tiles > 0x7fffffff) return Status::failed_precondition("L2_010 custom: too many tiles");
    f.tiles_total = static_cast<int>(tiles);
    f.lo = a_.lo, f.hi = a_.hi;
    const size_t w_floats = size_t(f.co_tiles) * f.chunks * patch::kAStageFloats;
    const size_t partial_floats = size_t(n_) * f.c_out * std::max(f.tiles_h * f.tiles_w, 1);
    KB_CUDA_TRY(cudaMalloc(&w_split_, w_floats * sizeof(float)));
    KB_CUDA_TRY(cudaMalloc(&partial_, partial_floats * sizeof(float)));
    KB_CUDA_TRY(cudaFuncSetAttribute(patch::conv3x3_pool_kernel,
                                     cudaFuncAttributeMaxDynamicSharedMemorySize,
                                     patch::kSmemBytes));
    KB_ASSIGN_OR_RETURN(const int sms, cuda::sm_count());
    int per_sm = 0;
    KB_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, patch::conv3x3_pool_kernel,
                                                              patch::kThreads, patch::kSmemBytes));
    if (per_sm < 1)
      return Status::failed_precondition("L2_010 custom: fast kernel does not fit an SM");
    grid_ = static_cast<unsigned>(std::min<int64_t>(tiles, int64_t{sms} * per_sm));
    return Status::ok();
  }

  // ---- fast path on wgmma (sm_90a), images of 80 columns or more (conv3x3_pool_wgmma.cuh) ----

  Status setup_wgmma() {
    KB_TRY(wgmma_plan_.setup<PoolSumEpilogue>({n_, c_in_, a_.c_out, a_.h, a_.w_in, /*pad=*/1,
                                               2 * hp_, 2 * a_.wp,  // the rows the pool reads
                                               /*transposed_flipped=*/true}));
    const wgp::WgmmaArgs& f = wgmma_plan_.args();
    const size_t partial_floats = size_t(n_) * f.c_out * std::max(f.tiles_h * f.tiles_w, 1);
    KB_CUDA_TRY(cudaMalloc(&partial_, partial_floats * sizeof(float)));
    return Status::ok();
  }

  Status run_wgmma(const ImplArgs& args, cudaStream_t stream) {
    const wgp::WgmmaArgs& f = wgmma_plan_.args();
    const PoolSumEpilogue epi{args.params[bias_].data, partial_, hp_, a_.wp, a_.lo, a_.hi};
    // No pooling window at all (no tile): the mean is 0 / 0 = NaN, as in PyTorch.
    KB_TRY(wgmma_plan_.run(args.inputs[x_].data, args.params[weight_].data, epi, stream));
    const int planes = n_ * f.c_out;  // out: (N, C_out, 1, 1)
    finish_kernel<<<(planes + 7) / 8, 256, 0, stream>>>(
        partial_, args.output.data, planes, f.tiles_h * f.tiles_w, float(int64_t{hp_} * a_.wp));
    KB_CUDA_TRY(cudaGetLastError());
    return Status::ok();
  }

  Status run_fast(const ImplArgs& args, cudaStream_t stream) {
    if (wgmma_) return run_wgmma(args, stream);
    patch::PatchArgs f = f_;
    f.x = args.inputs[x_].data;
    f.w_split = w_split_;
    f.bias = args.params[bias_].data;
    f.partial = partial_;
    constexpr int kPrepThreads = 256;
    const int prep_items = f.co_tiles * f.chunks * (patch::kAStageFloats / 2);
    patch::split_weight_kernel<<<(prep_items + kPrepThreads - 1) / kPrepThreads, kPrepThreads, 0,
                                 stream>>>(args.params[weight_].data, w_split_, f.c_in, f.c_out,
                                           f.chunks, f.co_tiles);
    KB_CUDA_TRY(cudaGetLastError());
    if (grid_ > 0) {  // no pooling window at all: the mean is 0 / 0 = NaN, as in PyTorch
      patch::conv3x3_pool_kernel<<<grid_, patch::kThreads, patch::kSmemBytes, stream>>>(f);
      KB_CUDA_TRY(cudaGetLastError());
    }
    const int planes = n_ * f.c_out;  // out: (N, C_out, 1, 1)
    finish_kernel<<<(planes + 7) / 8, 256, 0, stream>>>(
        partial_, args.output.data, planes, f.tiles_h * f.tiles_w, float(int64_t{f.hp} * f.wp));
    KB_CUDA_TRY(cudaGetLastError());
    return Status::ok();
  }

  // ---- geometry ----

  static std::vector<int64_t> ints_or(const ProblemInstance& p, const char* node, const char* attr,
                                      int64_t fill) {
    return p.has_attr(node, attr) ? p.ints(node, attr) : std::vector<int64_t>(2, fill);
  }

  // Stride-1 transposed conv (= conv with padding dil*(k-1) - pad), then 2x2/2 max pool.
  Status read_geometry(const ProblemInstance& p) {
    const Shape& xs = p.shape_of("x");                      // (N, C_in, H, W)
    const Shape& ws = p.shape_of("conv_transpose.weight");  // (C_in, C_out, KH, KW)
    const Shape& ys = p.shape_of("y");                      // (N, C_out, Ho, Wo)
    const Shape& ms = p.shape_of("m");                      // (N, C_out, Ho/2, Wo/2)
    const std::vector<int64_t> st = ints_or(p, "conv_transpose", "stride", 1),
                               pad = ints_or(p, "conv_transpose", "padding", 0),
                               opad = ints_or(p, "conv_transpose", "output_padding", 0),
                               dil = ints_or(p, "conv_transpose", "dilation", 1),
                               pk = p.ints("maxpool", "kernel_size"),
                               ps = ints_or(p, "maxpool", "stride", 2),
                               pp = ints_or(p, "maxpool", "padding", 0);
    const int64_t groups =
        p.has_attr("conv_transpose", "groups") ? p.int_attr("conv_transpose", "groups") : 1;
    bool ok = xs.size() == 4 && ws.size() == 4 && ys.size() == 4 && ms.size() == 4 && groups == 1 &&
              ws[0] == xs[1] && dil.size() == 2 && dil[0] == dil[1] && ys[1] == ws[1] &&
              ms[2] == ys[2] / 2 && ms[3] == ys[3] / 2;
    for (int i = 0; ok && i < 2; ++i) {
      const int64_t conv_pad = dil[i] * (ws[2 + i] - 1) - pad[i];
      ok = st[i] == 1 && opad[i] == 0 && conv_pad >= 0 && pk[i] == 2 && ps[i] == 2 && pp[i] == 0 &&
           ys[2 + i] == xs[2 + i] + 2 * conv_pad - dil[i] * (ws[2 + i] - 1);
    }
    constexpr int64_t kIntMax = 0x7fffffff;
    if (!ok || xs[1] * xs[2] * xs[3] > kIntMax || xs[1] * ws[2] * ws[3] > kIntMax / 8 ||
        4 * ms[2] * ms[3] > kIntMax - kBN || ws[1] > kIntMax - kBM || ys[2] > kIntMax / 4)
      return Status::failed_precondition(
          "L2_010 custom: needs a stride-1 ConvTranspose2d and a 2x2/2 max pool in int range");
    n_ = static_cast<int>(xs[0]), c_in_ = static_cast<int>(xs[1]);
    kh_ = static_cast<int>(ws[2]), kw_ = static_cast<int>(ws[3]), dil_ = static_cast<int>(dil[0]);
    a_.x_image = xs[1] * xs[2] * xs[3];
    a_.c_out = static_cast<int>(ws[1]);
    a_.k = c_in_ * kh_ * kw_;
    a_.k_pad = (a_.k + kBK - 1) / kBK * kBK;
    a_.h = static_cast<int>(xs[2]), a_.w_in = static_cast<int>(xs[3]);
    a_.wp = static_cast<int>(ms[3]);
    hp_ = static_cast<int>(ms[2]);
    a_.cols_total = static_cast<int>(4 * ms[2] * ms[3]);
    a_.ph = static_cast<int>(dil[0] * (kh_ - 1) - pad[0]);
    a_.pw = static_cast<int>(dil[1] * (kw_ - 1) - pad[1]);
    a_.co_tiles = (a_.c_out + kBM - 1) / kBM;
    a_.col_tiles = (a_.cols_total + kBN - 1) / kBN;
    fast_ = kh_ == patch::kKernel && kw_ == patch::kKernel && dil_ == 1 && a_.ph == 1 && a_.pw == 1;
    if (int64_t{n_} * a_.col_tiles * a_.co_tiles > kIntMax)
      return Status::failed_precondition("L2_010 custom: too many tiles");
    return Status::ok();
  }

  size_t x_ = 0, weight_ = 0, bias_ = 0;
  int n_ = 0, c_in_ = 0, kh_ = 0, kw_ = 0, dil_ = 1;
  PoolConvArgs a_{};           // sizes; pointers are filled per call
  int* taps_ = nullptr;        // (3 K_pad) tap table
  float* w_t_ = nullptr;       // (C_out, K) flipped weight, rewritten every call
  float* partial_ = nullptr;   // (N, C_out, col_tiles) or, fast, (N, C_out, tiles_h * tiles_w)
  int hp_ = 0;                 // pooled rows
  bool fast_ = false;          // 3x3, dilation 1, padding 1: conv3x3_pool_patch.cuh
  bool narrow_ = false;        // the narrow path (fp32 FMA; setup's rule)
  NarrowArgs narrow_args_{};   // narrow path sizes; pointers are filled per call
  bool patch_narrow_ = false;  // narrow and 3x3, dilation 1: narrow3x3_pool_kernel
  int patch_tiles_x_ = 0;      // narrow3x3_pool_kernel's tiles along the pooled width
  bool split_narrow_ = false;  // patch_narrow_ on narrow3x3.cuh (channel splits, double-buffered)
  narrow3x3::Plan split_plan_{};  // its sizes; pointers are filled per call
  bool thin_ = false;             // narrow on thin.cuh (thin::takes)
  narrow3x3::Args thin_args_{};   // its sizes (thin::plan); pointers are filled per call
  patch::PatchArgs f_{};          // fast path sizes; pointers are filled per call
  bool wgmma_ = false;            // fast path on wgmma (conv3x3_pool_wgmma.cuh)
  wgp::Conv3x3Wgmma wgmma_plan_;  // its plan: sizes, split weights, launches
  float* w_split_ = nullptr;      // fast, mma.sync: (co_tiles, chunks, kAStageFloats), every call
  unsigned grid_ = 0;             // fast, mma.sync: persistent CTAs
};

}  // namespace kb::custom::L2_010

KB_REGISTER_IMPLEMENTATION(L2_010, custom, kb::custom::L2_010::ConvPoolMeanTanh)