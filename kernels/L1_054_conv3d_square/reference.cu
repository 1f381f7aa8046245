// L1_054 reference: Conv3d(C_in, C_out, (3, 3, 3), bias=False) as PyTorch eager runs it: one
// cuDNN forward convolution (CudnnConv: legacy API, CUDNN_FMA_MATH, strict fp32).
#include "kernels/device/single_conv_reference.h"

namespace kb::ref::L1_054 {

// x: (N, C_in, D, H, W) -> out: (N, C_out, D-2, H-2, W-2)
class Reference final : public SingleConvReference {
 public:
  Reference() : SingleConvReference("conv3d") {}
};

}  // namespace kb::ref::L1_054

KB_REGISTER_IMPLEMENTATION(L1_054, reference, kb::ref::L1_054::Reference)
