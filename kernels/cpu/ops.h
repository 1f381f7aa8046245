// CPU ops for the golden models: PyTorch's semantics, written plainly, templated on the element
// type T (double for the golden model, float for the CPU device's fp32 variant). Every op
// accumulates in T, reads row-major HostTensor<T>s and returns a new tensor.
//
// The graph interpreter (graph_model.h) runs one of these per graph node, the way the PyTorch
// forward() does. Shapes are PyTorch's: x (N, C, *spatial) with 1..3 spatial dims.
// The ops check their shape preconditions with KB_CPU_CHECK (abort with a message): the spec
// was validated before any op runs, so a violated precondition is a bug, not bad input.
//
// Definitions live in ops.cpp, instantiated for float and double.
// Thread safety: pure functions.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "common/host_tensor.h"
#include "common/problem_spec.h"

namespace kb::cpu {

// Converts a generated fp32 tensor to T (exact for double).
template <typename T>
HostTensor<T> cast(const HostTensor<float>& t);

// The convolution configuration of one layer; list sizes equal the number of spatial dims.
struct ConvParams {
  std::vector<int64_t> stride, padding, dilation;
  std::vector<int64_t> output_padding;  // transposed convs only; zeros otherwise
  int64_t groups = 1;
};
// Reads stride/padding/dilation/output_padding/groups of graph node `node`.
ConvParams conv_params(const ProblemInstance& p, const std::string& node);

// x (N, C, *S), w (O, C/groups, *K), bias (O) or nullptr -> (N, O, *S_out).
template <typename T>
HostTensor<T> conv(const HostTensor<T>& x, const HostTensor<T>& w, const HostTensor<T>* bias,
                   const ConvParams& cp);
// x (N, C, *S), w (C, O/groups, *K), bias (O) or nullptr -> (N, O, *S_out),
// S_out = (S - 1)*stride - 2*padding + dilation*(K - 1) + output_padding + 1.
template <typename T>
HostTensor<T> conv_transpose(const HostTensor<T>& x, const HostTensor<T>& w,
                             const HostTensor<T>* bias, const ConvParams& cp);

// a (B, M, K), b (B, K, N) -> (B, M, N).
template <typename T>
HostTensor<T> bmm(const HostTensor<T>& a, const HostTensor<T>& b);

// nn.Linear: x (*, K), w (O, K), bias (O) or nullptr -> (*, O) = x w^T + bias.
template <typename T>
HostTensor<T> linear(const HostTensor<T>& x, const HostTensor<T>& w, const HostTensor<T>* bias);

// Elementwise: returns f(x) for every element.
template <typename T, typename F>
HostTensor<T> map(const HostTensor<T>& x, F f) {
  HostTensor<T> y(x.shape);
  for (size_t i = 0; i < x.data.size(); ++i) y.data[i] = f(x.data[i]);
  return y;
}

// Scalar activations, PyTorch's definitions.
template <typename T> T relu(T v) { return v > T(0) ? v : T(0); }
template <typename T> T sigmoid(T v) { return T(1) / (T(1) + std::exp(-v)); }
template <typename T> T gelu_erf(T v) { return T(0.5) * v * (T(1) + std::erf(v / std::sqrt(T(2)))); }
template <typename T> T swish(T v) { return v * sigmoid(v); }
template <typename T> T hardswish(T v) {
  T t = v + T(3);
  t = t < T(0) ? T(0) : (t > T(6) ? T(6) : t);
  return v * t / T(6);
}
template <typename T> T leaky_relu(T v, T slope) { return v > T(0) ? v : v * slope; }
template <typename T> T hardtanh(T v, T lo, T hi) { return v < lo ? lo : (v > hi ? hi : v); }

// NumPy-broadcasting binary ops (shapes aligned from the right; size-1 dims broadcast).
template <typename T>
HostTensor<T> add(const HostTensor<T>& a, const HostTensor<T>& b);
template <typename T>
HostTensor<T> sub(const HostTensor<T>& a, const HostTensor<T>& b);  // a - b
template <typename T>
HostTensor<T> mul(const HostTensor<T>& a, const HostTensor<T>& b);

// Pooling over the spatial dims of x (N, C, *S); floor mode, padding counts like PyTorch's
// defaults (max pool pads with -inf; avg pool counts the padding: count_include_pad=True).
template <typename T>
HostTensor<T> max_pool(const HostTensor<T>& x, const std::vector<int64_t>& kernel,
                       const std::vector<int64_t>& stride, const std::vector<int64_t>& padding);
template <typename T>
HostTensor<T> avg_pool(const HostTensor<T>& x, const std::vector<int64_t>& kernel,
                       const std::vector<int64_t>& stride, const std::vector<int64_t>& padding);

// Mean over `dims` (negative counts from the end).
template <typename T>
HostTensor<T> mean(const HostTensor<T>& x, const std::vector<int64_t>& dims, bool keepdim);

// Training-mode BatchNorm: per channel (dim 1) over all other dims, biased variance.
template <typename T>
HostTensor<T> batch_norm_train(const HostTensor<T>& x, const HostTensor<T>& weight,
                               const HostTensor<T>& bias, double eps);
// InstanceNorm without affine: per (n, c) over the spatial dims, biased variance.
template <typename T>
HostTensor<T> instance_norm(const HostTensor<T>& x, double eps);
// GroupNorm: per (n, group) over the group's channels and spatial dims; affine per channel.
template <typename T>
HostTensor<T> group_norm(const HostTensor<T>& x, int64_t num_groups, const HostTensor<T>& weight,
                         const HostTensor<T>& bias, double eps);
// LayerNorm over the trailing dims that weight's shape names; affine per position.
template <typename T>
HostTensor<T> layer_norm(const HostTensor<T>& x, const HostTensor<T>& weight,
                         const HostTensor<T>& bias, double eps);

// Softmax along `dim` (negative counts from the end), max-subtracted.
template <typename T>
HostTensor<T> softmax(const HostTensor<T>& x, int64_t dim);

// ChannelShuffle: (N, C, *S) viewed as (N, g, C/g, *S), transposed to (N, C/g, g, *S).
template <typename T>
HostTensor<T> channel_shuffle(const HostTensor<T>& x, int64_t groups);

// F.kl_div(log_input, target, reduction='batchmean'): sum(target*(log(target) - log_input)) /
// log_input.shape[0], with xlogy's 0*log(0) = 0. Returns a 0-d tensor (shape ()).
template <typename T>
HostTensor<T> kl_div_batchmean(const HostTensor<T>& log_input, const HostTensor<T>& target);

// View ops (the data are copied; the result is contiguous).
template <typename T>
HostTensor<T> reshape(const HostTensor<T>& x, const Shape& shape);
template <typename T>
HostTensor<T> permute(const HostTensor<T>& x, const std::vector<int64_t>& dims);

// nn.MultiheadAttention forward (batch_first=False, dropout 0, no masks): q (L, N, E),
// k and v (S, N, E); in_proj_weight (3E, E) rows [q; k; v], in_proj_bias (3E); q scaled by
// 1/sqrt(E/heads) after its bias; out_proj (E, E) + bias (E). Returns (L, N, E).
template <typename T>
HostTensor<T> multihead_attention(const HostTensor<T>& q, const HostTensor<T>& k,
                                  const HostTensor<T>& v, const HostTensor<T>& in_proj_weight,
                                  const HostTensor<T>& in_proj_bias,
                                  const HostTensor<T>& out_proj_weight,
                                  const HostTensor<T>& out_proj_bias, int64_t num_heads);

}  // namespace kb::cpu
