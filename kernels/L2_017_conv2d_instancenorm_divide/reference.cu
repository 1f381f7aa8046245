// L2_017 reference: instance_norm(conv2d(x) + conv.bias) / divide_by as PyTorch eager runs it:
// the cuDNN conv and its bias add (it cancels in the norm, but eager adds it), InstanceNorm2d
// (affine=False, instance statistics), then the division into the output.
#include <cuda_runtime.h>

#include <cstddef>

#include "kernels/device/cuda_check.h"
#include "kernels/device/cudnn_conv.h"
#include "kernels/device/eager_ops.h"
#include "kernels/device/library_handles.h"
#include "kernels/implementation.h"

namespace kb::ref::L2_017 {

class Reference final : public Implementation {
 public:
  ~Reference() override {
    KB_CUDA_WARN(cudaFree(y_.data));
    KB_CUDA_WARN(cudaFree(z_.data));
  }

  Status setup(const ProblemInstance& p, cudaStream_t stream) override {
    x_ = input_index(p, "x");
    weight_ = param_index(p, "conv.weight");
    bias_ = param_index(p, "conv.bias");
    eps_ = static_cast<float>(p.number("instance_norm", "eps"));
    divisor_ = static_cast<float>(p.number("divide", "value"));
    KB_TRY(conv_.setup(p, "conv", stream));
    y_.shape = p.shape_of("y");  // (N, C_out, H-2, W-2)
    z_.shape = p.shape_of("z");
    KB_CUDA_TRY(cudaMalloc(&y_.data, y_.numel() * sizeof(float)));
    KB_CUDA_TRY(cudaMalloc(&z_.data, z_.numel() * sizeof(float)));
    return Status::ok();
  }

  Status run(const ImplArgs& args, cudaStream_t stream) override {
    KB_TRY(conv_.run(args.inputs[x_].data, args.params[weight_].data, args.params[bias_].data,
                     y_.data, stream));
    KB_TRY(eager::instance_norm(y_, eps_, z_, stream));  // per (n, c), biased variance
    // out: (N, C_out, H-2, W-2)
    return eager::unary(eager::Unary::kDivScalar, z_.data, args.output.data, z_.numel(), stream,
                        divisor_);
  }

 private:
  CudnnConv conv_;
  size_t x_ = 0, weight_ = 0, bias_ = 0;
  float eps_ = 0, divisor_ = 1;
  DeviceTensor y_, z_;  // owned: freed by the destructor
};

}  // namespace kb::ref::L2_017

KB_REGISTER_IMPLEMENTATION(L2_017, reference, kb::ref::L2_017::Reference)
