// L1_073 custom: y = ConvTranspose3d(32 -> 32, k 3, stride 2, padding 1, groups 1 (the spec's
// effective layer, not the script's 4), no bias)(x).
//   x: (N, C_in, D, H, W) fp32; w: (C_in, C_out, 3, 3, 3); y: (N, C_out, 2D-1, 2H-1, 2W-1), NCDHW.
//   Per axis o + 1 = 2q + r: even o (r = 1) takes tap 1 from input q, odd o (r = 0) taps 0 and 2
//   from inputs q and q - 1, so the 8 parity classes have 1-8 of the 27 taps and
//   y[n, co, 2q + r - 1] = sum_{tap of class r, ci} x[n, ci, q - j(tap)] w[ci, co, tap]
//   (full preset: x (4, 32, 32, 64, 128) -> y (4, 32, 63, 127, 255)).
//
// Cost (docs/problems.md#l1_073, full preset): 27.9 G MAC = 55.9 GFLOP; min DRAM 1,179 MB (out
// 1,045) -> 0.27 ms; fp32 FMA floor 0.83 ms, 3xTF32 ideal ~0.34 ms. Strict-fp32 reference
// 10.6 ms; best strict-fp32 peer 10.53 ms (autotuned cuDNN, docs/baselines.md); previous custom
// (per-class gather, parity_gather3d.cuh) 2.12 ms; goal <= 1.33 ms (1.6 x the floor).
//
// Design, two launches: a prep kernel writes w in the fast kernel's order once per call, then
//  - on Hopper (the sm_90a code loaded; takes_wgmma: tiles mostly full or within one wave) the
//    wgmma kernel (kernels/cores/conv_transpose3d_tf32x3/wgmma_classes3d.cuh): a tile is the 4
//    output rows (od, oh) of one input (m, p) and 64 input columns; M = the 32 channels x both
//    output column parities (the weights, A from registers), N = 64 columns (the input patch's
//    big / small TF32 planes in shared memory, B), K = 8 input channels per stage; 4 warpgroups,
//    one output row each (warpgroup 3 also row 0's taps 2-3); sums of <= 12-24 wgmmas promoted
//    to fp32 totals in shared memory. 1.318 ms (session 23).
//  - elsewhere the mma.sync kernel (all_classes3d.cuh): one persistent CTA per SM keeps the 27 x
//    32 x 32 weights (raw, 110.6 KB) in shared memory and walks boxes of 2 x 2 x 32 q positions;
//    per box it stages the 3 x 3 x 33 x 32-channel input patch once (40 KB, double-buffered by
//    cp.async) and runs ALL 8 parity classes = all 27 tap-GEMMs (M 128, N 32, K 32) from it with
//    3xTF32 mma.sync m16n8k8, so x is read once per box (1.16x halo, L2) instead of once per
//    tap, and the box's outputs (whole 64-wide output lines of 2 x 4 rows) are written by one CTA
//    within a short window (L2 merges the two stride-2 phases of each sector). 8 warps = 4 pixel
//    groups of 32 x 2 class groups of 13 / 14 taps (96% balance). 1.93 ms.
// Fallback: any other layer (channels, kernel, stride, padding, output_padding), layers of
// <= 8 M MACs and too many boxes run the per-tap gather core (ct3d_gather::ParityConvTranspose3d,
// parity_conv_transpose3d.cuh), which itself falls back to the generic fp32 gather (four outputs
// a thread; gather::generic_is_faster: <= 8 M MACs, or tiles >= 4x padding up to 8 M x that).
// Tiny layers there (the 512-row grid under 2 CTAs per SM) take 128-row tiles, B read from w
// (no pack launch), and their k-tiles split over CTAs where even that grid is under one wave:
// N 2, C_in 13, C_out 7, 11 x 5 x 39 measured 0.72x the reference and N 2, C_in 27, C_out 13,
// 9 x 3 x 29 0.40x on the 512-row tiles (72 / 32 CTAs, latency-bound). Preset `tiny`. Measured
// (session 22, `kb bench L1_073 --dims ... --time-cap 1 --trials 3 --seed 7`, custom us, old ->
// new): 45 -> 25 at 27 -> 13, 9 x 3 x 29; 29 -> 25 at 13 -> 7, 11 x 5 x 39; 71 -> 25 at N 1, 40 ->
// 40, 8^3; 46 -> 40 at N 2, 24 -> 24, 12^3; 42 -> 44 at N 4, 8 -> 4, 16^3 (the references 17-54
// us and noisy from run to run); splits within two waves or none measured no better.
// Session 27 sweep (seed 77): N 3, 4 -> 7, 5 x 7 x 9 (0.7 M MACs, the generic gather) 0.75x the
// reference, ncu: 8.0 M warp instructions, mostly the gather's runtime divisions, then
// magic-number dividers; N 2, 13 -> 7, 11 x 5 x 39 (the per-tap GEMM's 16-row tiles) 0.82x.
// Session 32 (H100, us, generic.cuh's taps per phase and four outputs a thread): the gather at
// N 3, 4 -> 7 13.3 -> 7.1; N 2, 13 -> 7 now the gather (waste 4.2): 25 (GEMM) -> 15.9; N 2,
// 23 -> 2, 13 x 57 x 7 53 (GEMM) -> 24.7, the reference 42.
// Session 41 (H100): the generic path's layers of few outputs with sums of 256+ pairs take its
// split form (conv_transpose_gather/split_gather.cuh: 16-32 lanes per output over its flattened
// (tap, channel) pairs). At 4 lanes it was a wash, so not taken there: N 4, 29 -> 10, 5 x 7 x 5
// (the sweep's miss) 22 -> 24 us, N 2, 32 -> 32, 4 x 5 x 6 24 -> 22 (reference 17 at both).
//
// Cost model of the mma.sync kernel (per SM, full preset): 82 M mma.sync (3xTF32) / 132 SMs = 620
// K; per tap and k8 step a warp issues 24 MMAs, 8 LDS.32 (A) + 4 LDS.64 (B) = 16 shared wavefronts
// (smem 33% of the MMA time), 16 operand splits (~80 ALU instructions). Shared 190,464 B -> 1 CTA
// (8 warps) per SM; 176 registers (ptxas, no spills). At ~5 clk per MMA per sub-partition the MMAs
// take ~0.45 ms; the issue slots (MMA + split + LDS ~ 130 per 24 MMAs) about the same, so the
// kernel is issue/tensor bound at ~0.5-0.6 ms, the 1.05 GB of stores (~0.25 ms of HBM)
// overlapped; the patch copies (37 4-byte cp.async per thread per box of ~1,300 MMAs per
// warp) ~5%, tail 62.1 / 63 boxes per CTA.
// Predicted (H200, before measurement): ~0.7-0.9 ms (risk: latency with only 2 warps per
// sub-partition). Measured: 1.83 ms (2026-11-30, docs/kernels.md; 30.5 TFLOP/s), 1.859 ms in
// docs/bench-h200-2026-12-02b.json (2.2x the floor, 1.4x the goal). ncu
// (docs/profiles/ncu-h200-2026-11-30-L1_073.txt): issue slots 34% busy, 12.5% occupancy, DRAM
// 22%: latency-bound, the risk named above. Session 23 replaced it on Hopper by the wgmma kernel
// (its ladder in wgmma_classes3d.cuh): 1.93 -> 1.318 ms, the goal (1.33) met.
//
// Accuracy (wgmma kernel, session 23): 3xTF32 with big = tf32_rna(v) and small = v - big left
// for the tensor core to truncate (2^-21 |v|); sums of 12 wgmmas (24 for rows 1-2) promoted.
// `kb bench L1_073 --preset robust --time-cap 0.2 --trials 3 --seed S`, S = 5, 7-12: scale (x
// 1000) 0.61-0.91x the tolerance (reference 0.30-0.58x), shift 0.09-0.13x, centered 0.00x: pass;
// max |err| 5.1e-7 at the full preset.
// Accuracy (mma.sync kernel): 3xTF32 (operands split at the fragment load, big = tf32_rna(v), small
// = tf32_rna(v - big); a_s b_b + a_b b_s + a_b b_b) ~ fp32 products; no fast intrinsics, no
// statistics, no norm. Each tap's 4 k8 steps sum in a fresh MMA accumulator, added to the class's
// sum by FADD (all_classes3d.cuh: the MMA accumulator truncates toward zero, so a class's up to
// 96 MMAs kept there put the robustness trials' scaled inputs at 2.7-4x the tolerance, where the
// reference is at 0.4-0.6x). Measured (session 14, `kb bench L1_073 --time-cap 1 --seed S`, the
// `robust` preset against the golden model): scale (x 1000) 0.48-0.79x the tolerance over seeds
// 7-10 (reference 0.34-0.58x), shift (x + 100) 0.07-0.13x, centered 0.00x: pass; max |err|
// 4.8e-7 at the full preset (2.3e-6 before); 1.95-1.97 ms (1.887-1.889 ms unpromoted, same
// call; 1.932 ms in docs/bench-h200-2026-12-03-s14.json).
#include <algorithm>

