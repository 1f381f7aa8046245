// Training-mode BatchNorm through cuDNN, as PyTorch eager runs nn.BatchNorm{1,2,3}d in training
// mode on fp32 NCHW tensors (aten/src/ATen/native/cudnn/BatchNorm.cpp): CUDNN_BATCHNORM_SPATIAL,
// cudnnBatchNormalizationForwardTrainingEx with CUDNN_BATCHNORM_OPS_BN, batch statistics with
// the biased variance for the output, and the running buffers (mean 0, variance 1 at setup)
// updated with momentum 0.1 on every call, a side effect the output does not depend on.
//
// PyTorch takes this path only when cuDNN accepts the shape (eps >= CUDNN_BN_MIN_EPSILON, fewer
// than INT32_MAX elements, N <= 880,801, rank >= 3); elsewhere it runs its native kernel.
// `applies` says which, so the caller can run the eager kernel instead (eager_ops.h).
//
// Ownership: owns its descriptors and device buffers; not copyable.
// Thread safety: use from one thread at a time.
#pragma once

#include <cuda_runtime.h>
#include <cudnn.h>

#include "common/problem_spec.h"
#include "common/status.h"

namespace kb {

class CudnnBatchNorm {
 public:
  // Whether PyTorch would run BatchNorm on an input of shape `x` with `eps` through cuDNN.
  static bool applies(const Shape& x, double eps);

  CudnnBatchNorm() = default;
  ~CudnnBatchNorm();
  CudnnBatchNorm(const CudnnBatchNorm&) = delete;
  CudnnBatchNorm& operator=(const CudnnBatchNorm&) = delete;

  // Plans for an input (and output) of shape `x`, which `applies`. Allocates the running buffers,
  // the saved statistics and cuDNN's workspace and reserve space.
  Status setup(const Shape& x, double eps);

  // y = (x - mean) / sqrt(var + eps) * weight + bias per channel, batch statistics, on `stream`.
  Status run(const float* x, const float* weight, const float* bias, float* y, cudaStream_t stream);

 private:
  double eps_ = 0;
  cudnnTensorDescriptor_t x_desc_ = nullptr, stats_desc_ = nullptr;
  float* buffers_ = nullptr;  // running mean, running var, saved mean, saved inverse std: C each
  int64_t channels_ = 0;
  void* workspace_ = nullptr;
  size_t workspace_bytes_ = 0;
  void* reserve_ = nullptr;
  size_t reserve_bytes_ = 0;
};

}  // namespace kb
