// L1_060 reference: Conv3d(C_in, C_out, (3, 5, 7), bias=False) as PyTorch eager runs it: one
// cuDNN forward convolution (CudnnConv: legacy API, CUDNN_FMA_MATH, strict fp32).
#include <cuda_runtime.h>

#include <cstddef>

#include "kernels/device/cudnn_conv.h"
#include "kernels/implementation.h"

namespace kb::ref::L1_060 {

class Reference final : public Implementation {
 public:
  Status setup(const ProblemInstance& p, cudaStream_t stream) override {
    x_ = input_index(p, "x");
    weight_ = param_index(p, "conv3d.weight");
    return conv_.setup(p, "conv3d", stream);
  }

  Status run(const ImplArgs& args, cudaStream_t stream) override {
    // x: (N, C_in, D, H, W) -> out: (N, C_out, D-2, H-4, W-6)
    return conv_.run(args.inputs[x_].data, args.params[weight_].data, /*bias=*/nullptr,
                     args.output.data, stream);
  }

 private:
  CudnnConv conv_;
  size_t x_ = 0, weight_ = 0;
};

}  // namespace kb::ref::L1_060

KB_REGISTER_IMPLEMENTATION(L1_060, reference, kb::ref::L1_060::Reference)
