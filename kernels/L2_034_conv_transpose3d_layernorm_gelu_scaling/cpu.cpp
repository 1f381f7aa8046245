// Golden model of L2_034 ConvTranspose3d_LayerNorm_GELU_Scaling:
// gelu(layer_norm_over_W(conv_transpose3d(x))) * scaling_factor.
#include "kernels/cpu/ops.h"
#include "kernels/cpu_model.h"

namespace kb::cpu::L2_034 {

template <typename T>
HostTensor<T> forward(const ProblemInstance& p, const TensorSet& t) {
  const auto x = cast<T>(t.get("x"));                          // (N, C_in, D, H, W)
  const auto w = cast<T>(t.get("conv_transpose.weight"));      // (C_in, C_out, 4, 4, 4)
  const auto b = cast<T>(t.get("conv_transpose.bias"));        // (C_out)
  const auto ln_weight = cast<T>(t.get("layer_norm.weight"));  // (C_out), indexed by w
  const auto ln_bias = cast<T>(t.get("layer_norm.bias"));      // (C_out), indexed by w
  const T factor = T(p.number("scale", "value"));

  // k 4, stride 2, padding 1 double every size. y: (N, C_out, 2D, 2H, 2W)
  auto y = conv_transpose(x, w, &b, conv_params(p, "conv_transpose"));
  // LayerNorm(C_out) normalizes over the last dim, W_out = 2W (== C_out), not the channels.
  y = layer_norm(y, ln_weight, ln_bias, p.number("layer_norm", "eps"));
  y = map(y, gelu_erf<T>);
  return map(y, [factor](T v) { return v * factor; });
}

}  // namespace kb::cpu::L2_034

KB_REGISTER_CPU_MODEL(L2_034)
