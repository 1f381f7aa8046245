// L1_060 custom: Conv3d(3, 64, (3, 5, 7), bias=False), stride 1, no padding.
//   x: (16, 3, 64, 64, 64) -> y: (16, 64, 62, 60, 58), fp32 NCDHW (full preset); the kernel
//   extents apply to dims 2, 3, 4 in that order.
//
// Cost (docs/problems.md#l1_060): 69.6 G MAC = 139.2 GFLOP -> t_fp32 2.08 ms (TF32 fails the
// tolerance 3.3x); 934 MB -> t_mem 217 us. Floor 2.08 ms, FMA-bound. Reference (cuDNN) 9.97 ms.
//
// Design: the direct tile kernel of kernels/cores/conv3d_direct/direct.cuh with the 3x5x7 taps
// fixed at compile time: a block (4 output rows, all 64 channels) stages 3 x 3 input planes of 8
// rows x 70 columns (20 KB) and all weights (80 KB) in shared memory, two blocks per
// multiprocessor; each warp owns one task: 8 channels x 4 rows x 64 columns, a lane 64
// accumulators, 2,240 FFMA per 182 shared loads per (c, kd). Lanes doing useful work: 58/64 columns
// (rows 60 = 15 x 4 exactly) = 91%. 116 registers, no spills. Predicted: 2.08 ms / (0.91 x ~0.92
// FFMA issue share) + ~4% staging/tail ~ 2.6 ms. Other strides, dilations, groups or kernel sizes
// take the generic one-thread-per-output kernel.
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
