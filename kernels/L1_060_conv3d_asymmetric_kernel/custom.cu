// L1_060 custom: y = Conv3d(3, 64, (3, 5, 7), bias=False)(x), stride 1, no padding.
//   x: (N, C_in, D, H, W), w: (C_out, C_in, 3, 5, 7), y: (N, C_out, D-2, H-4, W-6), fp32 NCDHW;
//   y[n,o,d,h,v] = sum_{c,a,b,e} w[o,c,a,b,e] * x[n,c,d+a,h+b,v+e]; the kernel extents apply to
//   dims 2, 3, 4 in that order (full preset: x (16, 3, 64, 64, 64) -> y (16, 64, 62, 60, 58)).
//
// Cost (docs/problems.md#l1_060, full preset): 69.6 G MAC = 139.2 GFLOP -> t_fp32 2.08 ms (TF32
// fails the tolerance 3.3x); 934 MB -> t_mem 217 us. Floor 2.08 ms, FMA-bound. Reference (cuDNN)
// 9.97-10.15 ms over the runs; best strict-fp32 peer 7.80 ms (autotuned cuDNN,
// docs/baselines.md); goal <= 3.32 ms (1.6 x the floor).
//
// Design (kernels/cores/conv3d_direct/direct.cuh's Conv3d, the 3x5x7 taps fixed at compile time):
//  - C_out > 32 (the full preset): the 3xTF32 implicit-GEMM tile (tf32x3_tile.cuh). K = 315
//    padded to 320; a persistent block owns 4 output rows x 64 columns x 64 channels per tile,
//    its weights (80 KB) staged once, the input patch (9 planes x 8 rows x 71 columns) read as
//    pre-split (big, small) TF32 pairs, the next tile's patch streaming in by cp.async; 160 KB
//    of shared memory: one block of 8 warps per SM. Lanes doing useful work: 58/64 columns.
//  - 16 < C_out <= 32: the same tile with a 32-channel block (in channel chunks when a block's
//    shared memory would otherwise keep two from one SM).
//  - C_out <= 16: the FMA tile (a block stages 3 x 3 input planes and all weights, each warp 8
//    channels x 4 rows x 64 columns, a lane 64 accumulators).
// Narrow output rows (W' < 32) and small layers of 4 or more channels take the core's
// channel-group kernel where its threads fill the machine (a thread per output position and 8
// channels; direct.cuh's conv3d_group_is_faster has the rule and its measurements). Other small
// layers (C_out 1, or <= 32 M multiply-adds) take the core's narrow kernel: one thread per
// output, the taps clamped once (direct.cuh; session 9 sweep: L1_054 0.37x -> 1.3x, L1_060 0.62x
// -> 1.75x, L2_007 0.31x -> 1.09x the reference at their worst shapes, docs/kernels.md).
// Fallback: other strides, dilations, groups or kernel sizes take the core's generic
// one-thread-per-output kernel (any geometry, same fp32 math).
//
// Ladder (H200, full preset): v1 FMA tile, predicted 2.6 ms, measured 3.72 ms (37 TFLOP/s, ~50%
// issue; 3.726 ms in docs/bench-h200-2026-12-02b.json). v2 3xTF32 tile (session 5), predicted
// 1.4-3.0 ms (mma.sync at 35-60% of the TF32 peak), measured 2.952 ms (kb bench
// L1_054,L1_060,L2_007 --time-cap 2 --seed 7; 3.44x the cuDNN reference): meets the 3.32 ms goal.
// Shape sweep (4 shapes, seed 2026): worst 1.54x. v3 (session 8) the tile's operand layout and
// staging (L1_054's v5): measured 2.434 ms (kb bench L1_054,L1_060 --time-cap 2 --seed 7), 2.429
// in kernelbench22 (docs/bench-h200-2026-12-02-s8.json); sweep (6 shapes) worst 1.33x.
//
// Accuracy: 3xTF32 (tf32x3_tile.cuh: small x small dropped, 40 k8 steps of MMA truncation) or
// strict fp32 FMA on the FMA tile; no fast intrinsics; each output one fp32 accumulator over its
// 315 products, not amplified. Measured on the 3xTF32 tile: max |err| 6.2e-6 at the full preset
// (call B1) vs 1e-4 + 1e-4 |r| allowed; it passed the custom, sweep and robustness tests on the
// H200 (call A). The numbers below are the FMA tile's (session 4). Measured max |err| 1.6e-6 at the
// full preset (bench 2026-12-02b) vs 1e-4 + 1e-4 |r| allowed. Robustness trials (small preset, seed
// 7, vs the golden model): shift (x + 100) 0.20x the tolerance (reference 0.18x); scale (x
// 1000) 1.43x, `ill_conditioned` (the reference is outside too, 1.25x: K = 315 fp32 sums of outputs
// ~1e3); centered 0.004x.
#include "kernels/cores/conv3d_direct/direct.cuh"
#include "kernels/implementation.h"

namespace kb::custom::L1_060 {

using Conv3dAsymmetricKernel = conv3d_direct::PlainConv3dVariant<3, 5, 7>;

}  // namespace kb::custom::L1_060

KB_REGISTER_IMPLEMENTATION(L1_060, custom, kb::custom::L1_060::Conv3dAsymmetricKernel)
