// L1_081 custom: y = ConvTranspose2d(C_in, C_out, 3, stride=5, padding=1, dilation=2,
// bias=False)(x).
//   x: (N, C_in, H, W), w: (C_in, C_out, 3, 3), y: (N, C_out, 5H - 2, 5W - 2) fp32 NCHW (full
//   preset: x (16, 32, 64, 128) -> y (16, 64, 318, 638)).
//   Per axis o + 1 = 5q + r; tap t lands on phase r = 2t mod 5 = {0, 2, 4} at input q (offset
//   floor(2t / 5) = 0), so each output gets at most one tap per axis and phases 1 and 3 are 0:
//   64.2% of y is exactly 0. A non-zero output is one C_in-long dot product
//     y[n, co, 5 qh + rh - 1, 5 qw + rw - 1] = sum_c x[n, c, qh, qw] * w[c, co, rh/2, rw/2].
//
// Cost (docs/problems.md#l1_081, full preset): 2.38 G MAC = 4.76 GFLOP -> t_fp32 71 us; 848 MB
// (y 831) -> t_mem 197 us. Floor 197 us: memory-bound (the output writes). Best strict-fp32 peer
// 1.24 ms (autotuned cuDNN, docs/baselines.md); goal <= 0.32 ms (1.6 x the floor).
//
// Design (kernels/cores/conv_transpose_gather/gather.cuh, row_gather_kernel<3, 5, 2>), one
// launch: one block per (n, output row), all 64 channels. A row without a tap (128 of 318) is
// written as zeros with 16-byte stores. Otherwise the block stages the input row x[n, :, qh, :]
// (16 KB) and w[:, :, rh/2, :] (24 KB), then in 4 passes of 16 channels each thread sums 3 phases
// x 8 channels of one column position qw over the 32 input channels (24 FMA per 7 shared loads),
// writes the row to shared memory in the output's 16-byte phase (the zero phases too), and the
// warps copy it out with 16-byte stores. 82 KB shared memory per block: 2 blocks (16 warps) per
// SM.
// The weights are first rearranged in staging order by prepare_row_weights_kernel (one small
// launch per call), so that a block stages them with 16-byte copies (v5, below: 0.339 ms).
// Few output channels (at most 8, and rows of at most 64 column positions: row_threads) take a
// 64-thread block instead: one warp along the row x 2 sets of 4 channels, 8 channels a pass and a
// block, <= 64 registers for 16 blocks per SM. The 256-thread block computed 32 channels a pass
// there, most of them padding: 0.63x the reference at N 10, 25 -> 7 channels, 47 x 25 (preset
// few_out: 9.3 KB of shared memory a block instead of 29.5) and 0.65x at N 3, 64 -> 3, 30 x 50;
// at 16, 8 -> 4, 64 x 64 (four_out: 13.4 KB instead of 47.6) 1.4x. Measured (session 41, H100,
// main's pack -> this one, us, reference in brackets): 25 -> 7 38 -> 25 [24]; 64 -> 3 23 -> 20
// [15]; 8 -> 4 42 -> 20 [59]; N 4, 16 -> 8, 32 x 32 15 -> 12 [15]. Wider layers (the full preset,
// C_out 12) run the 256-thread kernel, its SASS unchanged.
// Any N, channels, sizes, padding, output_padding and row taps run the fast path as long as the
// column taps are (K_w, s_w, d_w) = (3, 5, 2) and the staged rows fit shared memory; anything
// else runs the generic gather (four outputs a thread, a few lanes for long sums) of generic.cuh.
//
// Predicted: ~0.24 ms (stores at ~85% of the copy bandwidth; the ~100 us of FMA and shared
// loads overlap with the other block's stores). Measured (H200, full preset): 0.361 ms
// (docs/kernels.md), 0.362 ms in docs/bench-h200-2026-12-02b.json (2.3 TB/s, 1.8x the floor,
// 1.1x the goal); see the ladder.
//
// Accuracy: strict fp32 FMA (no TF32, no fast intrinsics), each non-zero output one fp32 sum of
// its 32 products; the zero phases are exact. No statistics, no norm. Measured max |err| 0 at
// the full preset (bench 2026-12-02b: the same values as the reference) vs 1e-4 + 1e-4 |r|
// allowed. Robustness trials (small preset, seed 7, vs the golden model): shift (x + 100) 0.032x
// the tolerance, scale (x 1000) 0.15x, centered 0.0004x, each equal to the reference's. The
// check is the weakest of the conv problems (TF32 is borderline, docs/problems.md#l1_081): this
// kernel keeps fp32 anyway.
//
// Ladder (variant -> predicted -> measured, H200, kb bench full preset, L2 flushed):
//   v1 (this code) block per output row, zero rows in blocks of their own -> 0.24 -> 0.361 ms
//      (2.35 TB/s): each block stages, computes and stores in sequence; weights staged one
//      32-byte sector per lane (stride 9 floats).
//   v2 windows of 5 rows per block (zero rows stored while the next row stages) and weights
//      staged taps-fastest -> predicted 0.31-0.33 -> measured 0.397 ms: slower (127 registers,
//      1,024 blocks = 3.9 waves, rows of a window still serialized). Reverted to v1.
//   v3 (session 2, docs/kernels.md) one persistent 512-thread block per SM, 16 independent warps
//      -> predicted 0.235 -> measured 0.559 ms (input reads from L2 not hidden, scattered row
//      stores). Rejected; v1 kept (re-measured 0.362 ms).
//   v4 (session 7) warp-owned items (see L1_075's ladder) -> predicted 0.26-0.30 -> measured
//      0.358-0.469 ms over five item shapes (device call 1 of session 7): no gain. Rejected.
//   v5 (session 7, this code) weights prepared once per call in staging order and staged by
//      16-byte copies (ncu: 36% of the L2 sectors were the strided 4-byte weight copies, 17.0 M
//      excessive; after: 2%) -> predicted -3 to -8% -> measured 0.339 ms in three runs (kb bench
//      L1_075,L1_081 --time-cap 3 --seed 7): -6%, 1.06x the 0.32 ms goal.
//   v5b (session 7, this code) the input rows staged by 16-byte copies too when the staged span
//      lies inside x (here: 128 of 128 columns) -> predicted -2 to -3% -> measured 0.334 ms (kb
//      bench L1_075,L1_081,L2_010 --time-cap 3 --seed 7, device call 6): -1.5%, 1.04x the goal.
//   v6 (session 7, this code) two column positions x 4 channels per thread (RowThreadTile)
//      instead of 1 x 8: 5 shared loads per 24 FMA instead of 7 -> predicted -3 to -5% ->
//      measured 0.341 / 0.340 ms against 1 x 8's 0.343 / 0.344 on the same machine (device call
//      7, A/B in alternation): -1%.
//   v7 (session 8, this code) ncu source counters: 42% of the instructions outside the K loop.
//      The row taps of each output row from a per-phase table in the params, a (channel block,
//      row, sample) grid, z rows with margins (no bounds check per output), staging without a
//      division per element -> predicted "fewer instructions" (213 -> 196 M counted) -> measured
//      0.328 then 0.312 ms (kb bench L1_075,L1_081 --time-cap 3 / 2 --seed 7, device calls 5, 6),
//      0.297 ms in kernelbench22 (docs/bench-h200-2026-12-02-s8.json): the 0.32 ms goal is met.
//   Next: a persistent, double-buffered row pipeline (stage row r+1 while computing row r), or a
//      TMA bulk-store pipeline (docs/kernels.md).
#include "kernels/cores/conv_transpose_gather/gather.cuh"
#include "kernels/implementation.h"

namespace kb::custom::L1_081 {

class ConvTranspose2dDilatedStrided final
    : public gather::RowGatherConvTranspose</*kKw=*/3, /*kSw=*/5, /*kDw=*/2> {
 public:
  ConvTranspose2dDilatedStrided()
      : RowGatherConvTranspose("conv_transpose2d", "x", "conv_transpose2d.weight") {}
};

}  // namespace kb::custom::L1_081

KB_REGISTER_IMPLEMENTATION(L1_081, custom, kb::custom::L1_081::ConvTranspose2dDilatedStrided)
