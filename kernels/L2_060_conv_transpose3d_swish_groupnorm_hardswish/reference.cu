// L2_060 reference: hardswish(group_norm(sigmoid(y) * y)), y = conv_transpose3d(x), as PyTorch
// eager runs it: the cuDNN transposed conv and its bias add, the swish as written in the model
// (torch.sigmoid, then the product with y: two kernels), nn.GroupNorm, then F.hardswish.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/device/cuda_check.h"
#include "kernels/device/cudnn_conv.h"
#include "kernels/device/eager_ops.h"
#include "kernels/device/library_handles.h"
#include "kernels/implementation.h"

namespace kb::ref::L2_060 {

class Reference final : public Implementation {
 public:
  ~Reference() override {
    for (DeviceTensor* t : owned()) KB_CUDA_WARN(cudaFree(t->data));
  }

  Status setup(const ProblemInstance& p, cudaStream_t stream) override {
    x_ = input_index(p, "x");
    weight_ = param_index(p, "conv_transpose.weight");
    bias_ = param_index(p, "conv_transpose.bias");
    gn_weight_ = param_index(p, "group_norm.weight");
    gn_bias_ = param_index(p, "group_norm.bias");
    // The init argument `groups` is the GroupNorm's group count; the conv has groups 1.
    groups_ = p.int_attr("group_norm", "num_groups");
    eps_ = static_cast<float>(p.number("group_norm", "eps"));
    KB_TRY(conv_.setup(p, "conv_transpose", stream));
    for (DeviceTensor* t : owned()) {
      t->shape = p.shape_of("y");  // (N, C_out, 2D-1, 2H-1, 2W-1)
      KB_CUDA_TRY(cudaMalloc(&t->data, t->numel() * sizeof(float)));
    }
    return Status::ok();
  }

  Status run(const ImplArgs& args, cudaStream_t stream) override {
    KB_TRY(conv_.run(args.inputs[x_].data, args.params[weight_].data, args.params[bias_].data,
                     y_.data, stream));
    KB_TRY(eager::unary(eager::Unary::kSigmoid, y_.data, t_.data, y_.numel(), stream));
    KB_TRY(eager::binary(eager::Binary::kMul, t_, y_, s_, stream));  // s = sigmoid(y) * y
    // The normalized tensor lands in y's block, free again once s exists.
    KB_TRY(eager::group_norm(s_, groups_, args.params[gn_weight_].data, args.params[gn_bias_].data,
                             eps_, y_, stream));
    // out: (N, C_out, 2D-1, 2H-1, 2W-1)
    return eager::unary(eager::Unary::kHardswish, y_.data, args.output.data, y_.numel(), stream);
  }

 private:
  std::vector<DeviceTensor*> owned() { return {&y_, &t_, &s_}; }

  CudnnConv conv_;
  size_t x_ = 0, weight_ = 0, bias_ = 0, gn_weight_ = 0, gn_bias_ = 0;
  int64_t groups_ = 1;
  float eps_ = 0;
  DeviceTensor y_, t_, s_;  // owned: freed by the destructor
};

}  // namespace kb::ref::L2_060

KB_REGISTER_IMPLEMENTATION(L2_060, reference, kb::ref::L2_060::Reference)
