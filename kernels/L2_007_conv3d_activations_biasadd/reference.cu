// L2_007 reference: sigmoid(gelu(leaky_relu(relu(conv3d(x) + conv.bias)))) + bias as PyTorch eager
// runs it: the cuDNN conv and its bias add, then one out-of-place kernel per activation, then the
// broadcast add of the (C_out, 1, 1, 1) bias.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "kernels/device/cuda_check.h"
#include "kernels/device/cudnn_conv.h"
#include "kernels/device/eager_ops.h"
#include "kernels/device/library_handles.h"
#include "kernels/implementation.h"

namespace kb::ref::L2_007 {

class Reference final : public Implementation {
 public:
  ~Reference() override {
    KB_CUDA_WARN(cudaFree(a_.data));
    KB_CUDA_WARN(cudaFree(b_.data));
  }

  Status setup(const ProblemInstance& p, cudaStream_t stream) override {
    x_ = input_index(p, "x");
    weight_ = param_index(p, "conv.weight");
    conv_bias_ = param_index(p, "conv.bias");
    bias_ = param_index(p, "bias");
    slope_ = static_cast<float>(p.number("leaky_relu", "negative_slope"));
    KB_TRY(conv_.setup(p, "conv", stream));
    a_.shape = b_.shape = p.shape_of("y");  // (N, C_out, D-2, H-2, W-2)
    KB_CUDA_TRY(cudaMalloc(&a_.data, a_.numel() * sizeof(float)));
    KB_CUDA_TRY(cudaMalloc(&b_.data, b_.numel() * sizeof(float)));
    return Status::ok();
  }

  // Each activation reads one buffer and writes the other: eager's `x = op(x)` frees the input
  // after the op, and the caching allocator hands that block to the next op.
  Status run(const ImplArgs& args, cudaStream_t stream) override {
    const int64_t n = a_.numel();
    KB_TRY(conv_.run(args.inputs[x_].data, args.params[weight_].data,
                     args.params[conv_bias_].data, a_.data, stream));
    KB_TRY(eager::unary(eager::Unary::kRelu, a_.data, b_.data, n, stream));
    // A no-op after the ReLU, kept because the source runs it.
    KB_TRY(eager::unary(eager::Unary::kLeakyRelu, b_.data, a_.data, n, stream, slope_));
    KB_TRY(eager::unary(eager::Unary::kGeluErf, a_.data, b_.data, n, stream));
    KB_TRY(eager::unary(eager::Unary::kSigmoid, b_.data, a_.data, n, stream));
    // out: (N, C_out, D-2, H-2, W-2) = s + bias: (C_out, 1, 1, 1)
    return eager::binary(eager::Binary::kAdd, a_, args.params[bias_], args.output, stream);
  }

 private:
  CudnnConv conv_;
  size_t x_ = 0, weight_ = 0, conv_bias_ = 0, bias_ = 0;
  float slope_ = 0;
  DeviceTensor a_, b_;  // owned: freed by the destructor
};

}  // namespace kb::ref::L2_007

KB_REGISTER_IMPLEMENTATION(L2_007, reference, kb::ref::L2_007::Reference)
