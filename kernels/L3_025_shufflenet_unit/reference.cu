// L3_025 reference: the ShuffleNet unit as PyTorch eager runs it: grouped 1x1 conv -> BN ->
// F.relu -> depthwise 3x3 conv -> BN -> channel shuffle (view/transpose/contiguous: one copy)
// -> grouped 1x1 conv -> BN -> F.relu, then the shortcut (1x1 conv -> BN) and `out += shortcut`
// in place. Every conv is cuDNN; every BatchNorm runs in training mode (batch statistics, biased
// variance; eager's running-stat updates are not outputs and not kept).
#include <cuda_runtime.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>

#include "kernels/device/cuda_check.h"
#include "kernels/device/cudnn_conv.h"
#include "kernels/device/eager_ops.h"
#include "kernels/device/library_handles.h"
#include "kernels/implementation.h"

namespace kb::ref::L3_025 {

class Reference final : public Implementation {
 public:
  ~Reference() override {
    for (DeviceTensor* t : {&m0_, &m1_, &o0_, &o1_}) KB_CUDA_WARN(cudaFree(t->data));
  }

  Status setup(const ProblemInstance& p, cudaStream_t stream) override {
    x_ = input_index(p, "x");
    const std::array<const char*, 4> convs = {"conv1", "conv2", "conv3", "shortcut.0"};
    const std::array<const char*, 4> norms = {"bn1", "bn2", "bn3", "shortcut.1"};
    for (size_t i = 0; i < kStages; ++i) {
      KB_TRY(setup_stage(p, convs[i], norms[i], stream, stages_[i]));
    }
    shuffle_groups_ = p.int_attr("shuffle", "groups");
    m0_.shape = m1_.shape = p.shape_of("conv1_out");  // (N, C_out/4, H, W)
    o0_.shape = o1_.shape = p.shape_of("conv3_out");  // (N, C_out, H, W)
    for (DeviceTensor* t : {&m0_, &m1_, &o0_, &o1_}) {
      KB_CUDA_TRY(cudaMalloc(&t->data, t->numel() * sizeof(float)));
    }
    return Status::ok();
  }

  // Ping-pong between two buffers per size: eager's `out = op(out)` frees the input after the op,
  // and the caching allocator hands that block to the next op.
  Status run(const ImplArgs& args, cudaStream_t stream) override {
    const DeviceTensor& x = args.inputs[x_];  // (N, C_in, H, W)
    const int64_t mid = m0_.numel(), wide = o0_.numel();
    KB_TRY(conv_bn(args, stages_[0], x.data, m0_, m1_, stream));  // conv1, bn1
    KB_TRY(eager::unary(eager::Unary::kRelu, m1_.data, m0_.data, mid, stream));
    KB_TRY(conv_bn(args, stages_[1], m0_.data, m1_, m0_, stream));  // conv2, bn2
    // Output channel j reads input channel (j % G) * (C / G) + j / G.
    KB_TRY(eager::channel_shuffle(m0_, shuffle_groups_, m1_, stream));
    KB_TRY(conv_bn(args, stages_[2], m1_.data, o0_, o1_, stream));  // conv3, bn3
    KB_TRY(eager::unary(eager::Unary::kRelu, o1_.data, args.output.data, wide, stream));
    KB_TRY(conv_bn(args, stages_[3], x.data, o0_, o1_, stream));  // shortcut
    // out += shortcut, in place. out: (N, C_out, H, W)
    return eager::binary(eager::Binary::kAdd, args.output, o1_, args.output, stream);
  }

 private:
  static constexpr size_t kStages = 4;
  struct Stage {  // a bias-free conv and the BatchNorm after it
    CudnnConv conv;
    size_t weight = 0, bn_weight = 0, bn_bias = 0;
    float eps = 0;
  };

  static Status setup_stage(const ProblemInstance& p, const std::string& conv,
                            const std::string& norm, cudaStream_t stream, Stage& stage) {
    stage.weight = param_index(p, conv + ".weight");
    stage.bn_weight = param_index(p, norm + ".weight");
    stage.bn_bias = param_index(p, norm + ".bias");
    stage.eps = static_cast<float>(p.number(norm, "eps"));
    return stage.conv.setup(p, conv, stream);
  }

  // conv_out = conv(in); bn_out = batch_norm_train(conv_out)
  static Status conv_bn(const ImplArgs& args, Stage& stage, const float* in,
                        const DeviceTensor& conv_out, const DeviceTensor& bn_out,
                        cudaStream_t stream) {
    KB_TRY(stage.conv.run(in, args.params[stage.weight].data, nullptr, conv_out.data, stream));
    return eager::batch_norm_train(conv_out, args.params[stage.bn_weight].data,
                                   args.params[stage.bn_bias].data, stage.eps, bn_out, stream);
  }

  std::array<Stage, kStages> stages_;  // conv1/bn1, conv2/bn2, conv3/bn3, shortcut.0/shortcut.1
  size_t x_ = 0;
  int64_t shuffle_groups_ = 1;
  DeviceTensor m0_, m1_, o0_, o1_;  // owned: freed by the destructor
};

}  // namespace kb::ref::L3_025

KB_REGISTER_IMPLEMENTATION(L3_025, reference, kb::ref::L3_025::Reference)
