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
// Design (kernels/cores/conv_transpose_gather/gather.cuh, row_gather_kernel<5, 3, 1>), one
// launch: one block per (n, output row, group of 16 channels). An even row is written as zeros
// with 16-byte stores. Otherwise the block stages the 3 input rows of the group's 8 channels
// (25 KB) and their weights (8 KB), then in 2 passes of 8 channels each thread sums the 3 phases
// of one column position qw (40 FMA per 12 shared loads per row and channel), writes the row to
// shared memory in the output's 16-byte phase, and the warps copy it out with 16-byte stores
// (766-float rows: the phase changes from row to row). 57 KB shared memory per block: 3 blocks
// (24 warps) per SM.
// The weights are first rearranged in staging order by prepare_row_weights_kernel (one small
// launch per call), so that a block stages them with 16-byte copies (v5, below: 0.464 ms).
// Any N, channels, groups, sizes, row taps, padding and output_padding run the fast path as long
// as the column taps are (K_w, s_w, d_w) = (5, 3, 1) and the staged rows fit shared memory;
// anything else runs the generic gather (a thread or a few lanes per output) of gather.cuh
// (correct, slow).
//
// Predicted: ~0.27 ms (the stores near the copy bandwidth, with ~150 us of FMA and shared loads
// overlapping them). Measured (H200, full preset): 0.508 ms (2026-11-30, docs/kernels.md),
// 0.510 ms in docs/bench-h200-2026-12-02b.json (1.7 TB/s, 2.5x the floor, 1.5x the goal). ncu
// (docs/profiles/ncu-h200-2026-11-30-L1_075.txt): issue slots 80% busy, DRAM 35% at 50%
// occupancy: instruction-bound, not store-bound as the prediction assumed.
//
// Accuracy: strict fp32 FMA (no TF32, no fast intrinsics), each output one fp32 sum of at most
// 8 channels x 3 rows x 2 taps = 48 products; the structural zeros are exact. No statistics, no
// norm. Measured max |err| 3.6e-7 at the full preset (bench 2026-12-02b) vs 1e-4 + 1e-4 |r|
// allowed. Robustness trials (small preset, seed 7, vs the golden model): shift (x + 100) 0.044x
// the tolerance (reference 0.055x), scale (x 1000) 0.24x (0.21x), centered 0.0005x.
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
//   Next: isolate that 4%; the K loop is ~60% FFMA (10 other instructions per 24 FFMA per row).
#include "kernels/cores/conv_transpose_gather/gather.cuh"
#include "kernels/implementation.h"

namespace kb::custom::L1_075 {

class ConvTranspose2dGroupedDilated final
    : public gather::RowGatherConvTranspose</*kKw=*/5, /*kSw=*/3, /*kDw=*/1> {
 public:
  ConvTranspose2dGroupedDilated()
      : RowGatherConvTranspose("conv_transpose2d", "x", "conv_transpose2d.weight") {}
};

}  // namespace kb::custom::L1_075

KB_REGISTER_IMPLEMENTATION(L1_075, custom, kb::custom::L1_075::ConvTranspose2dGroupedDilated)
