// L2_021 reference: group_norm(sigmoid((conv2d(x) + conv.bias + bias) * scale)) as PyTorch eager
// runs it: the cuDNN conv and its bias add, the two broadcast ops with the (C_out, 1, 1)
// parameters, torch.sigmoid, then nn.GroupNorm into the output.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "kernels/device/cuda_check.h"
#include "kernels/device/cudnn_conv.h"
#include "kernels/device/eager_ops.h"
#include "kernels/device/library_handles.h"
#include "kernels/implementation.h"

namespace kb::ref::L2_021 {

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
    scale_ = param_index(p, "scale");
    gn_weight_ = param_index(p, "group_norm.weight");
    gn_bias_ = param_index(p, "group_norm.bias");
    groups_ = p.int_attr("group_norm", "num_groups");
    eps_ = static_cast<float>(p.number("group_norm", "eps"));
    KB_TRY(conv_.setup(p, "conv", stream));
    a_.shape = b_.shape = p.shape_of("y");  // (N, C_out, H-2, W-2)
    KB_CUDA_TRY(cudaMalloc(&a_.data, a_.numel() * sizeof(float)));
    KB_CUDA_TRY(cudaMalloc(&b_.data, b_.numel() * sizeof(float)));
    return Status::ok();
  }

  // Each op reads one buffer and writes the other: eager's `x = op(x)` frees the input after the
  // op, and the caching allocator hands that block to the next op.
  Status run(const ImplArgs& args, cudaStream_t stream) override {
    KB_TRY(conv_.run(args.inputs[x_].data, args.params[weight_].data, args.params[conv_bias_].data,
                     a_.data, stream));
    // b = a + bias: (C_out, 1, 1); a = b * scale: (C_out, 1, 1)
    KB_TRY(eager::binary(eager::Binary::kAdd, a_, args.params[bias_], b_, stream));
    KB_TRY(eager::binary(eager::Binary::kMul, b_, args.params[scale_], a_, stream));
    KB_TRY(eager::unary(eager::Unary::kSigmoid, a_.data, b_.data, a_.numel(), stream));
    // out: (N, C_out, H-2, W-2), statistics per (n, group of C_out / groups channels)
    return eager::group_norm(b_, groups_, args.params[gn_weight_].data, args.params[gn_bias_].data,
                             eps_, args.output, stream);
  }

 private:
  CudnnConv conv_;
  size_t x_ = 0, weight_ = 0, conv_bias_ = 0, bias_ = 0, scale_ = 0, gn_weight_ = 0, gn_bias_ = 0;
  int64_t groups_ = 1;
  float eps_ = 0;
  DeviceTensor a_, b_;  // owned: freed by the destructor
};

}  // namespace kb::ref::L2_021

KB_REGISTER_IMPLEMENTATION(L2_021, reference, kb::ref::L2_021::Reference)
