// The multihead_attention op of the GPU reference: nn.MultiheadAttention (batch_first=False,
// dropout 0, no masks) as PyTorch eager runs it in training mode, the slow path of
// F.multi_head_attention_forward with need_weights=True:
//   - F.linear with the packed in_proj_weight: one addmm (the bias copied into the output, then
//     one GEMM with beta = 1 onto it);
//   - the packed projection unflattened and copied to (3, L, N, E) (q, k, v);
//   - q scaled by 1/sqrt(head_dim); QK^T materializes the (N*heads, L, S) scores; softmax writes
//     a second such tensor (8.6 GB each at L3_031's full size); PV;
//   - the heads transposed back to (L, N, E); out_proj, one addmm like in_proj;
//   - the head-averaged weights, computed though nn.MultiheadAttention's caller may discard them.
// Self-attention only (query, key and value the same tensor), the packed-projection path.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/cuda/cuda_check.h"
#include "kernels/eager/cublas_gemm.h"
#include "kernels/eager/eager_ops.h"
#include "kernels/eager/graph_nodes.h"

namespace kb::graph {
namespace {

// avg: (N, P) = mean over h of weights (N, heads, P), as ATen's mean: sum * (1 / heads).
// Any P: one thread per output.
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

// P % 4 == 0, 16-byte aligned: the launch ATen's reduce_kernel<128, 4> makes for a mean over a
// dim that is not the innermost (its setReduceConfig: 4 outputs per thread, a block of 32 x 4
// threads, the reduced dim across threadIdx.y). Thread (x, y) sums heads y, y + 4, ... of 4
// adjacent outputs as a float4; the block's 4 rows are folded through shared memory in ATen's
// tree order ((y0 + y1) + (y2 + y3)) and row 0 stores the float4 of means. Outputs
// [first, first + count) in float4s.
constexpr int kMeanCols = 32, kMeanRows = 4;
__global__ void __launch_bounds__(kMeanCols* kMeanRows)
    mean_over_heads_vec4_kernel(const float4* weights, float4* avg, int64_t heads, int64_t plane4,
                                int64_t first, int64_t count) {
  __shared__ float4 partial[kMeanRows][kMeanCols];
  const int x = static_cast<int>(threadIdx.x), y = static_cast<int>(threadIdx.y);
  const float factor = 1.0f / static_cast<float>(heads);
  const int64_t blocks = (count + kMeanCols - 1) / kMeanCols;
  for (int64_t b = blockIdx.x; b < blocks; b += gridDim.x) {  // uniform across the block
    const int64_t i = b * kMeanCols + x;
    float4 sum = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (i < count) {
      const int64_t o = first + i;
      const float4* w = weights + (o / plane4) * heads * plane4 + o % plane4;
      for (int64_t h = y; h < heads; h += kMeanRows) {
        const float4 v = w[h * plane4];
        sum.x += v.x, sum.y += v.y, sum.z += v.z, sum.w += v.w;
      }
    }
    partial[y][x] = sum;
    __syncthreads();
    if (y == 0 && i < count) {
      const float4 a = partial[0][x], c = partial[1][x], d = partial[2][x], e = partial[3][x];
      avg[first + i] =
          make_float4(((a.x + c.x) + (d.x + e.x)) * factor, ((a.y + c.y) + (d.y + e.y)) * factor,
                      ((a.z + c.z) + (d.z + e.z)) * factor, ((a.w + c.w) + (d.w + e.w)) * factor);
    }
    __syncthreads();
  }
}

// ATen splits a reduction whose input cannot be indexed in 32 bits into several launches (the
// eager profile of L3_031 lists 4 reduce_kernel calls for its 2^31-element weights); the vec4
// path splits its outputs the same way, at most 2^29 input elements per launch.
constexpr int64_t kMeanLaunchInputs = int64_t{1} << 29;

Status mean_over_heads(const float* weights, float* avg, int64_t batch, int64_t heads,
                       int64_t plane, cudaStream_t stream) {
  constexpr int kThreads = 256;
  if (batch * plane == 0) return Status::ok();
  const bool vec4 = plane % 4 == 0 && reinterpret_cast<uintptr_t>(weights) % 16 == 0 &&
                    reinterpret_cast<uintptr_t>(avg) % 16 == 0;
  if (!vec4) {
    const int64_t blocks = std::min<int64_t>((batch * plane + kThreads - 1) / kThreads, 1 << 20);
    mean_over_heads_kernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(
        weights, avg, batch, heads, plane);
    KB_CUDA_TRY(cudaGetLastError());
    return Status::ok();
  }
  const int64_t outputs4 = batch * plane / 4;
  const int64_t per_launch = std::max<int64_t>(kMeanLaunchInputs / 4 / heads, kMeanCols);
  for (int64_t first = 0; first < outputs4; first += per_launch) {
    const int64_t count = std::min(per_launch, outputs4 - first);
    const int64_t blocks = std::min<int64_t>((count + kMeanCols - 1) / kMeanCols, INT32_MAX);
    mean_over_heads_vec4_kernel<<<static_cast<unsigned>(blocks), dim3(kMeanCols, kMeanRows), 0,
                                  stream>>>(reinterpret_cast<const float4*>(weights),
                                            reinterpret_cast<float4*>(avg), heads, plane / 4, first,
                                            count);
    KB_CUDA_TRY(cudaGetLastError());
  }
  return Status::ok();
}

// The sizes of one attention call; scratch buffers in the order of `Scratch`.
struct Attention {
  int64_t len = 0, batch = 0, embed = 0, heads = 1, head_dim = 0;
  float q_scale = 1;

