// L3_013 reference: DenseNet121's transition (BatchNorm2d in training mode -> ReLU(inplace=True)
// -> 1x1 conv -> 2x2 average pool) as PyTorch eager runs the nn.Sequential: the batch-statistics
// BatchNorm into a new tensor, the ReLU in place on it, the cuDNN conv, then the pool into the
// output. (Eager's BatchNorm also updates running_mean/var; they are not outputs and not kept.)
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/device/cuda_check.h"
#include "kernels/device/cudnn_conv.h"
#include "kernels/device/eager_ops.h"
#include "kernels/device/library_handles.h"
#include "kernels/implementation.h"

namespace kb::ref::L3_013 {

class Reference final : public Implementation {
 public:
  ~Reference() override {
    KB_CUDA_WARN(cudaFree(bn_.data));
    KB_CUDA_WARN(cudaFree(conv_out_.data));
  }

  Status setup(const ProblemInstance& p, cudaStream_t stream) override {
    x_ = input_index(p, "x");
    bn_weight_ = param_index(p, "transition.0.weight");
    bn_bias_ = param_index(p, "transition.0.bias");
    conv_weight_ = param_index(p, "transition.2.weight");
    eps_ = static_cast<float>(p.number("transition.0", "eps"));
    pool_kernel_ = p.ints("transition.3", "kernel_size");
    pool_stride_ = p.ints("transition.3", "stride");
    pool_padding_ = p.ints("transition.3", "padding");
    KB_TRY(conv_.setup(p, "transition.2", stream));
    bn_.shape = p.shape_of("bn");          // (N, C_in, H, W)
    conv_out_.shape = p.shape_of("conv");  // (N, C_out, H, W)
    KB_CUDA_TRY(cudaMalloc(&bn_.data, bn_.numel() * sizeof(float)));
    KB_CUDA_TRY(cudaMalloc(&conv_out_.data, conv_out_.numel() * sizeof(float)));
    return Status::ok();
  }

  Status run(const ImplArgs& args, cudaStream_t stream) override {
    // Training mode: per-channel statistics over (N, H, W), biased variance.
    KB_TRY(eager::batch_norm_train(args.inputs[x_], args.params[bn_weight_].data,
                                   args.params[bn_bias_].data, eps_, bn_, stream));
    KB_TRY(eager::unary(eager::Unary::kRelu, bn_.data, bn_.data, bn_.numel(), stream));
    KB_TRY(conv_.run(bn_.data, args.params[conv_weight_].data, nullptr, conv_out_.data, stream));
    // out: (N, C_out, H/2, W/2), floor mode
    return eager::avg_pool(conv_out_, pool_kernel_, pool_stride_, pool_padding_, args.output,
                           stream);
  }

 private:
  CudnnConv conv_;
  size_t x_ = 0, bn_weight_ = 0, bn_bias_ = 0, conv_weight_ = 0;
  float eps_ = 0;
  std::vector<int64_t> pool_kernel_, pool_stride_, pool_padding_;
  DeviceTensor bn_, conv_out_;  // owned: freed by the destructor
};

}  // namespace kb::ref::L3_013

KB_REGISTER_IMPLEMENTATION(L3_013, reference, kb::ref::L3_013::Reference)
