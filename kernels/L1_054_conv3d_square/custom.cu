// L1_054 custom: y = Conv3d(3, 64, (3, 3, 3), bias=False)(x), stride 1, no padding.
//   x: (N, C_in, D, H, W), w: (C_out, C_in, 3, 3, 3), y: (N, C_out, D-2, H-2, W-2), fp32 NCDHW;
//   y[n,o,d,h,v] = sum_{c,a,b,e} w[o,c,a,b,e] * x[n,c,d+a,h+b,v+e]
//   (full preset: x (16, 3, 64, 64, 64) -> y (16, 64, 62, 62, 62)).
//
// Cost (docs/problems.md#l1_054, full preset): 19.77 G MAC = 39.5 GFLOP -> t_fp32 590 us (no
// TF32: it fails the tolerance 3.4x); 1,026 MB (y is 95%) -> t_mem 239 us. Floor 0.590 ms,
// FMA-bound. Reference (cuDNN, strict fp32) 1.85-2.03 ms over the runs; best strict-fp32 peer
// 1.40 ms (autotuned cuDNN, docs/baselines.md); goal <= 0.94 ms (1.6 x the floor).
//
// Design (kernels/cores/conv3d_direct/direct.cuh's Conv3d, taps fixed at compile time):
//  - C_out > 32 (the full preset): the 3xTF32 implicit-GEMM tile (tf32x3_tile.cuh). K = 81 padded
//    to 88; a persistent block owns 4 output rows x 64 columns x 64 channels per tile, its
//    weights staged once, the input patch (9 planes x 6 rows x 67 columns) read as pre-split
//    (big, small) TF32 pairs, the next tile's patch streaming in by cp.async; 125 registers, 73 KB
//    of shared memory, two blocks per SM.
//  - 16 < C_out <= 32: the same tile with a 32-channel block (in channel chunks when a block's
//    shared memory would otherwise keep two from one SM).
//  - C_out <= 16: the FMA tile: a block stages its 3 x 3 input planes and its channels' weights,
//    each warp runs tasks of 8 channels x 4 rows x 64 columns, a lane 64 accumulators.
// Narrow output rows (W' < 32) and small layers of 4 or more channels take the core's
// channel-group kernel where its threads fill the machine (a thread per output position and 8
// channels; direct.cuh's conv3d_group_is_faster has the rule and its measurements). Other small
// layers (C_out 1, or <= 32 M multiply-adds) take the core's narrow kernel: one thread per
// output, the taps clamped once (direct.cuh; session 9 sweep: L1_054 0.37x -> 1.3x, L1_060 0.62x
// -> 1.75x, L2_007 0.31x -> 1.09x the reference at their worst shapes, docs/kernels.md).
// Fallback: other strides, dilations, groups or kernel sizes take the core's generic
// one-thread-per-output kernel (any geometry, same fp32 math).
//
// Ladder (H200, full preset): v1 FMA tile, predicted 0.75 ms, measured 1.24 ms (32 TFLOP/s, 115
// registers, issue ~50%; docs/bench-h200-2026-12-02b.json 1.242 ms). v2 3xTF32 tile (session 5),
// predicted 0.45-0.9 ms (mma.sync at 35-60% of the TF32 peak, 1 GB of stores overlapped),
// measured 0.992 ms (kb bench L1_054,L1_060,L2_007 --time-cap 2 --seed 7; 2.04x the cuDNN
// reference): the goal (0.94 ms) is 5% away. Shape sweep (4 shapes, seed 2026): worst 1.27x.
// v3 (session 6) weights pre-split in shared memory: measured 1.072 ms, slower (ncu: more issue,
// not less); rejected. v4 (session 6) K = 81 as 80 on the tensor cores + 1 on FMAs (a padded k8
// step was 1/11 of the MMAs): predicted ~0.92-0.95 ms, measured 0.954 ms (kb bench
// L1_054,L1_060,L2_007 --time-cap 3 --seed 7; 1.97x), 1.5% from the goal; sweep worst 1.13x.
// v5 (session 8) the tile's patch as separate big / small arrays (no register moves per A
// fragment), 16-byte patch staging, 32-bit tile index (ncu source counters, docs/kernels.md):
// measured 0.82 ms (kb bench L1_054,L1_060 --time-cap 2 --seed 7, twice), 0.826 ms in kb bench
// kernelbench22 (docs/bench-h200-2026-12-02-s8.json): goal met, 1.69x the 1.40 ms peer.
//
// Accuracy: 3xTF32 (tf32x3_tile.cuh: small x small dropped, 11 k8 steps of MMA truncation) or
// strict fp32 FMA on the FMA tile; no fast intrinsics; each output one fp32 accumulator over its
// 81 products, not amplified (no norm, no statistics). 3xTF32 tile: max |err| 2.6e-6 at the full
// preset (call B1). The numbers below are the FMA tile's (session 4); the 3xTF32 tile passed the
// custom, sweep and robustness tests on the H200 (call A, 45 tests of the three conv3d problems).
// Measured max |err| 8.3e-7 at the full preset (bench 2026-12-02b) vs 1e-4 + 1e-4 |r| allowed.
// Robustness trials (small preset, seed 7, vs the golden model): shift (x + 100) 0.38x the
// tolerance (reference 0.33x), scale (x 1000) 0.62x (0.80x), centered 0.002x: the error follows |x|
// exactly as the fp32 reference's does.
#include "kernels/cores/conv3d_direct/direct.cuh"
#include "kernels/implementation.h"

namespace kb::custom::L1_054 {

using Conv3dSquare = conv3d_direct::PlainConv3dVariant<3, 3, 3>;

}  // namespace kb::custom::L1_054

KB_REGISTER_IMPLEMENTATION(L1_054, custom, kb::custom::L1_054::Conv3dSquare)
