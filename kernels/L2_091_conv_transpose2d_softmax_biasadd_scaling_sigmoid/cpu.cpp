// Golden model of L2_091 ConvTranspose2d_Softmax_BiasAdd_Scaling_Sigmoid:
// sigmoid((softmax_c(conv_transpose2d(x)) + bias[c]) * scaling_factor).
#include "kernels/cpu/ops.h"
#include "kernels/cpu_model.h"

namespace kb::cpu::L2_091 {

template <typename T>
HostTensor<T> forward(const ProblemInstance& p, const TensorSet& t) {
  const auto x = cast<T>(t.get("x"));                      // (N, C_in, H, W)
  const auto w = cast<T>(t.get("conv_transpose.weight"));  // (C_in, C_out, 4, 4)
  const auto b = cast<T>(t.get("conv_transpose.bias"));    // (C_out)
  const auto bias = cast<T>(t.get("bias"));                // (C_out, 1, 1)
  const T factor = T(p.number("scale", "value"));

  // k 4, stride 2, padding 1, output_padding 1. y: (N, C_out, 2H+1, 2W+1)
  auto y = conv_transpose(x, w, &b, conv_params(p, "conv_transpose"));
  y = softmax(y, p.int_attr("softmax", "dim"));  // over the channels
  y = add(y, bias);
  y = map(y, [factor](T v) { return v * factor; });
  return map(y, sigmoid<T>);
}

}  // namespace kb::cpu::L2_091

KB_REGISTER_CPU_MODEL(L2_091)
