// L1_079 reference: ConvTranspose1d(C_in, C_out, 3, stride=2, padding=1, dilation=2, bias=False)
// as PyTorch eager runs it: one cuDNN backward-data convolution (CudnnConv: legacy API,
// CUDNN_FMA_MATH, strict fp32), 2-D with a height of 1 as PyTorch runs 1-D convs on cuDNN.
#include "kernels/device/single_conv_reference.h"

namespace kb::ref::L1_079 {

// x: (N, C_in, L) -> out: (N, C_out, 2L+1); the even positions are 0, written by cuDNN
class Reference final : public SingleConvReference {
 public:
  Reference() : SingleConvReference("conv1d_transpose") {}
};

}  // namespace kb::ref::L1_079

KB_REGISTER_IMPLEMENTATION(L1_079, reference, kb::ref::L1_079::Reference)