#include "common/cuda/device_query.h"
#include "kernels/cores/conv_transpose3d_tf32x3/all_classes3d.cuh"
#include "kernels/cores/conv_transpose3d_tf32x3/parity_conv_transpose3d.cuh"
#include "kernels/cores/conv_transpose3d_tf32x3/wgmma_classes3d.cuh"
#include "kernels/implementation.h"

namespace kb::custom::L1_073 {

namespace all = ::kb::custom::ct3d_all;
namespace wg = ::kb::custom::ct3d_wgmma;

class ConvTranspose3dStrided final : public Implementation {
 public:
  Status setup(const ProblemInstance& p, cudaStream_t stream) override {
    Result<gather::ConvTransposeGeometry> g = gather::read_conv_transpose(p, "conv_transpose3d");
    if (!g.is_ok()) return g.status();
    fast_ = takes(g.value()) && !gather::generic_is_faster(g.value());
    if (fast_) {
      const gather::ConvTransposeGeometry& geo = g.value();
      KB_ASSIGN_OR_RETURN(sms_, cuda::sm_count());
      KB_ASSIGN_OR_RETURN(const int smem_optin,
                          cuda::device_attribute(cudaDevAttrMaxSharedMemoryPerBlockOptin));
      fast_ = all::kSmemBytes <= smem_optin;
      if (fast_) {
        params_.batch = static_cast<int>(geo.batch);
        for (int a = 0; a < 3; ++a) {
          params_.in[a] = static_cast<int>(geo.in[a]);
          params_.out[a] = static_cast<int>(geo.out[a]);
        }
        params_.boxes[0] = (params_.in[0] + all::kBoxD - 1) / all::kBoxD;
        params_.boxes[1] = (params_.in[1] + all::kBoxH - 1) / all::kBoxH;
        params_.boxes[2] = (params_.in[2] + all::kBoxW - 1) / all::kBoxW;
        const int64_t boxes =
            geo.batch * params_.boxes[0] * int64_t{params_.boxes[1]} * params_.boxes[2];
        fast_ = boxes < (int64_t{1} << 30);
        params_.boxes_total = static_cast<int>(boxes);
      }
    }
    if (!fast_) return fallback_.setup(p, stream);
    x_ = input_index(p, "x");
    w_ = param_index(p, "conv_transpose3d.weight");
    static_assert(wg::kWeightFloats == all::kWeightFloats, "one prepared-weight buffer");
    KB_CUDA_TRY(cudaMalloc(&wf_, all::kWeightFloats * sizeof(float)));
    KB_CUDA_TRY(tf32x3::wgmma::loaded_here(&wgmma_));
    if (wgmma_) {
      const gather::ConvTransposeGeometry& geo = g.value();
      KB_ASSIGN_OR_RETURN(const int smem_optin,
                          cuda::device_attribute(cudaDevAttrMaxSharedMemoryPerBlockOptin));
      wparams_.batch = static_cast<int>(geo.batch);
      for (int a = 0; a < 3; ++a) {
        wparams_.in[a] = static_cast<int>(geo.in[a]);
        wparams_.out[a] = static_cast<int>(geo.out[a]);
      }
      wparams_.q_tiles = (wparams_.in[2] + wg::kTileQ - 1) / wg::kTileQ;
      const int64_t tiles = geo.batch * geo.in[0] * geo.in[1] * int64_t{wparams_.q_tiles};
      wparams_.tiles_total = static_cast<int>(std::min<int64_t>(tiles, 1 << 30));
      wgmma_ = takes_wgmma(geo, tiles, sms_) && wg::kSmemBytes <= smem_optin;
    }
    if (wgmma_) {
      KB_CUDA_TRY(cudaFuncSetAttribute(
          wg::wgmma_classes3d_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, wg::kSmemBytes));
    }
    KB_CUDA_TRY(cudaFuncSetAttribute(all::all_classes3d_kernel,
                                     cudaFuncAttributeMaxDynamicSharedMemorySize,
                                     all::kSmemBytes));
    return Status::ok();
  }

