// Golden model of L2_093 ConvTranspose2d_Add_Min_GELU_Multiply:
// gelu(min(conv_transpose2d(x) + add_value, 0)) * multiply_value.
#include <algorithm>

#include "kernels/cpu/ops.h"
#include "kernels/cpu_model.h"

namespace kb::cpu::L2_093 {

template <typename T>
HostTensor<T> forward(const ProblemInstance& p, const TensorSet& t) {
  const auto x = cast<T>(t.get("x"));                      // (N, C_in, H, W)
  const auto w = cast<T>(t.get("conv_transpose.weight"));  // (C_in, C_out, 4, 4)
  const auto b = cast<T>(t.get("conv_transpose.bias"));    // (C_out)
  const T offset = T(p.number("add", "value"));
  const T cap = T(p.number("min", "value"));
  const T factor = T(p.number("multiply", "value"));

  // k 4, stride 2, padding 0. y: (N, C_out, 2H+2, 2W+2)
  auto y = conv_transpose(x, w, &b, conv_params(p, "conv_transpose"));
  y = map(y, [offset](T v) { return v + offset; });
  // std::min(v, cap) returns v when v is NaN, as torch.min does.
  y = map(y, [cap](T v) { return std::min(v, cap); });
  y = map(y, gelu_erf<T>);  // F.gelu's default is the erf form
  return map(y, [factor](T v) { return v * factor; });
}

}  // namespace kb::cpu::L2_093

KB_REGISTER_CPU_MODEL(L2_093)
