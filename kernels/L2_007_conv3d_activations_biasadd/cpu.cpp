// Golden model of L2_007 Conv3d_ReLU_LeakyReLU_GELU_Sigmoid_BiasAdd:
// sigmoid(gelu(leaky_relu(relu(conv3d(x))))) + bias[c].
#include "kernels/cpu/ops.h"
#include "kernels/cpu_model.h"

namespace kb::cpu::L2_007 {

template <typename T>
HostTensor<T> forward(const ProblemInstance& p, const TensorSet& t) {
  const auto x = cast<T>(t.get("x"));            // (N, C_in, D, H, W)
  const auto w = cast<T>(t.get("conv.weight"));  // (C_out, C_in, 3, 3, 3)
  const auto b = cast<T>(t.get("conv.bias"));    // (C_out)
  const auto bias = cast<T>(t.get("bias"));      // (C_out, 1, 1, 1)
  const T slope = T(p.number("leaky_relu", "negative_slope"));

  auto y = conv(x, w, &b, conv_params(p, "conv"));  // y: (N, C_out, D-2, H-2, W-2)
  y = map(y, relu<T>);
  // A no-op after the ReLU, kept because the source runs it.
  y = map(y, [slope](T v) { return leaky_relu(v, slope); });
  y = map(y, gelu_erf<T>);  // F.gelu's default is the erf form
  y = map(y, sigmoid<T>);
  return add(y, bias);
}

}  // namespace kb::cpu::L2_007

KB_REGISTER_CPU_MODEL(L2_007)
