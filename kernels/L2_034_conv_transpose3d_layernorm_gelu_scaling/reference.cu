// L2_034 reference: gelu(layer_norm(conv_transpose3d(x))) * scaling_factor as PyTorch eager runs
// it: the cuDNN transposed conv and its bias add, nn.LayerNorm(C_out) (which normalizes over the
// last dim, W_out, not the channels), F.gelu (erf form), then the scaling (eager runs it even
// when the factor is 1.0).
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "kernels/device/cuda_check.h"
#include "kernels/device/cudnn_conv.h"
#include "kernels/device/eager_ops.h"
#include "kernels/device/library_handles.h"
#include "kernels/implementation.h"

namespace kb::ref::L2_034 {

class Reference final : public Implementation {
 public:
  ~Reference() override {
    KB_CUDA_WARN(cudaFree(a_.data));
    KB_CUDA_WARN(cudaFree(b_.data));
  }

  Status setup(const ProblemInstance& p, cudaStream_t stream) override {
    x_ = input_index(p, "x");
    weight_ = param_index(p, "conv_transpose.weight");
    bias_ = param_index(p, "conv_transpose.bias");
    ln_weight_ = param_index(p, "layer_norm.weight");
    ln_bias_ = param_index(p, "layer_norm.bias");
    eps_ = static_cast<float>(p.number("layer_norm", "eps"));
    factor_ = static_cast<float>(p.number("scale", "value"));
    KB_TRY(conv_.setup(p, "conv_transpose", stream));
    a_.shape = b_.shape = p.shape_of("y");  // (N, C_out, 2D, 2H, 2W)
    // LayerNorm's weight (C_out) names the normalized trailing elements: one W_out row.
    normalized_ = element_count(p.shape_of("layer_norm.weight"));
    if (a_.shape.back() != normalized_) {
      return Status::failed_precondition("L2_034 reference: LayerNorm size must equal W_out");
    }
    KB_CUDA_TRY(cudaMalloc(&a_.data, a_.numel() * sizeof(float)));
    KB_CUDA_TRY(cudaMalloc(&b_.data, b_.numel() * sizeof(float)));
    return Status::ok();
  }

  // Each op reads one buffer and writes the other: eager's `x = op(x)` frees the input after the
  // op, and the caching allocator hands that block to the next op.
  Status run(const ImplArgs& args, cudaStream_t stream) override {
    KB_TRY(conv_.run(args.inputs[x_].data, args.params[weight_].data, args.params[bias_].data,
                     a_.data, stream));
    // per (n, c, d, h) row of W_out values; gamma, beta indexed by w
    KB_TRY(eager::layer_norm(a_, normalized_, args.params[ln_weight_].data,
                             args.params[ln_bias_].data, eps_, b_, stream));
    KB_TRY(eager::unary(eager::Unary::kGeluErf, b_.data, a_.data, b_.numel(), stream));
    // out: (N, C_out, 2D, 2H, 2W)
    return eager::unary(eager::Unary::kMulScalar, a_.data, args.output.data, a_.numel(), stream,
                        factor_);
  }

 private:
  CudnnConv conv_;
  size_t x_ = 0, weight_ = 0, bias_ = 0, ln_weight_ = 0, ln_bias_ = 0;
  int64_t normalized_ = 0;
  float eps_ = 0, factor_ = 1;
  DeviceTensor a_, b_;  // owned: freed by the destructor
};

}  // namespace kb::ref::L2_034

KB_REGISTER_IMPLEMENTATION(L2_034, reference, kb::ref::L2_034::Reference)
