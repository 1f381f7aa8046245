// L1_073 reference: ConvTranspose3d(C_in, C_out, (3, 3, 3), stride=2, padding=1, bias=False) as
// PyTorch eager runs it: one cuDNN backward-data convolution (CudnnConv: legacy API,
// CUDNN_FMA_MATH, strict fp32). groups is 1, not the script's 4: see the spec's notes.
#include <cuda_runtime.h>

#include <cstddef>

#include "kernels/device/cudnn_conv.h"
#include "kernels/implementation.h"

namespace kb::ref::L1_073 {

class Reference final : public Implementation {
 public:
  Status setup(const ProblemInstance& p, cudaStream_t stream) override {
    x_ = input_index(p, "x");
    weight_ = param_index(p, "conv_transpose3d.weight");
    return conv_.setup(p, "conv_transpose3d", stream);
  }

  Status run(const ImplArgs& args, cudaStream_t stream) override {
    // x: (N, C_in, D, H, W) -> out: (N, C_out, 2D-1, 2H-1, 2W-1)
    return conv_.run(args.inputs[x_].data, args.params[weight_].data, /*bias=*/nullptr,
                     args.output.data, stream);
  }

 private:
  CudnnConv conv_;
  size_t x_ = 0, weight_ = 0;
};

}  // namespace kb::ref::L1_073

KB_REGISTER_IMPLEMENTATION(L1_073, reference, kb::ref::L1_073::Reference)
