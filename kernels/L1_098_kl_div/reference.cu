// L1_098 reference: F.kl_div(torch.log(predictions), targets, reduction='batchmean') as PyTorch
// eager runs it: the log kernel into its own tensor, then the kl_div 'batchmean' reduction.
#include <cuda_runtime.h>

#include <cstddef>

#include "kernels/device/cuda_check.h"
#include "kernels/device/eager_ops.h"
#include "kernels/device/library_handles.h"
#include "kernels/implementation.h"

namespace kb::ref::L1_098 {

class Reference final : public Implementation {
 public:
  ~Reference() override { KB_CUDA_WARN(cudaFree(log_predictions_.data)); }

  Status setup(const ProblemInstance& p, cudaStream_t) override {
    predictions_ = input_index(p, "predictions");
    targets_ = input_index(p, "targets");
    log_predictions_.shape = p.shape_of("log_predictions");  // (N, D)
    KB_CUDA_TRY(cudaMalloc(&log_predictions_.data, log_predictions_.numel() * sizeof(float)));
    return Status::ok();
  }

  Status run(const ImplArgs& args, cudaStream_t stream) override {
    const DeviceTensor& predictions = args.inputs[predictions_];  // (N, D), rows sum to 1
    const DeviceTensor& targets = args.inputs[targets_];          // (N, D), rows sum to 1
    KB_TRY(eager::unary(eager::Unary::kLog, predictions.data, log_predictions_.data,
                        predictions.numel(), stream));
    // out: () = sum of targets * (log(targets) - log_predictions) / N
    return eager::kl_div_batchmean(log_predictions_, targets, args.output.data, stream);
  }

 private:
  size_t predictions_ = 0, targets_ = 0;
  DeviceTensor log_predictions_;  // owned: freed by the destructor
};

}  // namespace kb::ref::L1_098

KB_REGISTER_IMPLEMENTATION(L1_098, reference, kb::ref::L1_098::Reference)
