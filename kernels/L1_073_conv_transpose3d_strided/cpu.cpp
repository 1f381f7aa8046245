// L1_073 golden model: ConvTranspose3d(C_in, C_out, (3, 3, 3), stride=2, padding=1, bias=False).
// groups is 1, as PyTorch really builds it: the script's groups=4 lands in the unused
// output_padding argument (see the spec's notes), and the graph node says so.
#include "kernels/cpu/ops.h"
#include "kernels/cpu_model.h"

namespace kb::cpu::L1_073 {

template <typename T>
HostTensor<T> forward(const ProblemInstance& p, const TensorSet& t) {
  const auto x = cast<T>(t.get("x"));                        // x: (N, C_in, D, H, W)
  const auto w = cast<T>(t.get("conv_transpose3d.weight"));  // w: (C_in, C_out, 3, 3, 3)
  // out: (N, C_out, 2D-1, 2H-1, 2W-1)
  return conv_transpose<T>(x, w, /*bias=*/nullptr, conv_params(p, "conv_transpose3d"));
}

}  // namespace kb::cpu::L1_073

KB_REGISTER_CPU_MODEL(L1_073)
