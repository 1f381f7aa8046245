// L3_031 reference: pixels as tokens through nn.MultiheadAttention, residual add, LayerNorm over
// the channels, back to the image layout, as PyTorch eager runs it in training mode (the slow
// path, F.multi_head_attention_forward with need_weights=True): F.linear on the permuted view
// copies it (matmul folds a non-viewable input), one GEMM and an in-place bias add; the packed
// projection is copied to (3, L, N, E); q is scaled; QK^T materializes the (N*heads, L, S)
// scores, softmax writes a second such tensor; PV; the heads are transposed back; out_proj GEMM
// and bias; the head-averaged weights are computed though the model discards them; residual add,
// LayerNorm; the output's permuted view is made dense by one copy.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/device/cublas_gemm.h"
#include "kernels/device/cuda_check.h"
#include "kernels/device/eager_ops.h"
#include "kernels/device/library_handles.h"
#include "kernels/implementation.h"

namespace kb::ref::L3_031 {
namespace {

// avg: (N, L*S) = mean over h of weights: (N, heads, L*S), as ATen's mean: sum * (1 / heads).
__global__ void mean_over_heads_kernel(const float* weights, float* avg, int64_t batch,
                                       int64_t heads, int64_t plane) {
  const float factor = 1.0f / static_cast<float>(heads);
  const int64_t total = batch * plane;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += step) {
    const float* w = weights + (i / plane) * heads * plane + i % plane;
    float sum = 0.0f;
    for (int64_t h = 0; h < heads; ++h) sum += w[h * plane];
    avg[i] = sum * factor;
  }
}

Status mean_over_heads(const float* weights, float* avg, int64_t batch, int64_t heads,
                       int64_t plane, cudaStream_t stream) {
  constexpr int kThreads = 256;
  const int64_t blocks = std::min<int64_t>((batch * plane + kThreads - 1) / kThreads, 1 << 20);
  if (blocks == 0) return Status::ok();
  mean_over_heads_kernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(
      weights, avg, batch, heads, plane);
  KB_CUDA_TRY(cudaGetLastError());
  return Status::ok();
}

std::vector<int> to_int(const std::vector<int64_t>& dims) {
  return {dims.begin(), dims.end()};
}

}  // namespace

class Reference final : public Implementation {
 public:
  ~Reference() override {
    for (DeviceTensor* t : owned()) KB_CUDA_WARN(cudaFree(t->data));
  }

  Status setup(const ProblemInstance& p, cudaStream_t) override {
    x_ = input_index(p, "x");
    in_w_ = param_index(p, "attn.in_proj_weight");
    in_b_ = param_index(p, "attn.in_proj_bias");
    out_w_ = param_index(p, "attn.out_proj.weight");
    out_b_ = param_index(p, "attn.out_proj.bias");
    norm_w_ = param_index(p, "norm.weight");
    norm_b_ = param_index(p, "norm.bias");
    eps_ = static_cast<float>(p.number("norm", "eps"));
    to_tokens_ = to_int(p.ints("permute", "dims"));      // (N, C, L) -> (L, N, C)
    to_image_ = to_int(p.ints("permute_back", "dims"));  // (L, N, C) -> (N, C, L)
    flat_shape_ = p.shape_of("flat");                    // (N, C, L = H*W)
    image_shape_ = p.shape_of("channels_first");         // (N, C, L)
    const Shape& t = p.shape_of("tokens");               // (L, N, E): self-attention, S = L
    len_ = t[0], batch_ = t[1], embed_ = t[2];
    heads_ = p.int_attr("attn", "num_heads");
    head_dim_ = embed_ / heads_;
    q_scale_ = static_cast<float>(std::sqrt(1.0 / static_cast<double>(head_dim_)));
    const int64_t bh = batch_ * heads_;
    tokens_.shape = attn_out_.shape = summed_.shape = normed_.shape = t;
    proj_.shape = {len_, batch_, 3, embed_};          // (L, N, 3E), unflattened for the copy
    qkv_.shape = {3, len_, batch_, embed_};           // q, k, v each (L, N, E)
    q_scaled_.shape = t;                              // (N*heads, L, hd) as a transposed view
    scores_.shape = probs_.shape = {bh, len_, len_};  // (N*heads, L, S): 8.6 GB at full size
    heads_out_.shape = {bh, len_, head_dim_};
    concat_.shape = {len_, bh, head_dim_};  // = (L, N, E): heads concatenated per token
    avg_.shape = {batch_, len_, len_};
    for (DeviceTensor* b : owned()) KB_CUDA_TRY(cudaMalloc(&b->data, b->numel() * sizeof(float)));
    return Status::ok();
  }

