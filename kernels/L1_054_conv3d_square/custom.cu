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
// Design: one launch of the direct tile kernel of kernels/cores/conv3d_direct/direct.cuh with
// the 3x3x3 taps fixed at compile time: a block stages its 3 x 3 input planes (16 + 2 rows x 66
// columns) and all 64 channels' weights in shared memory (63.5 KB, two blocks per
// multiprocessor); each warp runs 4 tasks of 8 channels x 4 rows x 64 columns, a lane 64
// accumulators, 576 FFMA per 54 shared loads per (c, kd); stores are coalesced 128-byte row
// pieces (rows of 62 floats: no vector-alignment assumption). Lanes doing useful work: 62/64
// columns x 62/64 rows = 94%. 115 registers, no spills.
// Fallback: other strides, dilations, groups or kernel sizes take the core's generic
// one-thread-per-output kernel (any geometry, same fp32 math).
//
// Predicted: 0.59 ms / (0.94 useful lanes x ~0.9 FFMA issue share) + staging/tail ~8% ~ 0.75 ms.
// Measured (H200, full preset): 1.24 ms on 2026-11-30 (docs/kernels.md), 1.242 ms in
// docs/bench-h200-2026-12-02b.json: 32 TFLOP/s of the 67, 2.1x the floor. The accumulator tiles
// need 115 registers (2 blocks per SM) and the kw loop stays rolled, so issue efficiency is ~50%.
// Next (docs/kernels.md): the 3xTF32 implicit GEMM (K = 81), predicted ~0.3 ms.
//
// Accuracy: strict fp32 FMA, no TF32 and no fast intrinsics; each output is one fp32
// accumulator over its 81 products (order c, kd, kw, kh), a rounding of ~sqrt(81) x 2^-24 of
// sum |w x|, not amplified (no norm, no statistics). Measured max |err| 8.3e-7 at the full preset
// (bench 2026-12-02b) vs 1e-4 + 1e-4 |r| allowed. Robustness trials (small preset, seed 7, vs the
// golden model): shift (x + 100) 0.38x the tolerance (reference 0.33x), scale (x 1000) 0.62x
// (0.80x), centered 0.002x: the error follows |x| exactly as the fp32 reference's does.
#include <cuda_runtime.h>

#include <cstddef>

#include "kernels/cores/conv3d_direct/direct.cuh"
#include "kernels/implementation.h"

namespace kb::custom::L1_054 {

using Conv = conv3d_direct::Conv3d<3, 3, 3, conv3d_direct::NoEpilogue>;

class Conv3dSquare final : public Implementation {
 public:
  Status setup(const ProblemInstance& p, cudaStream_t /*stream*/) override {
    x_ = input_index(p, "x");
    weight_ = param_index(p, "conv3d.weight");
    return conv_.setup(p, "conv3d");
  }

  Status run(const ImplArgs& args, cudaStream_t stream) override {
    return conv_.run(args.inputs[x_].data, args.params[weight_].data, args.output.data,
                     conv3d_direct::NoEpilogue{}, stream);
  }

 private:
  Conv conv_;
  size_t x_ = 0, weight_ = 0;
};

}  // namespace kb::custom::L1_054

KB_REGISTER_IMPLEMENTATION(L1_054, custom, kb::custom::L1_054::Conv3dSquare)
