// Golden model of L2_010 ConvTranspose2d_MaxPool_Hardtanh_Mean_Tanh:
// tanh(mean_hw(hardtanh(maxpool(conv_transpose2d(x))))).
#include <cmath>

#include "kernels/cpu/ops.h"
#include "kernels/cpu_model.h"

namespace kb::cpu::L2_010 {

template <typename T>
HostTensor<T> forward(const ProblemInstance& p, const TensorSet& t) {
  const auto x = cast<T>(t.get("x"));                      // (N, C_in, H, W)
  const auto w = cast<T>(t.get("conv_transpose.weight"));  // (C_in, C_out, 3, 3)
  const auto b = cast<T>(t.get("conv_transpose.bias"));    // (C_out)
  const T lo = T(p.number("hardtanh", "min_val"));
  const T hi = T(p.number("hardtanh", "max_val"));

  // k 3, stride 1, padding 1 keep the size. y: (N, C_out, H, W)
  auto y = conv_transpose(x, w, &b, conv_params(p, "conv_transpose"));
  // Floor mode drops an odd last row or column. y: (N, C_out, H/2, W/2)
  y = max_pool(y, p.ints("maxpool", "kernel_size"), p.ints("maxpool", "stride"),
               p.ints("maxpool", "padding"));
  y = map(y, [lo, hi](T v) { return hardtanh(v, lo, hi); });
  y = mean(y, p.ints("mean", "dims"), p.flag("mean", "keepdim"));  // y: (N, C_out, 1, 1)
  return map(y, [](T v) { return std::tanh(v); });
}

}  // namespace kb::cpu::L2_010

KB_REGISTER_CPU_MODEL(L2_010)
