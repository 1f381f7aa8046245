// L1_075 custom: ConvTranspose2d(C_in, C_out, (3, 5), stride=(2, 3), padding=(1, 2),
// dilation=(2, 1), groups=4, bias=False).
//
// Cost (docs/problems.md#l1_075, full preset x (16, 32, 128, 256) -> y (16, 64, 257, 766)): 3.99 G
// MAC = 7.99 GFLOP -> t_fp32 119 us; 873 MB (y 806) -> t_mem 203 us. Floor 203 us: memory-bound
// (the output writes). Best strict-fp32 peer 5.71 ms.
//
// Math: rows: oh + 1 = 2 qh + rh; all 3 kernel rows land on phase rh = 0 (input rows qh, qh - 1,
// qh - 2), phase 1 (every even row, 50.2% of y) is exactly 0. Columns: ow + 2 = 3 qw + rw; taps
// {0, 3} land on phase 0, {1, 4} on phase 1, {2} on phase 2, at inputs qw (taps 0-2) and qw - 1
// (taps 3, 4). Each output of an odd row sums 8 channels of its group x 3 rows x 1-2 taps.
//
// Design (gather.cuh, row_gather_kernel<5, 3, 1>): one block per (n, output row, group of 16
// channels). An even row is written as zeros with 16-byte stores. Otherwise the block stages the
// 3 input rows of the group's 8 channels (25 KB) and their weights (8 KB), then in 2 passes of 8
// channels each thread sums the 3 phases of one column position qw (40 FMA per 12 shared loads
// per row and channel), writes the row to shared memory in the output's 16-byte phase, and the
// warps copy it out with 16-byte stores (766-float rows: the phase changes from row to row).
// 57 KB shared memory per block: 3 blocks (24 warps) per SM.
// Predicted: ~0.27 ms (the stores near the copy bandwidth, with ~150 us of FMA and shared loads
// overlapping them).
// Any N, channels, groups, sizes, row taps, padding and output_padding run the fast path as long
// as the column taps are (K_w, s_w, d_w) = (5, 3, 1) and the staged rows fit shared memory;
// anything else runs the generic gather (correct, slow).
// Ladder (variant -> predicted -> measured, H200, kb bench full preset, L2 flushed):
//   v1 (this code) block per output row (even rows are all zeros) -> 0.27 -> 0.508 ms
//      (1.72 TB/s): stage, compute and store run in sequence within a block.
//   v2 two-row windows (the zero row stored while the odd row stages), weights staged
//      taps-fastest -> predicted 0.43-0.45 -> measured 0.522 ms. Reverted to v1.
//   Next: two column positions per thread (twice the FMAs per weight load) and a persistent,
//      double-buffered row pipeline.
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
