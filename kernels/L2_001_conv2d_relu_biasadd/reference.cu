// L2_001 reference: relu(conv2d(x) + conv.bias) + bias as PyTorch eager runs it: the cuDNN conv
// and its bias add, torch.relu into a new tensor, then the broadcast add of the (C_out, 1, 1) bias.
#include <cuda_runtime.h>

#include <cstddef>

#include "kernels/device/cuda_check.h"
#include "kernels/device/cudnn_conv.h"
#include "kernels/device/eager_ops.h"
#include "kernels/device/library_handles.h"
#include "kernels/implementation.h"

namespace kb::ref::L2_001 {

class Reference final : public Implementation {
 public:
  ~Reference() override {
    KB_CUDA_WARN(cudaFree(y_.data));
    KB_CUDA_WARN(cudaFree(r_.data));
  }

  Status setup(const ProblemInstance& p, cudaStream_t stream) override {
    x_ = input_index(p, "x");
    weight_ = param_index(p, "conv.weight");
    conv_bias_ = param_index(p, "conv.bias");
    bias_ = param_index(p, "bias");
    KB_TRY(conv_.setup(p, "conv", stream));
    y_.shape = p.shape_of("y");  // (N, C_out, H-2, W-2)
    r_.shape = p.shape_of("r");
    KB_CUDA_TRY(cudaMalloc(&y_.data, y_.numel() * sizeof(float)));
    KB_CUDA_TRY(cudaMalloc(&r_.data, r_.numel() * sizeof(float)));
    return Status::ok();
  }

  Status run(const ImplArgs& args, cudaStream_t stream) override {
    KB_TRY(conv_.run(args.inputs[x_].data, args.params[weight_].data,
                     args.params[conv_bias_].data, y_.data, stream));
    KB_TRY(eager::unary(eager::Unary::kRelu, y_.data, r_.data, y_.numel(), stream));
    // out: (N, C_out, H-2, W-2) = r + bias: (C_out, 1, 1)
    return eager::binary(eager::Binary::kAdd, r_, args.params[bias_], args.output, stream);
  }

 private:
  CudnnConv conv_;
  size_t x_ = 0, weight_ = 0, conv_bias_ = 0, bias_ = 0;
  DeviceTensor y_, r_;  // owned: freed by the destructor
};

}  // namespace kb::ref::L2_001

KB_REGISTER_IMPLEMENTATION(L2_001, reference, kb::ref::L2_001::Reference)
