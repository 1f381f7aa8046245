// L1_079 golden model: ConvTranspose1d(C_in, C_out, 3, stride=2, padding=1, dilation=2,
// bias=False).
#include "kernels/cpu/ops.h"
#include "kernels/cpu_model.h"

namespace kb::cpu::L1_079 {

template <typename T>
HostTensor<T> forward(const ProblemInstance& p, const TensorSet& t) {
  const auto x = cast<T>(t.get("x"));                        // x: (N, C_in, L)
  const auto w = cast<T>(t.get("conv1d_transpose.weight"));  // w: (C_in, C_out, 3)
  // out: (N, C_out, 2L+1); every even position is 0
  return conv_transpose<T>(x, w, /*bias=*/nullptr, conv_params(p, "conv1d_transpose"));
}

}  // namespace kb::cpu::L1_079

KB_REGISTER_CPU_MODEL(L1_079)
