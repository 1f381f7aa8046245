// L1_054 custom: Conv3d(3, 64, (3, 3, 3), bias=False), stride 1, no padding.
//   x: (16, 3, 64, 64, 64) -> y: (16, 64, 62, 62, 62), fp32 NCDHW (full preset).
//
// Cost (docs/problems.md#l1_054): 19.77 G MAC = 39.5 GFLOP -> t_fp32 590 us (no TF32: it fails the
// tolerance 3.4x); 1,026 MB (y is 95%) -> t_mem 239 us. Floor 590 us, FMA-bound. Reference
// (cuDNN, strict fp32) 1.85 ms.
//
// Design: the direct tile kernel of kernels/cores/conv3d_direct/direct.cuh with the 3x3x3 taps
// fixed at compile time: a block stages its 3 x 3 input planes (16 + 2 rows x 66 columns) and all
// 64 channels' weights in shared memory (63.5 KB, two blocks per multiprocessor); each warp runs 4
// tasks of 8 channels x 4 rows x 64 columns, a lane 64 accumulators, 576 FFMA per 54 shared
// loads per (c, kd); stores are coalesced 128-byte row pieces (rows of 62 floats: no vector-
// alignment assumption). Lanes doing useful work: 62/64 columns x 62/64 rows = 94%. 115
// registers, no spills.
// Predicted: 0.59 ms / (0.94 useful lanes x ~0.9 FFMA issue share) + staging/tail ~8% ~ 0.75 ms.
// Other strides, dilations, groups or kernel sizes take the generic one-thread-per-output kernel.
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
