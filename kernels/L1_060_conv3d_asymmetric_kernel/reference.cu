// L1_060 reference: Conv3d(C_in, C_out, (3, 5, 7), bias=False) as PyTorch eager runs it: one
// cuDNN forward convolution (CudnnConv: legacy API, CUDNN_FMA_MATH, strict fp32).
#include "kernels/device/single_conv_reference.h"

namespace kb::ref::L1_060 {

// x: (N, C_in, D, H, W) -> out: (N, C_out, D-2, H-4, W-6)
class Reference final : public SingleConvReference {
 public:
  Reference() : SingleConvReference("conv3d") {}
};

}  // namespace kb::ref::L1_060

KB_REGISTER_IMPLEMENTATION(L1_060, reference, kb::ref::L1_060::Reference)
