// L1_070 custom: ConvTranspose3d(48 -> 24, k 3, stride 1, no padding, no bias).
//   x: (N, C_in, D, H, W) fp32; w: (C_in, C_out, 3, 3, 3); out: (N, C_out, D+2, H+2, W+2).
//
// Cost (docs/problems.md#l1_070, full preset 8 x 48 x 96^3 -> 8 x 24 x 98^3): 220.2 G MAC = 440.3
// GFLOP; min DRAM 2,082 MB -> 0.48 ms; fp32 FMA floor 6.57 ms, 3xTF32 ideal ~2.7 ms: compute-bound.
// Strict-fp32 reference 39.2 ms, best peer 39.13 ms (goal <= 10.5 ms). v1 (per-tap 4-byte
// gathers, split per MMA): 14.2 ms.
//
// Design (../conv_transpose3d_tf32x3/parity_gemm3d.cuh, maps in patch_plan3d.cuh): stride 1
// gives one phase class with all 27 taps: y[o] = sum_{t, ci} x[o - t] w[ci, co, t], an implicit
// GEMM with M = output voxels, K = 27 taps x 48 channels, N = C_out = 24 (3 n8 tiles), 3xTF32 on
// mma.sync m16n8k8. A CTA tile is a 7 x 7 x 10 box of outputs (490 of its 512 M rows; 98 = 14 x 7
// = 10 x 10 - 2) x 24 channels; per chunk of 8 input channels its 9 x 9 x 12 input patch is
// staged ONCE in shared memory, already split into TF32 big + small (float4 per channel pair), and
// the 27 taps read it at constant offsets; the weights are split once per call into B-fragment
// order. Per tap a warp (64 voxels x 24) does 8 + 3 LDS.128 for 36 MMAs: no gather, no split and
// no scalar fragment load in the MMA loop. Persistent CTAs (1 per SM, 208 KB: two stages of patch
// + 27 taps' weights) walk (tile, chunk) items double-buffered, as L2_010's patch kernel.
//
// Cost model (per SM): 15,680 tiles x 512 rows x 1,296 K x 24 N / 1,024 MAC per m16n8k8 x 3 =
// 688 M MMAs (6.6% box waste) / 132 = 5.2 M MMAs per SM. Shared traffic per warp and tap 44
// wavefronts / 36 MMAs = 1.2 clk per MMA per SM, below the ~2.5 clk per MMA the repo's best 3xTF32
// mma.sync kernels sustain (L1_003, L2_010); x moves from L2 ~2.1x per tile (patch / box) instead
// of 27x (v1 gathered every tap: 39 GB of 4-byte cp.async, its real bound with the per-MMA split).
// Predicted (H200): 5.2 M x 2.5-3 clk at ~1.9 GHz = 6.9-8.2 ms + ~5% per-item overhead
// (barrier, patch split) -> 7.5-8.5 ms (v1 measured 14.2 ms). Accuracy ~fp32 (3xTF32).
// Registers/shared (ptxas, sm_90): 220 registers, no spills (198 before the accumulation was
// promoted per tap, parity_gemm3d.cuh: 48 FADD per warp and tap for an error ~0.3-0.5x the fp32
// reference's instead of 15-25x); 208,128 B dynamic shared, 1 CTA/SM.
// Measured (H200, 2026-12-01, `kb bench L1_070,L1_073,L2_093,L2_091 --seed S`, S = 11, 12, 13):
// 10.39 ms promoted vs 9.84 ms before (+5.6%, still 3.77x the reference's 39.2 ms); robustness
// trials pass for every seed (custom 0.14-0.24x the tolerance under shift, 0.47-0.89x under scale,
// the reference 0.13-0.16x and 0.57-1.17x) where before they were fragile (3.1-4.2x and 14-21x).
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
