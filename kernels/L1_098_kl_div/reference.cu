// L1_098 reference: F.kl_div(torch.log(predictions), targets, reduction='batchmean') as PyTorch
// eager runs it (ATen's kl_div for a non-log target):
//   log_p  = torch.log(predictions)                 // one kernel, (N, D)
//   output = xlogy(targets, targets) - targets * log_p   // three kernels: xlogy, mul, sub
//   loss   = output.sum() / N                        // a reduction, then a scalar division
// Each op writes its own (N, D) tensor, as eager's allocator hands out a fresh block per result.
#include <cuda_runtime.h>

#include <cstddef>

#include "kernels/device/cuda_check.h"
#include "kernels/device/eager_ops.h"
#include "kernels/device/library_handles.h"
#include "kernels/implementation.h"

namespace kb::ref::L1_098 {

class Reference final : public Implementation {
 public:
  ~Reference() override {
    for (DeviceTensor* t : {&log_p_, &xlogy_, &product_, &terms_}) KB_CUDA_WARN(cudaFree(t->data));
    KB_CUDA_WARN(cudaFree(sum_));
  }

  Status setup(const ProblemInstance& p, cudaStream_t) override {
    predictions_ = input_index(p, "predictions");
    targets_ = input_index(p, "targets");
    const Shape shape = p.shape_of("log_predictions");  // (N, D)
    rows_ = shape.at(0);
    for (DeviceTensor* t : {&log_p_, &xlogy_, &product_, &terms_}) {
      t->shape = shape;
      KB_CUDA_TRY(cudaMalloc(&t->data, t->numel() * sizeof(float)));
    }
    KB_CUDA_TRY(cudaMalloc(&sum_, sizeof(float)));
    return Status::ok();
  }

  Status run(const ImplArgs& args, cudaStream_t stream) override {
    const DeviceTensor& predictions = args.inputs[predictions_];  // (N, D), rows sum to 1
    const DeviceTensor& targets = args.inputs[targets_];          // (N, D), rows sum to 1
    KB_TRY(eager::unary(eager::Unary::kLog, predictions.data, log_p_.data, predictions.numel(), stream));
    KB_TRY(eager::binary(eager::Binary::kXlogy, targets, targets, xlogy_, stream));
    KB_TRY(eager::binary(eager::Binary::kMul, targets, log_p_, product_, stream));
    KB_TRY(eager::binary(eager::Binary::kSub, xlogy_, product_, terms_, stream));
    KB_TRY(eager::sum_all(terms_, sum_, stream));
    // out: () = sum / N ('batchmean' divides by rows, not elements)
    return eager::unary(eager::Unary::kDivScalar, sum_, args.output.data, 1, stream, static_cast<float>(rows_));
  }

 private:
  size_t predictions_ = 0, targets_ = 0;
  int64_t rows_ = 1;
  DeviceTensor log_p_, xlogy_, product_, terms_;  // owned: freed by the destructor
  float* sum_ = nullptr;
};

}  // namespace kb::ref::L1_098

KB_REGISTER_IMPLEMENTATION(L1_098, reference, kb::ref::L1_098::Reference)
