// L1_081 golden model: ConvTranspose2d(C_in, C_out, (3, 3), stride=5, padding=1, dilation=2,
// bias=False).
#include "kernels/cpu/ops.h"
#include "kernels/cpu_model.h"

namespace kb::cpu::L1_081 {

template <typename T>
HostTensor<T> forward(const ProblemInstance& p, const TensorSet& t) {
  const auto x = cast<T>(t.get("x"));                        // x: (N, C_in, H, W)
  const auto w = cast<T>(t.get("conv_transpose2d.weight"));  // w: (C_in, C_out, 3, 3)
  // out: (N, C_out, 5H-2, 5W-2); rows and columns with o mod 5 in {0, 2} are 0
  return conv_transpose<T>(x, w, /*bias=*/nullptr, conv_params(p, "conv_transpose2d"));
}

}  // namespace kb::cpu::L1_081

KB_REGISTER_CPU_MODEL(L1_081)
