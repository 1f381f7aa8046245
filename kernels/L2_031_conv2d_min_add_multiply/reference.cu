// L2_031 reference: (torch.min(conv2d(x) + conv.bias, tensor(c)) + bias) * scaling_factor as
// PyTorch eager runs it: the cuDNN conv and its bias add, then one out-of-place kernel per op.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "kernels/device/cuda_check.h"
#include "kernels/device/cudnn_conv.h"
#include "kernels/device/eager_ops.h"
#include "kernels/device/library_handles.h"
#include "kernels/implementation.h"

namespace kb::ref::L2_031 {

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
    cap_ = static_cast<float>(p.number("min", "value"));
    factor_ = static_cast<float>(p.number("scale", "value"));
    KB_TRY(conv_.setup(p, "conv", stream));
    a_.shape = b_.shape = p.shape_of("y");  // (N, C_out, H-2, W-2)
    KB_CUDA_TRY(cudaMalloc(&a_.data, a_.numel() * sizeof(float)));
    KB_CUDA_TRY(cudaMalloc(&b_.data, b_.numel() * sizeof(float)));
    return Status::ok();
  }

  // Each op reads one buffer and writes the other: eager's `x = op(x)` frees the input after the
  // op, and the caching allocator hands that block to the next op.
  Status run(const ImplArgs& args, cudaStream_t stream) override {
    const int64_t n = a_.numel();
    KB_TRY(conv_.run(args.inputs[x_].data, args.params[weight_].data,
                     args.params[conv_bias_].data, a_.data, stream));
    // torch.min with a 0-d tensor: elementwise, NaN-propagating
    KB_TRY(eager::unary(eager::Unary::kMinScalar, a_.data, b_.data, n, stream, cap_));
    // a = m + bias: (C_out, 1, 1)
    KB_TRY(eager::binary(eager::Binary::kAdd, b_, args.params[bias_], a_, stream));
    // out: (N, C_out, H-2, W-2)
    return eager::unary(eager::Unary::kMulScalar, a_.data, args.output.data, n, stream, factor_);
  }

 private:
  CudnnConv conv_;
  size_t x_ = 0, weight_ = 0, conv_bias_ = 0, bias_ = 0;
  float cap_ = 0, factor_ = 1;
  DeviceTensor a_, b_;  // owned: freed by the destructor
};

}  // namespace kb::ref::L2_031

KB_REGISTER_IMPLEMENTATION(L2_031, reference, kb::ref::L2_031::Reference)