  Status run(const ImplArgs& args, cudaStream_t stream) override {
    if (!fast_) return fallback_.run(args, stream);
    if (wgmma_) {
      return launch(wg::prep_weights_kernel, wg::kThreads, wg::wgmma_classes3d_kernel, wg::kThreads,
                    wg::kSmemBytes, wparams_, wparams_.tiles_total, args, stream);
    }
    return launch(all::prep_weights_kernel, all::kThreads, all::all_classes3d_kernel, all::kThreads,
                  all::kSmemBytes, params_, params_.boxes_total, args, stream);
  }

  ~ConvTranspose3dStrided() override {
    if (wf_ != nullptr) cudaFree(wf_);
  }

 private:
  // Either fast kernel's launches: the weights in its order, then its persistent grid of at most
  // one CTA per SM over `units` tiles or boxes.
  template <class Params>
  Status launch(void (*prep)(const float*, float*), int prep_threads, void (*kernel)(Params),
                int threads, int smem, Params p, int units, const ImplArgs& args,
                cudaStream_t stream) const {
    prep<<<(all::kWeightFloats + prep_threads - 1) / prep_threads, prep_threads, 0, stream>>>(
        args.params[w_].data, wf_);
    KB_CUDA_TRY(cudaGetLastError());
    p.x = args.inputs[x_].data;
    p.wf = wf_;
    p.y = args.output.data;
    kernel<<<std::min(units, sms_), threads, smem, stream>>>(p);
    KB_CUDA_TRY(cudaGetLastError());
    return Status::ok();
  }

