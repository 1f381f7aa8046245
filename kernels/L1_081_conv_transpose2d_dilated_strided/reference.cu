// L1_081 reference: ConvTranspose2d(C_in, C_out, (3, 3), stride=5, padding=1, dilation=2,
// bias=False) as PyTorch eager runs it: one cuDNN backward-data convolution (CudnnConv: legacy
// API, CUDNN_FMA_MATH, strict fp32).
#include <cuda_runtime.h>

#include <cstddef>

#include "kernels/device/cudnn_conv.h"
#include "kernels/implementation.h"

namespace kb::ref::L1_081 {

class Reference final : public Implementation {
 public:
  Status setup(const ProblemInstance& p, cudaStream_t stream) override {
    x_ = input_index(p, "x");
    weight_ = param_index(p, "conv_transpose2d.weight");
    return conv_.setup(p, "conv_transpose2d", stream);
  }

  Status run(const ImplArgs& args, cudaStream_t stream) override {
    // x: (N, C_in, H, W) -> out: (N, C_out, 5H-2, 5W-2); most are 0, written by cuDNN too
    return conv_.run(args.inputs[x_].data, args.params[weight_].data, /*bias=*/nullptr,
                     args.output.data, stream);
  }

 private:
  CudnnConv conv_;
  size_t x_ = 0, weight_ = 0;
};

}  // namespace kb::ref::L1_081

KB_REGISTER_IMPLEMENTATION(L1_081, reference, kb::ref::L1_081::Reference)
