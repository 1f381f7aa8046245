// L1_098 golden model: F.kl_div(torch.log(predictions), targets, reduction='batchmean').
#include <cmath>

#include "kernels/cpu/ops.h"
#include "kernels/cpu_model.h"

namespace kb::cpu::L1_098 {

template <typename T>
HostTensor<T> forward(const ProblemInstance&, const TensorSet& t) {
  const auto predictions = cast<T>(t.get("predictions"));  // (N, D), rows sum to 1
  const auto targets = cast<T>(t.get("targets"));          // (N, D), rows sum to 1
  const auto log_predictions = map(predictions, [](T v) { return std::log(v); });
  // The catalog's kl_div only has reduction 'batchmean': divide by N, not by N*D.
  return kl_div_batchmean(log_predictions, targets);  // ()
}

}  // namespace kb::cpu::L1_098

KB_REGISTER_CPU_MODEL(L1_098)
