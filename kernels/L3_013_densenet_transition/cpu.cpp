// Golden model of L3_013 DenseNet121TransitionLayer: BatchNorm (training mode) -> ReLU ->
// 1x1 conv -> 2x2 average pool, in the order of the nn.Sequential `transition`.
#include "kernels/cpu/ops.h"
#include "kernels/cpu_model.h"

namespace kb::cpu::L3_013 {

template <typename T>
HostTensor<T> forward(const ProblemInstance& p, const TensorSet& t) {
  const HostTensor<T> x = cast<T>(t.get("x"));  // (N, C_in, H, W)

  // Training mode: batch statistics over (N, H, W), biased variance.
  HostTensor<T> y =
      batch_norm_train(x, cast<T>(t.get("transition.0.weight")),
                       cast<T>(t.get("transition.0.bias")), p.number("transition.0", "eps"));
  y = map(y, relu<T>);
  // (N, C_in, H, W) -> (N, C_out, H, W)
  y = conv<T>(y, cast<T>(t.get("transition.2.weight")), nullptr, conv_params(p, "transition.2"));
  // (N, C_out, H, W) -> (N, C_out, H / 2, W / 2), floor
  return avg_pool(y, p.ints("transition.3", "kernel_size"), p.ints("transition.3", "stride"),
                  p.ints("transition.3", "padding"));
}

}  // namespace kb::cpu::L3_013

KB_REGISTER_CPU_MODEL(L3_013)
