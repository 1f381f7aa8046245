// L1_075 reference: ConvTranspose2d(C_in, C_out, (3, 5), stride=(2, 3), padding=(1, 2),
// dilation=(2, 1), groups=4, bias=False) as PyTorch eager runs it: one cuDNN backward-data
// convolution (CudnnConv: legacy API, CUDNN_FMA_MATH, strict fp32).
#include <cuda_runtime.h>

#include <cstddef>

#include "kernels/device/cudnn_conv.h"
#include "kernels/implementation.h"

namespace kb::ref::L1_075 {

class Reference final : public Implementation {
 public:
  Status setup(const ProblemInstance& p, cudaStream_t stream) override {
    x_ = input_index(p, "x");
    weight_ = param_index(p, "conv_transpose2d.weight");
    return conv_.setup(p, "conv_transpose2d", stream);
  }

  Status run(const ImplArgs& args, cudaStream_t stream) override {
    // x: (N, C_in, H, W) -> out: (N, C_out, 2H+1, 3W-2); the even rows are 0, written by cuDNN
    return conv_.run(args.inputs[x_].data, args.params[weight_].data, /*bias=*/nullptr,
                     args.output.data, stream);
  }

 private:
  CudnnConv conv_;
  size_t x_ = 0, weight_ = 0;
};

}  // namespace kb::ref::L1_075

KB_REGISTER_IMPLEMENTATION(L1_075, reference, kb::ref::L1_075::Reference)