  // Where the fast layer runs on wgmma rather than mma.sync: its 64-column tiles at least 60%
  // full, or a grid within one wave (tiles <= SMs), and the kernel's int offsets in range
  // (32 D H W < 2^31). Measured (session 23, `kb bench L1_073 --dims ...`, both paths in one call,
  // ms wgmma / mma.sync): W 128 (full preset) 1.32 / 1.93, N 1 31 x 63 x 127 0.392 / 0.503,
  // N 4 8 x 16 x 64 0.065 / 0.072, N 1 8^3 (64 tiles) 0.021 / 0.035; mma.sync where the tiles
  // are mostly padding: N 3 17 x 33 x 65 (51% full) 0.324 / 0.306, N 2 12 x 22 x 9 (14%, 528
  // tiles) 0.062 / 0.037.
  static bool takes_wgmma(const gather::ConvTransposeGeometry& g, int64_t tiles, int sms) {
    const double full = static_cast<double>(g.in[2]) /
                        ((g.in[2] + wg::kTileQ - 1) / wg::kTileQ * static_cast<double>(wg::kTileQ));
    return tiles < (int64_t{1} << 30) &&
           g.in[0] * g.in[1] * g.in[2] * wg::kC < (int64_t{1} << 31) &&
           (full >= 0.6 || tiles <= sms);
  }

  // The fast path's layer: rank 3, 32 -> 32 channels, groups 1, k 3, stride 2, padding 1,
  // dilation 1, output 2 L - 1 (output_padding 0) on every axis, sizes in int range.
  static bool takes(const gather::ConvTransposeGeometry& g) {
    if (g.rank != 3 || g.groups != 1 || g.in_channels != all::kC || g.out_channels != all::kC)
      return false;
    if (g.batch < 1 || g.batch >= (int64_t{1} << 20)) return false;
    for (int a = 0; a < 3; ++a) {
      if (g.kernel[a] != 3 || g.stride[a] != 2 || g.padding[a] != 1 || g.dilation[a] != 1)
        return false;
      if (g.in[a] < 1 || g.in[a] >= (int64_t{1} << 20) || g.out[a] != 2 * g.in[a] - 1)
        return false;
    }
    return g.output_numel() < (int64_t{1} << 40);
  }

  ct3d_gather::ParityConvTranspose3d fallback_{"conv_transpose3d", "x",
                                               "conv_transpose3d.weight"};
  bool fast_ = false;
  bool wgmma_ = false;  // the fast path on wgmma (sm_90a code loaded, takes_wgmma), else mma.sync
  int sms_ = 1;
  size_t x_ = 0, w_ = 0;
  all::Params params_{};
  wg::Params wparams_{};
  float* wf_ = nullptr;
};

}  // namespace kb::custom::L1_073

KB_REGISTER_IMPLEMENTATION(L1_073, custom, kb::custom::L1_073::ConvTranspose3dStrided)
