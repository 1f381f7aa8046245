// L1_075 golden model: ConvTranspose2d(C_in, C_out, (3, 5), stride=(2, 3), padding=(1, 2),
// dilation=(2, 1), groups=4, bias=False).
#include "kernels/cpu/ops.h"
#include "kernels/cpu_model.h"

namespace kb::cpu::L1_075 {

template <typename T>
HostTensor<T> forward(const ProblemInstance& p, const TensorSet& t) {
  const auto x = cast<T>(t.get("x"));                        // x: (N, C_in, H, W)
  const auto w = cast<T>(t.get("conv_transpose2d.weight"));  // w: (C_in, C_out/4, 3, 5)
  // out: (N, C_out, 2H+1, 3W-2); every even row is 0
  return conv_transpose<T>(x, w, /*bias=*/nullptr, conv_params(p, "conv_transpose2d"));
}

}  // namespace kb::cpu::L1_075

KB_REGISTER_CPU_MODEL(L1_075)
