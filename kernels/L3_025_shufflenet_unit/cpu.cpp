// Golden model of L3_025 ShuffleNetUnit: grouped 1x1 conv -> BN -> ReLU -> depthwise 3x3 conv ->
// BN -> channel shuffle -> grouped 1x1 conv -> BN -> ReLU, plus the 1x1 conv + BN shortcut.
// Every BatchNorm runs in training mode (batch statistics, biased variance).
#include <string>

#include "kernels/cpu/ops.h"
#include "kernels/cpu_model.h"

namespace kb::cpu::L3_025 {
namespace {

// Conv node `name` (no bias) then BatchNorm node `bn`, parameters by their state_dict keys.
template <typename T>
HostTensor<T> conv_bn(const ProblemInstance& p, const TensorSet& t, const HostTensor<T>& x,
                      const std::string& name, const std::string& bn) {
  HostTensor<T> y = conv<T>(x, cast<T>(t.get(name + ".weight")), nullptr, conv_params(p, name));
  return batch_norm_train(y, cast<T>(t.get(bn + ".weight")), cast<T>(t.get(bn + ".bias")),
                          p.number(bn, "eps"));
}

}  // namespace

template <typename T>
HostTensor<T> forward(const ProblemInstance& p, const TensorSet& t) {
  const HostTensor<T> x = cast<T>(t.get("x"));  // (N, C_in, H, W)

  // (N, C_out / 4, H, W); conv2 is depthwise and keeps the shape.
  HostTensor<T> out = map(conv_bn(p, t, x, "conv1", "bn1"), relu<T>);
  out = conv_bn(p, t, out, "conv2", "bn2");
  // Output channel j reads input channel (j % G) * (C / G) + j / G.
  out = channel_shuffle(out, p.int_attr("shuffle", "groups"));
  out = map(conv_bn(p, t, out, "conv3", "bn3"), relu<T>);  // (N, C_out, H, W)

  // The shortcut is conv + BN because C_in != C_out.
  return add(out, conv_bn(p, t, x, "shortcut.0", "shortcut.1"));  // (N, C_out, H, W)
}

}  // namespace kb::cpu::L3_025

KB_REGISTER_CPU_MODEL(L3_025)