  Status run(const ImplArgs& args, cudaStream_t stream) override {
    KB_TRY(eager::permute({args.inputs[x_].data, flat_shape_}, to_tokens_, tokens_, stream));
    KB_TRY(linear(tokens_.data, args.params[in_w_], args.params[in_b_], proj_, stream));
    KB_TRY(eager::permute(proj_, {2, 0, 1, 3}, qkv_, stream));
    KB_TRY(attention(stream));
    KB_TRY(eager::permute(heads_out_, {1, 0, 2}, concat_, stream));  // (L, N*heads, hd)
    KB_TRY(linear(concat_.data, args.params[out_w_], args.params[out_b_], attn_out_, stream));
    KB_TRY(mean_over_heads(probs_.data, avg_.data, batch_, heads_, len_ * len_, stream));
    KB_TRY(eager::binary(eager::Binary::kAdd, attn_out_, tokens_, summed_, stream));
    KB_TRY(eager::layer_norm(summed_, embed_, args.params[norm_w_].data, args.params[norm_b_].data,
                             eps_, normed_, stream));
    // out: (N, C, H, W), written as (N, C, L)
    return eager::permute(normed_, to_image_, {args.output.data, image_shape_}, stream);
  }

 private:
  // y: (L*N, rows of w) = x: (L*N, E) @ w^T, then y += bias in place (out has y's element count).
  Status linear(const float* x, const DeviceTensor& w, const DeviceTensor& bias,
                const DeviceTensor& out, cudaStream_t stream) {
    const GemmShape shape{len_ * batch_, w.shape[0], embed_, false, /*transpose_b=*/true};
    KB_TRY(gemm(shape, 1.0f, x, embed_, w.data, embed_, 0.0f, out.data, shape.n, stream));
    const DeviceTensor y{out.data, {shape.m, shape.n}};
    return eager::binary(eager::Binary::kAdd, y, bias, y, stream);
  }

  // Head b = n*heads + h of q, k, v: rows l at l*N*E + b*hd, i.e. ld N*E, batch stride hd.
  Status attention(cudaStream_t stream) {
    const int64_t ld = batch_ * embed_, plane = len_ * batch_ * embed_, bh = batch_ * heads_;
    const float* q = qkv_.data;
    const float* k = qkv_.data + plane;
    const float* v = qkv_.data + 2 * plane;
    KB_TRY(eager::unary(eager::Unary::kMulScalar, q, q_scaled_.data, plane, stream, q_scale_));
    // scores: (bh, L, S) = q_scaled: (bh, L, hd) @ k^T: (bh, hd, S)
    const GemmShape qk{len_, len_, head_dim_, false, /*transpose_b=*/true};
    KB_TRY(gemm_strided_batched(qk, 1.0f, q_scaled_.data, ld, head_dim_, k, ld, head_dim_, 0.0f,
                                scores_.data, len_, len_ * len_, bh, stream));
    KB_TRY(eager::softmax(scores_, 2, probs_, stream));  // over the keys
    // heads_out: (bh, L, hd) = probs: (bh, L, S) @ v: (bh, S, hd)
    const GemmShape pv{len_, head_dim_, len_, false, false};
    return gemm_strided_batched(pv, 1.0f, probs_.data, len_, len_ * len_, v, ld, head_dim_, 0.0f,
                                heads_out_.data, head_dim_, len_ * head_dim_, bh, stream);
  }

  std::vector<DeviceTensor*> owned() {
    return {&tokens_,    &proj_,   &qkv_,      &q_scaled_, &scores_, &probs_,
            &heads_out_, &concat_, &attn_out_, &avg_,      &summed_, &normed_};
  }

  size_t x_ = 0, in_w_ = 0, in_b_ = 0, out_w_ = 0, out_b_ = 0, norm_w_ = 0, norm_b_ = 0;
  float eps_ = 0, q_scale_ = 1;
  std::vector<int> to_tokens_, to_image_;
  Shape flat_shape_, image_shape_;
  int64_t len_ = 0, batch_ = 0, embed_ = 0, heads_ = 1, head_dim_ = 0;
  // owned: freed by the destructor
  DeviceTensor tokens_, proj_, qkv_, q_scaled_, scores_, probs_, heads_out_, concat_, attn_out_,
      avg_, summed_, normed_;
};

}  // namespace kb::ref::L3_031

KB_REGISTER_IMPLEMENTATION(L3_031, reference, kb::ref::L3_031::Reference)
