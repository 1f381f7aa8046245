// L1_081 custom: ConvTranspose2d(C_in, C_out, 3, stride=5, padding=1, dilation=2, bias=False).
//
// Cost (docs/problems.md#l1_081, full preset x (16, 32, 64, 128) -> y (16, 64, 318, 638)): 2.38 G
// MAC = 4.76 GFLOP -> t_fp32 71 us; 848 MB (y 831) -> t_mem 197 us. Floor 197 us: memory-bound (the
// output writes). Best strict-fp32 peer 1.24 ms.
//
// Math: per axis o + 1 = 5q + r; tap t lands on phase r = 2t mod 5 = {0, 2, 4} at input q (offset
// floor(2t / 5) = 0), so each output gets at most one tap per axis and phases 1 and 3 are 0:
// 64.2% of y is exactly 0. A non-zero output is one C_in-long dot product
//   y[n, co, 5 qh + rh - 1, 5 qw + rw - 1] = sum_c x[n, c, qh, qw] * w[c, co, rh/2, rw/2].
//
// Design (gather.cuh, row_gather_kernel<3, 5, 2>): one block per (n, output row), all 64
// channels. A row without a tap (128 of 318) is written as zeros with 16-byte stores. Otherwise
// the block stages the input row x[n, :, qh, :] (16 KB) and w[:, :, rh/2, :] (24 KB), then in 4
// passes of 16 channels each thread sums 3 phases x 8 channels of one column position qw over
// the 32 input channels (24 FMA per 7 shared loads), writes the row to shared memory in the
// output's 16-byte phase (the zero phases too), and the warps copy it out with 16-byte stores.
// 82 KB shared memory per block: 2 blocks (16 warps) per SM.
// Predicted: ~0.24 ms (stores at ~85% of the copy bandwidth; the ~100 us of FMA and shared
// loads overlap with the other block's stores).
// Any N, channels, sizes, padding, output_padding and row taps run the fast path as long as the
// column taps are (K_w, s_w, d_w) = (3, 5, 2) and the staged rows fit shared memory; anything
// else runs the generic gather (correct, slow).
// Ladder (variant -> predicted -> measured, H200, kb bench full preset, L2 flushed):
//   v1 (this code) block per output row, zero rows in blocks of their own -> 0.24 -> 0.361 ms
//      (2.35 TB/s): each block stages, computes and stores in sequence; weights staged one
//      32-byte sector per lane (stride 9 floats).
//   v2 windows of 5 rows per block (zero rows stored while the next row stages) and weights
//      staged taps-fastest -> predicted 0.31-0.33 -> measured 0.397 ms: slower (127 registers,
//      1,024 blocks = 3.9 waves, rows of a window still serialized). Reverted to v1.
//   Next: a persistent, double-buffered row pipeline (stage row r+1 while computing row r).
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
