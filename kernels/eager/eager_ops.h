// Eager ops: one CUDA kernel per PyTorch op, strict fp32, the way PyTorch eager runs the ops that
// are not convolutions or GEMMs. The GPU graph reference (graph_nodes.h) composes them with
// CudnnConv and the cuBLAS GEMMs; each op reads its inputs from global memory and writes its
// output there, like an ATen kernel, so a reference does the memory traffic that eager does.
//
// Conventions: tensors are dense row-major fp32 in device memory; x is (N, C, *S) where the op
// has channels. Every function only enqueues work on `stream` and returns the launch status;
// out-of-place always (out may not alias an input unless the function says it may). Reductions
// accumulate in fp32 with a tree (norm statistics: Welford or a two-pass mean/variance, like
// ATen), so that the reference stays within 1e-4 of the golden model.
//
// Thread safety: stateless; safe from any thread.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

#include "common/status.h"
#include "kernels/implementation.h"

namespace kb::eager {

enum class Unary {
  kRelu,
  kSigmoid,
  kTanh,
  kGeluErf,    // 0.5 x (1 + erf(x / sqrt 2))
  kSwish,      // x * sigmoid(x)
  kHardswish,  // x * clamp(x + 3, 0, 6) / 6
  kLog,
  kLeakyRelu,  // a = negative slope
  kHardtanh,   // clamp(x, a, b)
  kAddScalar,  // x + a
  kMulScalar,  // x * a
  kDivScalar,  // x / a (true division, as torch's x / a)
  kMinScalar,  // torch.min(x, tensor(a)): NaN propagates
};

// y[i] = op(x[i], a, b) for i < n. y may alias x (in-place, like relu_()).
Status unary(Unary op, const float* x, float* y, int64_t n, cudaStream_t stream, float a = 0,
             float b = 0);

enum class Binary {
  kAdd,
  kSub,  // a - b
  kMul,
  kXlogy,  // torch.xlogy(a, b): a * log(b), 0 where a == 0, NaN where b is NaN
};

// out = a op b with NumPy broadcasting (out.shape is the broadcast shape). out may alias a when
// a.shape == out.shape (in-place add_, as `out += shortcut`).
Status binary(Binary op, const DeviceTensor& a, const DeviceTensor& b, const DeviceTensor& out,
              cudaStream_t stream);

// out (rows, n) = x (n) in every row: ATen's copy_ of bias.expand(rows, n), which addmm runs to
// put its bias in the output before the GEMM accumulates onto it (beta = 1).
Status broadcast_rows(const float* x, int64_t n, float* out, int64_t rows, cudaStream_t stream);

// Pooling over the spatial dims of x (N, C, *S), floor mode; avg counts padding.
Status max_pool(const DeviceTensor& x, const std::vector<int64_t>& kernel,
                const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
                const DeviceTensor& out, cudaStream_t stream);
Status avg_pool(const DeviceTensor& x, const std::vector<int64_t>& kernel,
                const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
                const DeviceTensor& out, cudaStream_t stream);

// Mean over the trailing `count` dims of x (x viewed as (outer, inner)); out has `outer` elements.
Status mean_trailing(const DeviceTensor& x, int count, const DeviceTensor& out,
                     cudaStream_t stream);

// Training-mode BatchNorm2d/3d: batch statistics per channel over N and S (biased variance for
// the normalization), out = (x - mean) / sqrt(var + eps) * weight + bias.
Status batch_norm_train(const DeviceTensor& x, const float* weight, const float* bias, float eps,
                        const DeviceTensor& out, cudaStream_t stream);
// InstanceNorm without affine: per (n, c) over S.
Status instance_norm(const DeviceTensor& x, float eps, const DeviceTensor& out,
                     cudaStream_t stream);
// GroupNorm: per (n, group) over the group's channels and S; affine per channel.
Status group_norm(const DeviceTensor& x, int64_t groups, const float* weight, const float* bias,
                  float eps, const DeviceTensor& out, cudaStream_t stream);
// LayerNorm over the trailing `normalized_numel` elements of each row; affine per position.
Status layer_norm(const DeviceTensor& x, int64_t normalized_numel, const float* weight,
                  const float* bias, float eps, const DeviceTensor& out, cudaStream_t stream);

// Softmax along `dim` (non-negative) of x, max-subtracted.
Status softmax(const DeviceTensor& x, int dim, const DeviceTensor& out, cudaStream_t stream);

// ChannelShuffle: out[:, j] = x[:, (j % groups) * (C / groups) + j / groups].
Status channel_shuffle(const DeviceTensor& x, int64_t groups, const DeviceTensor& out,
                       cudaStream_t stream);

// out[0] = x.sum() over all elements (a fixed-order two-level tree).
Status sum_all(const DeviceTensor& x, float* out, cudaStream_t stream);

// F.kl_div(log_input, target, reduction='batchmean') -> out[0]: sum of
// target * (log(target) - log_input) (0 where target == 0) over all elements, / rows.
Status kl_div_batchmean(const DeviceTensor& log_input, const DeviceTensor& target, float* out,
                        cudaStream_t stream);

// out = x.permute(dims).contiguous().
Status permute(const DeviceTensor& x, const std::vector<int>& dims, const DeviceTensor& out,
               cudaStream_t stream);

}  // namespace kb::eager
