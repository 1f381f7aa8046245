// L1_070 reference: ConvTranspose3d(C_in, C_out, (3, 3, 3), bias=False) as PyTorch eager runs it:
// one cuDNN backward-data convolution (CudnnConv: legacy API, CUDNN_FMA_MATH, strict fp32).
#include "kernels/device/single_conv_reference.h"

namespace kb::ref::L1_070 {

// x: (N, C_in, D, H, W) -> out: (N, C_out, D+2, H+2, W+2)
class Reference final : public SingleConvReference {
 public:
  Reference() : SingleConvReference("conv_transpose3d") {}
};

}  // namespace kb::ref::L1_070

KB_REGISTER_IMPLEMENTATION(L1_070, reference, kb::ref::L1_070::Reference)
