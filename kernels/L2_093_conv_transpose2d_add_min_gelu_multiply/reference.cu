// L2_093 reference: gelu(min(conv_transpose2d(x) + add_value, 0)) * multiply_value as PyTorch
// eager runs it: the cuDNN transposed conv and its bias add, then one out-of-place kernel per op.
// (The model builds torch.tensor(0.0) on the device each call; that one-element copy is left out:
// the min reads its bound as a scalar, as eager::Unary::kMinScalar does.)
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "kernels/device/cuda_check.h"
#include "kernels/device/cudnn_conv.h"
#include "kernels/device/eager_ops.h"
#include "kernels/device/library_handles.h"
#include "kernels/implementation.h"

namespace kb::ref::L2_093 {

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
    offset_ = static_cast<float>(p.number("add", "value"));
    cap_ = static_cast<float>(p.number("min", "value"));
    factor_ = static_cast<float>(p.number("multiply", "value"));
    KB_TRY(conv_.setup(p, "conv_transpose", stream));
    a_.shape = b_.shape = p.shape_of("y");  // (N, C_out, 2H+2, 2W+2)
    KB_CUDA_TRY(cudaMalloc(&a_.data, a_.numel() * sizeof(float)));
    KB_CUDA_TRY(cudaMalloc(&b_.data, b_.numel() * sizeof(float)));
    return Status::ok();
  }

  // Each op reads one buffer and writes the other: eager's `x = op(x)` frees the input after the
  // op, and the caching allocator hands that block to the next op.
  Status run(const ImplArgs& args, cudaStream_t stream) override {
    const int64_t n = a_.numel();
    KB_TRY(conv_.run(args.inputs[x_].data, args.params[weight_].data, args.params[bias_].data,
                     a_.data, stream));
    KB_TRY(eager::unary(eager::Unary::kAddScalar, a_.data, b_.data, n, stream, offset_));
    // torch.min with a 0-d tensor: elementwise, NaN-propagating
    KB_TRY(eager::unary(eager::Unary::kMinScalar, b_.data, a_.data, n, stream, cap_));
    KB_TRY(eager::unary(eager::Unary::kGeluErf, a_.data, b_.data, n, stream));
    // out: (N, C_out, 2H+2, 2W+2)
    return eager::unary(eager::Unary::kMulScalar, b_.data, args.output.data, n, stream, factor_);
  }

 private:
  CudnnConv conv_;
  size_t x_ = 0, weight_ = 0, bias_ = 0;
  float offset_ = 0, cap_ = 0, factor_ = 1;
  DeviceTensor a_, b_;  // owned: freed by the destructor
};

}  // namespace kb::ref::L2_093

KB_REGISTER_IMPLEMENTATION(L2_093, reference, kb::ref::L2_093::Reference)
