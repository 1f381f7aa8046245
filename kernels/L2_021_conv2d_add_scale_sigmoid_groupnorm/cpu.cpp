// Golden model of L2_021 Conv2d_Add_Scale_Sigmoid_GroupNorm:
// group_norm(sigmoid((conv2d(x) + bias[c]) * scale[c])).
#include "kernels/cpu/ops.h"
#include "kernels/cpu_model.h"

namespace kb::cpu::L2_021 {

template <typename T>
HostTensor<T> forward(const ProblemInstance& p, const TensorSet& t) {
  const auto x = cast<T>(t.get("x"));                          // (N, C_in, H, W)
  const auto w = cast<T>(t.get("conv.weight"));                // (C_out, C_in, 3, 3)
  const auto b = cast<T>(t.get("conv.bias"));                  // (C_out)
  const auto bias = cast<T>(t.get("bias"));                    // (C_out, 1, 1)
  const auto scale = cast<T>(t.get("scale"));                  // (C_out, 1, 1)
  const auto gn_weight = cast<T>(t.get("group_norm.weight"));  // (C_out)
  const auto gn_bias = cast<T>(t.get("group_norm.bias"));      // (C_out)

  auto y = conv(x, w, &b, conv_params(p, "conv"));  // y: (N, C_out, H-2, W-2)
  y = add(y, bias);
  y = mul(y, scale);
  y = map(y, sigmoid<T>);
  return group_norm(y, p.int_attr("group_norm", "num_groups"), gn_weight, gn_bias,
                    p.number("group_norm", "eps"));
}

}  // namespace kb::cpu::L2_021

KB_REGISTER_CPU_MODEL(L2_021)
