// L1_054 golden model: Conv3d(C_in, C_out, (3, 3, 3), bias=False).
#include "kernels/cpu/ops.h"
#include "kernels/cpu_model.h"

namespace kb::cpu::L1_054 {

template <typename T>
HostTensor<T> forward(const ProblemInstance& p, const TensorSet& t) {
  const auto x = cast<T>(t.get("x"));              // x: (N, C_in, D, H, W)
  const auto w = cast<T>(t.get("conv3d.weight"));  // w: (C_out, C_in, 3, 3, 3)
  // out: (N, C_out, D-2, H-2, W-2)
  return conv<T>(x, w, /*bias=*/nullptr, conv_params(p, "conv3d"));
}

}  // namespace kb::cpu::L1_054

KB_REGISTER_CPU_MODEL(L1_054)
