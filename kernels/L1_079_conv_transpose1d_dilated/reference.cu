// L1_079 reference: ConvTranspose1d(C_in, C_out, 3, stride=2, padding=1, dilation=2, bias=False)
// as PyTorch eager runs it: one cuDNN backward-data convolution (CudnnConv: legacy API,
// CUDNN_FMA_MATH, strict fp32), 2-D with a height of 1 as PyTorch runs 1-D convs on cuDNN.
#include <cuda_runtime.h>

#include <cstddef>

#include "kernels/device/cudnn_conv.h"
#include "kernels/implementation.h"

namespace kb::ref::L1_079 {

class Reference final : public Implementation {
 public:
  Status setup(const ProblemInstance& p, cudaStream_t stream) override {
    x_ = input_index(p, "x");
    weight_ = param_index(p, "conv1d_transpose.weight");
    return conv_.setup(p, "conv1d_transpose", stream);
  }

  Status run(const ImplArgs& args, cudaStream_t stream) override {
    // x: (N, C_in, L) -> out: (N, C_out, 2L+1); the even positions are 0, written by cuDNN
    return conv_.run(args.inputs[x_].data, args.params[weight_].data, /*bias=*/nullptr,
                     args.output.data, stream);
  }

 private:
  CudnnConv conv_;
  size_t x_ = 0, weight_ = 0;
};

}  // namespace kb::ref::L1_079

KB_REGISTER_IMPLEMENTATION(L1_079, reference, kb::ref::L1_079::Reference)
