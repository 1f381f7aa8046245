// Golden model of L2_060 ConvTranspose3d_Swish_GroupNorm_HardSwish:
// hardswish(group_norm(swish(conv_transpose3d(x)))).
#include "kernels/cpu/ops.h"
#include "kernels/cpu_model.h"

namespace kb::cpu::L2_060 {

template <typename T>
HostTensor<T> forward(const ProblemInstance& p, const TensorSet& t) {
  const auto x = cast<T>(t.get("x"));                          // (N, C_in, D, H, W)
  const auto w = cast<T>(t.get("conv_transpose.weight"));      // (C_in, C_out, 3, 3, 3)
  const auto b = cast<T>(t.get("conv_transpose.bias"));        // (C_out)
  const auto gn_weight = cast<T>(t.get("group_norm.weight"));  // (C_out)
  const auto gn_bias = cast<T>(t.get("group_norm.bias"));      // (C_out)

  // k 3, stride 2, padding 1. y: (N, C_out, 2D-1, 2H-1, 2W-1)
  auto y = conv_transpose(x, w, &b, conv_params(p, "conv_transpose"));
  y = map(y, swish<T>);  // sigmoid(y) * y
  // The init argument `groups` is the GroupNorm's group count; the conv has groups 1.
  y = group_norm(y, p.int_attr("group_norm", "num_groups"), gn_weight, gn_bias,
                 p.number("group_norm", "eps"));
  return map(y, hardswish<T>);
}

}  // namespace kb::cpu::L2_060

KB_REGISTER_CPU_MODEL(L2_060)