  enum Scratch { kProj, kQkv, kQScaled, kScores, kProbs, kHeadsOut, kConcat, kAvg, kCount };

  std::vector<int64_t> scratch_elements() const {
    const int64_t tokens = len * batch * embed, bh = batch * heads;
    return {3 * tokens,     3 * tokens,          tokens, bh * len * len,
            bh * len * len, bh * len * head_dim, tokens, batch * len * len};
  }

  // y: (L*N, rows of w) = bias + x: (L*N, E) @ w^T, as addmm: bias copied into y, GEMM onto it.
  Status linear(const float* x, const DeviceTensor& w, const DeviceTensor& bias, float* out,
                cudaStream_t stream) const {
    const GemmShape shape{len * batch, w.shape[0], embed, false, /*transpose_b=*/true};
    KB_TRY(eager::broadcast_rows(bias.data, shape.n, out, shape.m, stream));
    return gemm(shape, 1.0f, x, embed, w.data, embed, 1.0f, out, shape.n, stream);
  }

  // Head b = n*heads + h of q, k, v: rows l at l*N*E + b*hd, i.e. ld N*E, batch stride hd.
  Status attend(const NodeIo& io, cudaStream_t stream) const {
    const int64_t ld = batch * embed, plane = len * batch * embed, bh = batch * heads;
    const float* q = io.scratch[kQkv];
    const float* k = q + plane;
    const float* v = q + 2 * plane;
    float* q_scaled = io.scratch[kQScaled];
    float* scores = io.scratch[kScores];
    float* probs = io.scratch[kProbs];
    KB_TRY(eager::unary(eager::Unary::kMulScalar, q, q_scaled, plane, stream, q_scale));
    // scores: (bh, L, S) = q_scaled: (bh, L, hd) @ k^T: (bh, hd, S)
    const GemmShape qk{len, len, head_dim, false, /*transpose_b=*/true};
    KB_TRY(gemm_strided_batched(qk, 1.0f, q_scaled, ld, head_dim, k, ld, head_dim, 0.0f, scores,
                                len, len * len, bh, stream));
    const Shape weights_shape{bh, len, len};
    KB_TRY(eager::softmax({scores, weights_shape}, 2, {probs, weights_shape}, stream));
    // heads_out: (bh, L, hd) = probs: (bh, L, S) @ v: (bh, S, hd)
    const GemmShape pv{len, head_dim, len, false, false};
    return gemm_strided_batched(pv, 1.0f, probs, len, len * len, v, ld, head_dim, 0.0f,
                                io.scratch[kHeadsOut], head_dim, len * head_dim, bh, stream);
  }

  Status run(const NodeIo& io, cudaStream_t stream) const {
    const DeviceTensor& tokens = io.in[0];  // (L, N, E)
    KB_TRY(linear(tokens.data, io.in[3], io.in[4], io.scratch[kProj], stream));
    KB_TRY(eager::permute({io.scratch[kProj], {len, batch, 3, embed}}, {2, 0, 1, 3},
                          {io.scratch[kQkv], {3, len, batch, embed}}, stream));
    KB_TRY(attend(io, stream));
    const int64_t bh = batch * heads;
    KB_TRY(eager::permute({io.scratch[kHeadsOut], {bh, len, head_dim}}, {1, 0, 2},
                          {io.scratch[kConcat], {len, bh, head_dim}}, stream));  // (L, N, E)
    KB_TRY(linear(io.scratch[kConcat], io.in[5], io.in[6], io.out.data, stream));
    return mean_over_heads(io.scratch[kProbs], io.scratch[kAvg], batch, heads, len * len, stream);
  }
};

}  // namespace

Result<GpuNode> make_attention_node(const ProblemInstance& p, const GraphNode& node) {
  if (node.inputs[1] != node.inputs[0] || node.inputs[2] != node.inputs[0]) {
    return Status::failed_precondition(
        p.spec().id + " node '" + node.name +
        "': the GPU reference runs self-attention only (query, key and value one tensor)");
  }
  const Shape& t = p.shape_of(node.inputs[0]);  // (L, N, E)
  auto a = std::make_shared<Attention>();
  a->len = t[0];
  a->batch = t[1];
  a->embed = t[2];
  a->heads = p.int_attr(node.name, "num_heads");
  a->head_dim = a->embed / a->heads;
  a->q_scale = static_cast<float>(std::sqrt(1.0 / static_cast<double>(a->head_dim)));
  const Attention* attention = a.get();
  return GpuNode{a->scratch_elements(),
                 [attention](const NodeIo& io, cudaStream_t s) { return attention->run(io, s); },
                 a};
}

}  // namespace kb::graph
