// L1_070 custom: y = ConvTranspose3d(48 -> 24, k 3, stride 1, no padding, no bias)(x).
//   x: (N, C_in, D, H, W) fp32; w: (C_in, C_out, 3, 3, 3); y: (N, C_out, D+2, H+2, W+2), NCDHW;
//   y[n,co,o] = sum_{ci,t} x[n,ci,o - t] w[ci,co,t] (x = 0 outside), a full correlation
//   (full preset: x (8, 48, 96, 96, 96) -> y (8, 24, 98, 98, 98)).
//
// Cost (docs/problems.md#l1_070, full preset): 220.2 G MAC = 440.3 GFLOP; min DRAM 2,082 MB ->
// 0.48 ms; fp32 FMA floor 6.57 ms, 3xTF32 ideal ~2.7 ms: compute-bound. Strict-fp32 reference
// 39.0-39.4 ms; best strict-fp32 peer 25.29 ms (autotuned cuDNN; eager 39.25, compile 39.13,
// docs/baselines.md); goal <= 10.5 ms (1.6 x the floor).
//
// Design (kernels/cores/conv_transpose3d_tf32x3/parity_gemm3d.cuh, maps in patch_plan3d.cuh), two
// launches: split_weights_kernel splits w once per call into TF32 big + small in B-fragment
// order; patch_gemm3d_kernel does the conv. Stride 1 gives one phase class with all 27 taps: an
// implicit GEMM with M = output voxels, K = 27 taps x 48 channels, N = C_out = 24 (3 n8 tiles),
// 3xTF32 on mma.sync m16n8k8. A CTA tile is a 7 x 7 x 10 box of outputs (490 of its 512 M rows;
// 98 = 14 x 7 = 10 x 10 - 2) x 24 channels; per chunk of 8 input channels its 9 x 9 x 12 input
// patch is staged ONCE in shared memory, already split into TF32 big + small (float4 per channel
// pair), and the 27 taps read it at constant offsets. Per tap a warp (64 voxels x 24) does 8 + 3
// LDS.128 for 36 MMAs: no gather, no split and no scalar fragment load in the MMA loop.
// Persistent CTAs (1 per SM, 208 KB: two stages of patch + 27 taps' weights) walk (tile, chunk)
// items double-buffered, as L2_010's patch kernel. v1 (per-tap 4-byte gathers, split per MMA):
// 14.2 ms. Layers of few tiles (at most half the SMs) split each tile's input channels over
// CTAs, summed in order by a second kernel (session 22: N 2, C_in 48, C_out 24, 12^3 0.42x ->
// 1.28x the reference; N 1, 8 x 20 x 20 0.51x -> 1.43x; the full preset 10.43 -> 10.27 ms, `kb
// bench L1_070 --time-cap 2 --seed 7` twice against the previous pack). Fallback: layers of
// <= 8 M MACs, or up to 8 M x the padding factor whose tiles would compute >= 4x their
// multiply-adds in padding (gather::generic_is_faster; session 22 at 16x: C_out 1, C_in 2 0.76x
// -> 2.40x; session 32 at 4x: C_out 4, C_in 24, 20^3 37 -> 26 us), and geometries the plan or the
// shared memory cannot take run the generic gather (four outputs a thread, a few lanes for long
// sums) of kernels/cores/conv_transpose_gather/generic.cuh (fp32 FMA). Layers of <= 8 output
// channels run the plane gather (kernels/cores/conv_transpose_gather/plane_gather.cuh; session 35,
// H100): the misses of those paths there, C_out 1 at 64^3 (N 8, C_in 48: the generic gather,
// 3.18 ms against the reference's 0.78-0.85) -> 0.57 ms; C_out 1 at C_in 41 (N 8, 41 x 5 x 9)
// 36 -> 28 us; C_out 3 at C_in 35 with 5-column rows (N 6, 25 x 83 x 5, the patch GEMM) 152 ->
// 51 us; session 36 (H100, bank-conflict-free reads, up to 32 channel groups, leaner staging):
// the 64^3 layer 0.57 -> 0.49 ms, N 16, C_in 64, C_out 2, 32^3 0.356 -> 0.294 ms (0.89x -> 1.08x),
// N 1, C_in 64, C_out 1, 30^3 36 -> 28 us, C_in 41 28 -> 23 us. Still under 0.9x: the smallest
// tensor-path layers (~35 us against the reference's 20-30: N 2, 5 x 7 x 9), and at times the
// ~20-30 us plane-gather layers, where the reference's own time moves 20-70% between leases.
// Session 41 (H100): the generic path's layers of few outputs with sums of 256+ pairs run its split
// form (conv_transpose_gather/split_gather.cuh: 16-32 lanes per output over its flattened (tap,
// channel) pairs), ahead of the plane gather at one output channel: N 1, 45 -> 1, 3 x 79 x 11
// (preset `split`) 22 -> 20 us against the reference's 17, N 2, 48 -> 24, 3 x 5 x 7 (`small`) 33 ->
// 29; at 3 channels the plane gather stayed faster (N 2, 35 -> 3, `few_out`: 27 against 34).
//
// Cost model (per SM): 15,680 tiles x 512 rows x 1,296 K x 24 N / 1,024 MAC per m16n8k8 x 3 =
// 688 M MMAs (6.6% box waste) / 132 = 5.2 M MMAs per SM. Shared traffic per warp and tap 44
// wavefronts / 36 MMAs = 1.2 clk per MMA per SM, below the ~2.5 clk per MMA the repo's best
// 3xTF32 mma.sync kernels sustain (L1_003, L2_010); x moves from L2 ~2.1x per tile (patch / box)
// instead of 27x (v1 gathered every tap: 39 GB of 4-byte cp.async, its real bound with the
// per-MMA split). Registers/shared (ptxas, sm_90): 220 registers, no spills (198 before the
// accumulation was promoted per tap); 208,128 B dynamic shared, 1 CTA/SM.
// Predicted (H200): 5.2 M x 2.5-3 clk at ~1.9 GHz = 6.9-8.2 ms + ~5% per-item overhead
// (barrier, patch split) -> 7.5-8.5 ms. Measured: 9.81 ms unpromoted (2026-11-30,
// docs/kernels.md; 9.84 ms on 2026-12-01), 10.39 ms promoted (2026-12-01, `kb bench
// L1_070,L1_073,L2_093,L2_091 --seed S`, S = 11, 12, 13; +5.6%, still 3.77x the reference's
// 39.2 ms), 10.425 ms in docs/bench-h200-2026-12-02b.json (42 TFLOP/s, 1.59x the floor): under
// the 10.5 ms goal.
//
// Accuracy: 3xTF32 (big x big + big x small + small x big, each operand split by cvt.rna) ~ fp32
// products; no fast intrinsics, no statistics, no norm to amplify. The sum: the tensor core
// truncates each MMA's sum toward zero, so K = 1,296 (486 MMAs) kept in the MMA accumulator made
// the error 14-21x the tolerance under the robustness trials' scale (x 1000; the reference
// 0.6-1.2x). Now each tap's 3 MMAs start from zero and are added into the fp32 accumulator by FADD
// (kernels/cores/tf32x3/mma.cuh, mma3_k8_promoted; 48 FADD per warp and tap): a scratch RZ model
// gives 0.3-0.5x the fp32 reference's error instead of 15-25x. Measured: max |err| 2.6e-6 at the
// full preset (bench 2026-12-02b) vs 1e-4 + 1e-4 |r| allowed. Robustness trials (small preset,
// vs the golden model), this kernel (2026-12-01, seeds 11-13): pass, custom 0.14-0.24x the
// tolerance under shift (x + 100), 0.47-0.89x under scale (x 1000); the reference 0.13-0.16x and
// 0.57-1.17x; before the promotion 3.1-4.2x and 14-21x, fragile. Since 2026-12-02 the small
// preset's layer (6.5 M MACs <= 8 M) runs the fp32 gather instead: seed 7 (bench 2026-12-02b)
// shift 0.46x (reference 0.16x), scale 1.44x `marginal` (reference 0.68x), centered 0.005x.
// The same promotion in L1_073's and L2_093's cores (marginal there, 1.5-2.4x the tolerance
// under scale against the reference's 0.2-0.6x) spilled and cost 24-44%: not taken.
#include "kernels/cores/conv_transpose3d_tf32x3/parity_gemm3d.cuh"
#include "kernels/implementation.h"

namespace kb::custom::L1_070 {

class ConvTranspose3dStride1 final : public ct3d::ParityConvTranspose3d {
 public:
  ConvTranspose3dStride1()
      : ParityConvTranspose3d("conv_transpose3d", "x", "conv_transpose3d.weight") {}
};

}  // namespace kb::custom::L1_070

KB_REGISTER_IMPLEMENTATION(L1_070, custom, kb::custom::L1_070::ConvTranspose3dStride1)
