// Golden model of L2_017 Conv2d_InstanceNorm_Divide: instance_norm(conv2d(x)) / divide_by.
#include "kernels/cpu/ops.h"
#include "kernels/cpu_model.h"

namespace kb::cpu::L2_017 {

template <typename T>
HostTensor<T> forward(const ProblemInstance& p, const TensorSet& t) {
  const auto x = cast<T>(t.get("x"));            // (N, C_in, H, W)
  const auto w = cast<T>(t.get("conv.weight"));  // (C_out, C_in, 3, 3)
  const auto b = cast<T>(t.get("conv.bias"));    // (C_out)
  const T divisor = T(p.number("divide", "value"));

  auto y = conv(x, w, &b, conv_params(p, "conv"));  // y: (N, C_out, H-2, W-2)
  // Per (n, c), biased variance, no affine: the conv bias cancels here, but PyTorch adds it.
  y = instance_norm(y, p.number("instance_norm", "eps"));
  return map(y, [divisor](T v) { return v / divisor; });
}

}  // namespace kb::cpu::L2_017

KB_REGISTER_CPU_MODEL(L2_017)
