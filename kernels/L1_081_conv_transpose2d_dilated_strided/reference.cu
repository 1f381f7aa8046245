// L1_081 reference: ConvTranspose2d(C_in, C_out, (3, 3), stride=5, padding=1, dilation=2,
// bias=False) as PyTorch eager runs it: one cuDNN backward-data convolution (CudnnConv: legacy
// API, CUDNN_FMA_MATH, strict fp32).
#include "kernels/device/single_conv_reference.h"

namespace kb::ref::L1_081 {

// x: (N, C_in, H, W) -> out: (N, C_out, 5H-2, 5W-2); most are 0, written by cuDNN too
class Reference final : public SingleConvReference {
 public:
  Reference() : SingleConvReference("conv_transpose2d") {}
};

}  // namespace kb::ref::L1_081

KB_REGISTER_IMPLEMENTATION(L1_081, reference, kb::ref::L1_081::Reference)
