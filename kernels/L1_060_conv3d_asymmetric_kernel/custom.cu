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
// Design: one launch of the direct tile kernel of kernels/cores/conv3d_direct/direct.cuh with
// the 3x5x7 taps fixed at compile time: a block (4 output rows, all 64 channels) stages 3 x 3
// input planes of 8 rows x 70 columns (20 KB) and all weights (80 KB) in shared memory, two
// blocks per multiprocessor; each warp owns one task: 8 channels x 4 rows x 64 columns, a lane 64
// accumulators, 2,240 FFMA per 182 shared loads per (c, kd). Lanes doing useful work: 58/64
// columns (rows 60 = 15 x 4 exactly) = 91%. 116 registers, no spills.
// Fallback: other strides, dilations, groups or kernel sizes take the core's generic
// one-thread-per-output kernel (any geometry, same fp32 math).
//
// Predicted: 2.08 ms / (0.91 x ~0.92 FFMA issue share) + ~4% staging/tail ~ 2.6 ms.
// Measured (H200, full preset): 3.72 ms on 2026-11-30 (docs/kernels.md), 3.726 ms in
// docs/bench-h200-2026-12-02b.json: 37 TFLOP/s of the 67, 1.8x the floor (registers: 2 blocks
// per SM, the kw loop rolled: ~50% issue efficiency). Next (docs/kernels.md): the 3xTF32
// implicit GEMM (K = 315), predicted ~0.9 ms.
//
// Accuracy: strict fp32 FMA, no TF32 and no fast intrinsics; each output is one fp32
// accumulator over its 315 products (order c, kd, kw, kh), a rounding of ~sqrt(315) x 2^-24 of
// sum |w x|, not amplified (no norm, no statistics). Measured max |err| 1.6e-6 at the full preset
// (bench 2026-12-02b) vs 1e-4 + 1e-4 |r| allowed. Robustness trials (small preset, seed 7, vs the
// golden model): shift (x + 100) 0.20x the tolerance (reference 0.18x); scale (x 1000) 1.43x,
// `ill_conditioned` (the reference is outside too, 1.25x: K = 315 fp32 sums of outputs ~1e3);
// centered 0.004x.
#include <cuda_runtime.h>

#include <cstddef>

#include "kernels/cores/conv3d_direct/direct.cuh"
#include "kernels/implementation.h"

namespace kb::custom::L1_060 {

using Conv = conv3d_direct::Conv3d<3, 5, 7, conv3d_direct::NoEpilogue>;

class Conv3dAsymmetricKernel final : public Implementation {
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

}  // namespace kb::custom::L1_060

KB_REGISTER_IMPLEMENTATION(L1_060, custom, kb::custom::L1_060::Conv3dAsymmetricKernel)
