// L2_010 reference: tanh(mean_hw(hardtanh(maxpool(conv_transpose2d(x))))) as PyTorch eager runs
// it: the cuDNN transposed conv and its bias add, then one out-of-place kernel per op.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/device/cuda_check.h"
#include "kernels/device/cudnn_conv.h"
#include "kernels/device/eager_ops.h"
#include "kernels/device/library_handles.h"
#include "kernels/implementation.h"

namespace kb::ref::L2_010 {

class Reference final : public Implementation {
 public:
  ~Reference() override {
    for (DeviceTensor* t : owned()) KB_CUDA_WARN(cudaFree(t->data));
  }

  Status setup(const ProblemInstance& p, cudaStream_t stream) override {
    x_ = input_index(p, "x");
    weight_ = param_index(p, "conv_transpose.weight");
    bias_ = param_index(p, "conv_transpose.bias");
    pool_kernel_ = p.ints("maxpool", "kernel_size");
    pool_stride_ = p.ints("maxpool", "stride");
    pool_padding_ = p.ints("maxpool", "padding");
    lo_ = static_cast<float>(p.number("hardtanh", "min_val"));
    hi_ = static_cast<float>(p.number("hardtanh", "max_val"));
    KB_TRY(mean_dims_are_trailing(p));
    KB_TRY(conv_.setup(p, "conv_transpose", stream));
    y_.shape = p.shape_of("y");  // (N, C_out, H, W): k 3, stride 1, padding 1 keep the size
    m_.shape = p.shape_of("m");  // (N, C_out, H/2, W/2), floor mode
    h_.shape = p.shape_of("h");
    a_.shape = p.shape_of("a");  // (N, C_out, 1, 1)
    for (DeviceTensor* t : owned()) KB_CUDA_TRY(cudaMalloc(&t->data, t->numel() * sizeof(float)));
    return Status::ok();
  }

  Status run(const ImplArgs& args, cudaStream_t stream) override {
    KB_TRY(conv_.run(args.inputs[x_].data, args.params[weight_].data, args.params[bias_].data,
                     y_.data, stream));
    KB_TRY(eager::max_pool(y_, pool_kernel_, pool_stride_, pool_padding_, m_, stream));
    KB_TRY(eager::unary(eager::Unary::kHardtanh, m_.data, h_.data, m_.numel(), stream, lo_, hi_));
    KB_TRY(eager::mean_trailing(h_, mean_count_, a_, stream));
    // out: (N, C_out, 1, 1)
    return eager::unary(eager::Unary::kTanh, a_.data, args.output.data, a_.numel(), stream);
  }

 private:
  // torch.mean(dim=(2, 3)) reduces the trailing dims; eager::mean_trailing only handles those.
  Status mean_dims_are_trailing(const ProblemInstance& p) {
    const int64_t rank = static_cast<int64_t>(p.shape_of("h").size());
    const std::vector<int64_t> dims = p.ints("mean", "dims");
    mean_count_ = static_cast<int>(dims.size());
    for (int64_t d : dims) {
      if (d < 0) d += rank;
      if (d < rank - mean_count_ || d >= rank) {
        return Status::failed_precondition("L2_010 reference: mean must reduce the trailing dims");
      }
    }
    return Status::ok();
  }

  std::vector<DeviceTensor*> owned() { return {&y_, &m_, &h_, &a_}; }

  CudnnConv conv_;
  size_t x_ = 0, weight_ = 0, bias_ = 0;
  std::vector<int64_t> pool_kernel_, pool_stride_, pool_padding_;
  float lo_ = 0, hi_ = 0;
  int mean_count_ = 0;
  DeviceTensor y_, m_, h_, a_;  // owned: freed by the destructor
};

}  // namespace kb::ref::L2_010

KB_REGISTER_IMPLEMENTATION(L2_010, reference, kb::ref::L2_010::Reference)
