// L1_075 reference: ConvTranspose2d(C_in, C_out, (3, 5), stride=(2, 3), padding=(1, 2),
// dilation=(2, 1), groups=4, bias=False) as PyTorch eager runs it: one cuDNN backward-data
// convolution (CudnnConv: legacy API, CUDNN_FMA_MATH, strict fp32).
#include "kernels/device/single_conv_reference.h"

namespace kb::ref::L1_075 {

// x: (N, C_in, H, W) -> out: (N, C_out, 2H+1, 3W-2); the even rows are 0, written by cuDNN
class Reference final : public SingleConvReference {
 public:
  Reference() : SingleConvReference("conv_transpose2d") {}
};

}  // namespace kb::ref::L1_075

KB_REGISTER_IMPLEMENTATION(L1_075, reference, kb::ref::L1_075::Reference)
