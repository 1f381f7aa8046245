// L1_073 reference: ConvTranspose3d(C_in, C_out, (3, 3, 3), stride=2, padding=1, bias=False) as
// PyTorch eager runs it: one cuDNN backward-data convolution (CudnnConv: legacy API,
// CUDNN_FMA_MATH, strict fp32). groups is 1, not the script's 4: see the spec's notes.
#include "kernels/device/single_conv_reference.h"

namespace kb::ref::L1_073 {

// x: (N, C_in, D, H, W) -> out: (N, C_out, 2D-1, 2H-1, 2W-1)
class Reference final : public SingleConvReference {
 public:
  Reference() : SingleConvReference("conv_transpose3d") {}
};

}  // namespace kb::ref::L1_073

KB_REGISTER_IMPLEMENTATION(L1_073, reference, kb::ref::L1_073::Reference)
