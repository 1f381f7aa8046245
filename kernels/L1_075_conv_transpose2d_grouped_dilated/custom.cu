// L1_075 custom: y = ConvTranspose2d(C_in, C_out, (3, 5), stride=(2, 3), padding=(1, 2),
// dilation=(2, 1), groups=4, bias=False)(x).
//   x: (N, C_in, H, W), w: (C_in, C_out / 4, 3, 5), y: (N, C_out, 2H + 1, 3W - 2) fp32 NCHW; group
//   g maps input channels 8g..8g+7 to output channels 16g..16g+15 (full preset: x (16, 32, 128,
//   256) -> y (16, 64, 257, 766)).
//   Rows: oh + 1 = 2 qh + rh; all 3 kernel rows land on phase rh = 0 (input rows qh, qh - 1,
//   qh - 2), phase 1 (every even row, 50.2% of y) is exactly 0. Columns: ow + 2 = 3 qw + rw; taps
//   {0, 3} land on phase 0, {1, 4} on phase 1, {2} on phase 2, at inputs qw (taps 0-2) and
//   qw - 1 (taps 3, 4). Each output of an odd row sums 8 channels of its group x 3 rows x 1-2
//   taps.
//
// Cost (docs/problems.md#l1_075, full preset): 3.99 G MAC = 7.99 GFLOP -> t_fp32 119 us; 873 MB
// (y 806) -> t_mem 203 us. Floor 203 us: memory-bound (the output writes). Best strict-fp32 peer
// 5.71 ms (autotuned cuDNN, docs/baselines.md); goal <= 0.33 ms (1.6 x the floor).
//
// Design (v8, kernels/cores/conv_transpose_gather/tensor_rows.cuh, tensor_rows_kernel<5, 3, 1,
// 3>): the row gather's blocks (n, output row, 16 channels = one group) on 3xTF32 tensor cores.
// An even row is written as zeros with 16-byte stores. Otherwise the block stages the 3 input
// rows of the group's 8 channels (from column -4: 16-byte cp.async) and their weights, prepared
// once per call as split A fragments (prepare_tensor_weights_kernel); each of the 8 warps takes
// 32 column positions qw of the row: per row tap, 5 column taps x 4 n8 tiles x 3 MMAs (60) from
// one window of 5 columns per lane (tap-shifted tiles: column n of tile j is qw = 4 n + j, so
// taps 3 and 4, which read qw - 1, take the window one column left), 3 phases per position in
// 48 accumulator registers. The results go to shared memory in each output row's 16-byte phase
// (over the staged rows) and the warps copy them out with 16-byte stores.
// Any N, channels (<= 32 input channels per group), sizes, row taps, padding and output_padding
// run the tensor rows while the column taps are (K_w, s_w, d_w) = (5, 3, 1) and the staged rows
// fit shared memory, on layers of more than 8 M multiply-adds with rows of >= 32 column positions
// (v10); else the FFMA row gather (v7, gather.cuh, row_gather_kernel<5, 3, 1>: a thread per 2
// positions x 4 channels), or the generic gather (correct, slow) for small layers with rows of <
// 16 positions (v5's rule) and for groups of 1-2 output channels (v10).
//
// Predicted (v8): 0.28-0.32 ms: ~12 M MMAs (~80 us at the mma.sync rate) and the staging overlap
// the 806 MB of row stores (~250 us) across the SM's blocks. Measured 0.326 ms (session 16,
// `kb bench L1_075 --time-cap 2 --seed 7`, two runs: 0.326 / 0.325; 1.60x the floor), 0.355 ms
// with 2 blocks per SM (112-116 registers); with v9's 8-byte output staging **0.291 ms**
// (session 17: 1.43x the floor, 19.8x the reference; goal 0.32 met).
//
// Accuracy: 3xTF32 (kernels/cores/tf32x3/mma.cuh: small x big + big x small + big x big, the
// products exact), each output's at most 3 row taps x 2 column taps x 3 MMAs kept in the MMA
// accumulator (no promotion: 18 truncating sums at the preset); the structural zeros are exact.
// Measured max |err| 5.4e-7 at the full preset (fp32 FMA v7: 3.6e-7) vs 1e-4 + 1e-4 |r|.
// Robustness trials (robust preset, seed 7, vs the golden model; kb22 of session 16): shift
// (x + 100) 0.100x the tolerance (reference 0.067x), scale (x 1000) 0.68x (0.36x), centered
// 0.0014x (0.0008x): all pass, the scale trial at ~2x the reference's error (v7 on FFMA: 0.24x).
// A scratch model of the truncating accumulator (not kept) put this kernel's excess at ~3.5-3.8x
// fp32 FMA's for 8, 16 and 32 input channels per group alike: a longer sum does not widen the
// gap much. Promoting each (row tap, k8 step) out of the accumulator (16 more registers) is the
// lever if a trial ever nears 1.
//
// Ladder (variant -> predicted -> measured, H200, kb bench full preset, L2 flushed):
//   v1 (this code) block per output row (even rows are all zeros) -> 0.27 -> 0.508 ms
//      (1.72 TB/s): stage, compute and store run in sequence within a block.
//   v2 two-row windows (the zero row stored while the odd row stages), weights staged
//      taps-fastest -> predicted 0.43-0.45 -> measured 0.522 ms. Reverted to v1.
//   v3 (session 2, docs/kernels.md) one persistent 512-thread block per SM, 16 independent warps
//      -> predicted 0.26 -> measured 0.709 ms (direct-from-L2 input reads did not hide their
//      latency; ~2,100 scattered row stores at once). Rejected; v1 kept.
//   v4 (session 7) warp-owned items (64-128 columns x 4-8 channels, each warp transposing its
//      own item in shared memory, no block barrier after staging), 2-4 columns per lane ->
//      predicted 0.38-0.42 -> measured 0.537-0.632 ms over five item shapes (device call 1 of
//      session 7): slower. Rejected.
//   v5 (session 7, this code) the weights prepared once per call in staging order
//      (prepare_row_weights_kernel) and staged by 16-byte copies; ncu had put 30% of the L2
//      sectors on the 4-byte strided weight copies (14.3 M excessive) -> predicted -1 to -3% ->
//      measured 0.464 / 0.463 / 0.464 ms (kb bench L1_075,L1_081 --time-cap 3 --seed 7, three
//      runs): -9%. Layers of <= 8 M MACs with rows of < 16 column positions run the generic
//      gather (sweep seed 2026: worst 0.67x -> 1.67x).
//   v6 (session 7, this code) two column positions x 4 channels per thread instead of 1 x 8
//      (9 shared loads per 40 FMA instead of 12) -> predicted -3 to -6% -> measured 0.474 /
//      0.476 ms against 1 x 8's 0.494 / 0.495 on the same machine (device call 7, A/B in
//      alternation; that machine ran 1 x 8 at 0.494 where call 6's ran 0.457): -4%.
//   v7 (session 8, this code) the row gather's overhead (L1_081's v7: row-tap table, 3-D grid,
//      z margins, staging without divisions) -> measured 0.422 ms with the table and grid alone
//      (device call 5), 0.440 / 0.442 ms with all of it (calls 6, 7; an A/B in call 8 found the
//      margins neutral here, so the ~4% is in the staging loops or the registers): -7% over v6.
//   v8 (session 16, this code) the tensor rows above (3xTF32, tap-shifted n8 tiles, one window
//      per lane for all 5 column taps) -> predicted 0.28-0.32 -> measured 0.355 ms at 2 blocks per
//      SM, 0.326 ms at 3 (the launch bound caps ptxas at 80 registers, ~90 bytes of spills);
//      v7's FFMA rows 0.439 in the same call (KB_ROWS_FFMA, a switch of that build only).
//      Layers of <= 8 M multiply-adds keep v7 (the sweep missed with v8 at every size).
//   v9 (session 17, this code) each lane's 24-output runs into the staged output rows as 8-byte
//      stores (stage_item_outputs; ncu of v8: 4-way bank conflicts on the 4-byte stores, 73% of
//      the shared-store wavefronts) -> predicted a few % -> measured 0.325 / 0.324 -> **0.291 /
//      0.291 ms** (kb bench L1_075,L2_007 --time-cap 2 --seed 7, alternating with the v8 pack in
//      one call; 0.290-0.291 in two later calls): -10.5%, 1.43x the floor, goal met. ncu: store
//      wavefronts 13.3 M -> 7.0 M, duration 324 -> 285 us at ncu's 1.75 GHz; now L2 77% busy,
//      DRAM 63%.
//   v10 (session 54, this code) the sweep (seed 54, H100) measured N 11, 28 -> 4 (1 channel a
//      group), 127 x 19 at 0.403x on the tensor rows (93 us against 38): 11,220 blocks, each odd
//      row's staging 15.4 KB of fragments for one 55-float row with 1 of its 8 warps busy. One
//      call forcing each path (`kb bench L1_075 --dims ...` with an experiment switch, H100,
//      /work/.device/6; tensor rows / FFMA row gather / generic gather, x the reference): there
//      0.41 / 0.63 / 1.14; 28 -> 12 0.85 / 1.28 / 1.02; 28 -> 20 1.19 / 1.69 / 1.27; 4 -> 28 4.6 /
//      11.9 / 11.6 (all 19 positions a row); N 16, 28 -> 4, 127 x 99 (99 positions) 1.12 / 0.74 /
//      0.94; the ragged preset (62) 2.82 / 2.89. So the tensor rows need a row of one item (32
//      positions), and groups of 1-2 output channels take the generic gather off the tensor rows
//      (tensor_rows.cuh's setup). The presets keep their paths (tests/gpu/tensor_rows_test.cu).
//   Next: promotion per (row tap, k8 step) for the scale trial; the next odd row's block stages
//      2 of this block's 3 input rows again: a block of 2 odd rows would stage 4 instead of 6.
#include "kernels/cores/conv_transpose_gather/tensor_rows.cuh"
#include "kernels/implementation.h"

namespace kb::custom::L1_075 {

class ConvTranspose2dGroupedDilated final
    : public gather::TensorRowConvTranspose</*kKw=*/5, /*kSw=*/3, /*kDw=*/1> {
 public:
  ConvTranspose2dGroupedDilated()
      : TensorRowConvTranspose("conv_transpose2d", "x", "conv_transpose2d.weight") {}
};

}  // namespace kb::custom::L1_075

KB_REGISTER_IMPLEMENTATION(L1_075, custom, kb::custom::L1_075::ConvTranspose2dGroupedDilated)
