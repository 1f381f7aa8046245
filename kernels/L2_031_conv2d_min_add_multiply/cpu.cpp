// Golden model of L2_031 Conv2d_Min_Add_Multiply: (min(conv2d(x), c) + bias[c]) * scaling_factor.
#include <algorithm>

#include "kernels/cpu/ops.h"
#include "kernels/cpu_model.h"

namespace kb::cpu::L2_031 {

template <typename T>
HostTensor<T> forward(const ProblemInstance& p, const TensorSet& t) {
  const auto x = cast<T>(t.get("x"));            // (N, C_in, H, W)
  const auto w = cast<T>(t.get("conv.weight"));  // (C_out, C_in, 3, 3)
  const auto b = cast<T>(t.get("conv.bias"));    // (C_out)
  const auto bias = cast<T>(t.get("bias"));      // (C_out, 1, 1)
  const T cap = T(p.number("min", "value"));
  const T factor = T(p.number("scale", "value"));

  auto y = conv(x, w, &b, conv_params(p, "conv"));  // y: (N, C_out, H-2, W-2)
  // std::min(v, cap) returns v when v is NaN, as torch.min does.
  y = map(y, [cap](T v) { return std::min(v, cap); });
  y = add(y, bias);
  return map(y, [factor](T v) { return v * factor; });
}

}  // namespace kb::cpu::L2_031

KB_REGISTER_CPU_MODEL(L2_031)
