// Golden model of L3_031 VisionAttention: pixels as tokens through nn.MultiheadAttention
// (batch_first=False), residual add, LayerNorm over channels, back to the image layout.
#include "kernels/cpu/ops.h"
#include "kernels/cpu_model.h"

namespace kb::cpu::L3_031 {

template <typename T>
HostTensor<T> forward(const ProblemInstance& p, const TensorSet& t) {
  const HostTensor<T> x = cast<T>(t.get("x"));  // (N, C, H, W)

  // (N, C, H, W) -> (N, C, L = H*W) -> (L, N, E = C): the layout batch_first=False expects.
  const HostTensor<T> tokens =
      permute(reshape(x, p.ints("view", "shape")), p.ints("permute", "dims"));
  HostTensor<T> y = multihead_attention(
      tokens, tokens, tokens, cast<T>(t.get("attn.in_proj_weight")),
      cast<T>(t.get("attn.in_proj_bias")), cast<T>(t.get("attn.out_proj.weight")),
      cast<T>(t.get("attn.out_proj.bias")), p.int_attr("attn", "num_heads"));  // (L, N, E)
  y = layer_norm(add(y, tokens), cast<T>(t.get("norm.weight")), cast<T>(t.get("norm.bias")),
                 p.number("norm", "eps"));  // over E
  // (L, N, E) -> (N, C, L) -> (N, C, H, W)
  return reshape(permute(y, p.ints("permute_back", "dims")), p.ints("view_back", "shape"));
}

}  // namespace kb::cpu::L3_031

KB_REGISTER_CPU_MODEL(L3_031)
