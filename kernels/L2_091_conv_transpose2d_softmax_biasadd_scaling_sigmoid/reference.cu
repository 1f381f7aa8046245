// L2_091 reference: sigmoid((softmax_c(conv_transpose2d(x)) + bias) * scaling_factor) as PyTorch
// eager runs it: the cuDNN transposed conv and its bias add, torch.softmax over the channels, the
// broadcast add of the (C_out, 1, 1) bias, the scaling, then torch.sigmoid into the output.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "kernels/device/cuda_check.h"
#include "kernels/device/cudnn_conv.h"
#include "kernels/device/eager_ops.h"
#include "kernels/device/library_handles.h"
#include "kernels/implementation.h"

namespace kb::ref::L2_091 {

class Reference final : public Implementation {
 public:
  ~Reference() override {
    KB_CUDA_WARN(cudaFree(a_.data));
    KB_CUDA_WARN(cudaFree(b_.data));
  }

  Status setup(const ProblemInstance& p, cudaStream_t stream) override {
    x_ = input_index(p, "x");
    weight_ = param_index(p, "conv_transpose.weight");
    conv_bias_ = param_index(p, "conv_transpose.bias");
    bias_ = param_index(p, "bias");
    factor_ = static_cast<float>(p.number("scale", "value"));
    KB_TRY(conv_.setup(p, "conv_transpose", stream));
    a_.shape = b_.shape = p.shape_of("y");             // (N, C_out, 2H+1, 2W+1)
    const int64_t dim = p.int_attr("softmax", "dim");  // 1: over the channels
    softmax_dim_ = static_cast<int>(dim < 0 ? dim + static_cast<int64_t>(a_.shape.size()) : dim);
    KB_CUDA_TRY(cudaMalloc(&a_.data, a_.numel() * sizeof(float)));
    KB_CUDA_TRY(cudaMalloc(&b_.data, b_.numel() * sizeof(float)));
    return Status::ok();
  }

  // Each op reads one buffer and writes the other: eager's `x = op(x)` frees the input after the
  // op, and the caching allocator hands that block to the next op.
  Status run(const ImplArgs& args, cudaStream_t stream) override {
    KB_TRY(conv_.run(args.inputs[x_].data, args.params[weight_].data, args.params[conv_bias_].data,
                     a_.data, stream));
    KB_TRY(eager::softmax(a_, softmax_dim_, b_, stream));
    // a = b + bias: (C_out, 1, 1)
    KB_TRY(eager::binary(eager::Binary::kAdd, b_, args.params[bias_], a_, stream));
    KB_TRY(eager::unary(eager::Unary::kMulScalar, a_.data, b_.data, a_.numel(), stream, factor_));
    // out: (N, C_out, 2H+1, 2W+1)
    return eager::unary(eager::Unary::kSigmoid, b_.data, args.output.data, b_.numel(), stream);
  }

 private:
  CudnnConv conv_;
  size_t x_ = 0, weight_ = 0, conv_bias_ = 0, bias_ = 0;
  int softmax_dim_ = 1;
  float factor_ = 1;
  DeviceTensor a_, b_;  // owned: freed by the destructor
};

}  // namespace kb::ref::L2_091

KB_REGISTER_IMPLEMENTATION(L2_091, reference, kb::ref::L2_091::Reference)
