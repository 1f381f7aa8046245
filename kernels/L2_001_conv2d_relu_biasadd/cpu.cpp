// Golden model of L2_001 Conv2D_ReLU_BiasAdd: relu(conv2d(x) + conv.bias) + bias[c].
#include "kernels/cpu/ops.h"
#include "kernels/cpu_model.h"

namespace kb::cpu::L2_001 {

template <typename T>
HostTensor<T> forward(const ProblemInstance& p, const TensorSet& t) {
  const auto x = cast<T>(t.get("x"));            // (N, C_in, H, W)
  const auto w = cast<T>(t.get("conv.weight"));  // (C_out, C_in, 3, 3)
  const auto b = cast<T>(t.get("conv.bias"));    // (C_out)
  const auto bias = cast<T>(t.get("bias"));      // (C_out, 1, 1)

  auto y = conv(x, w, &b, conv_params(p, "conv"));  // y: (N, C_out, H-2, W-2)
  y = map(y, relu<T>);
  return add(y, bias);  // after the ReLU, so it cannot fold into the conv bias
}

}  // namespace kb::cpu::L2_001

KB_REGISTER_CPU_MODEL(L2_001)
