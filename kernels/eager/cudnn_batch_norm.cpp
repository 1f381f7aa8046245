// CudnnBatchNorm: the cuDNN path of ATen's cudnn_batch_norm for fp32 NCHW in training mode.
#include "kernels/eager/cudnn_batch_norm.h"

#include <limits>
#include <vector>

#include "common/cuda/cuda_check.h"
#include "kernels/eager/eager_ops.h"
#include "kernels/eager/library_handles.h"

namespace kb {
namespace {

// nn.BatchNorm's default momentum: running = (1 - m) * running + m * batch statistic.
constexpr double kMomentum = 0.1;
// PyTorch's bound on the batch for cuDNN in training mode.
constexpr int64_t kMaxCudnnBatch = 880801;

}  // namespace

bool CudnnBatchNorm::applies(const Shape& x, double eps) {
  return x.size() >= 3 && x.size() <= 5 && x[0] <= kMaxCudnnBatch && eps >= CUDNN_BN_MIN_EPSILON &&
         element_count(x) < std::numeric_limits<int32_t>::max();
}

CudnnBatchNorm::~CudnnBatchNorm() {
  if (x_desc_ != nullptr) KB_CUDNN_WARN(cudnnDestroyTensorDescriptor(x_desc_));
  if (stats_desc_ != nullptr) KB_CUDNN_WARN(cudnnDestroyTensorDescriptor(stats_desc_));
  if (buffers_ != nullptr) KB_CUDA_WARN(cudaFree(buffers_));
  if (workspace_ != nullptr) KB_CUDA_WARN(cudaFree(workspace_));
  if (reserve_ != nullptr) KB_CUDA_WARN(cudaFree(reserve_));
}

Status CudnnBatchNorm::setup(const Shape& x, double eps) {
  if (x_desc_ != nullptr) return Status::failed_precondition("CudnnBatchNorm: setup() twice");
  if (!applies(x, eps)) {
    return Status::invalid_argument("CudnnBatchNorm: cuDNN does not take this shape or eps");
  }
  eps_ = eps;
  channels_ = x[1];
  // A 3-D input (N, C, L) is (N, C, L, 1) to cuDNN, as in ATen.
  std::vector<int> dims(x.begin(), x.end());
  if (dims.size() == 3) dims.push_back(1);
  std::vector<int> strides(dims.size());
  int stride = 1;
  for (size_t i = dims.size(); i-- > 0;) {
    strides[i] = stride;
    stride *= dims[i];
  }
  KB_CUDNN_TRY(cudnnCreateTensorDescriptor(&x_desc_));
  KB_CUDNN_TRY(cudnnSetTensorNdDescriptor(x_desc_, CUDNN_DATA_FLOAT, static_cast<int>(dims.size()),
                                          dims.data(), strides.data()));
  KB_CUDNN_TRY(cudnnCreateTensorDescriptor(&stats_desc_));
  KB_CUDNN_TRY(cudnnDeriveBNTensorDescriptor(stats_desc_, x_desc_, CUDNN_BATCHNORM_SPATIAL));

  KB_CUDA_TRY(cudaMalloc(&buffers_, 4 * static_cast<size_t>(channels_) * sizeof(float)));
  const std::vector<float> zeros(static_cast<size_t>(channels_), 0.0f);
  const std::vector<float> ones(static_cast<size_t>(channels_), 1.0f);
  const size_t bytes = zeros.size() * sizeof(float);
  KB_CUDA_TRY(cudaMemcpy(buffers_, zeros.data(), bytes, cudaMemcpyHostToDevice));
  KB_CUDA_TRY(cudaMemcpy(buffers_ + channels_, ones.data(), bytes, cudaMemcpyHostToDevice));

  Result<cudnnHandle_t> handle = cudnn_handle();
  if (!handle.is_ok()) return handle.status();
  KB_CUDNN_TRY(cudnnGetBatchNormalizationForwardTrainingExWorkspaceSize(
      handle.value(), CUDNN_BATCHNORM_SPATIAL, CUDNN_BATCHNORM_OPS_BN, x_desc_, nullptr, x_desc_,
      stats_desc_, nullptr, &workspace_bytes_));
  KB_CUDNN_TRY(cudnnGetBatchNormalizationTrainingExReserveSpaceSize(
      handle.value(), CUDNN_BATCHNORM_SPATIAL, CUDNN_BATCHNORM_OPS_BN, nullptr, x_desc_,
      &reserve_bytes_));
  if (workspace_bytes_ > 0) KB_CUDA_TRY(cudaMalloc(&workspace_, workspace_bytes_));
  if (reserve_bytes_ > 0) KB_CUDA_TRY(cudaMalloc(&reserve_, reserve_bytes_));
  return Status::ok();
}

Status CudnnBatchNorm::run(const float* x, const float* weight, const float* bias, float* y,
                           cudaStream_t stream) {
  Result<cudnnHandle_t> handle = cudnn_handle();
  if (!handle.is_ok()) return handle.status();
  KB_CUDNN_TRY(cudnnSetStream(handle.value(), stream));
  const float one = 1.0f, zero = 0.0f;
  float* running_mean = buffers_;
  float* running_var = buffers_ + channels_;
  float* saved_mean = buffers_ + 2 * channels_;
  float* saved_inv_std = buffers_ + 3 * channels_;
  KB_CUDNN_TRY(cudnnBatchNormalizationForwardTrainingEx(
      handle.value(), CUDNN_BATCHNORM_SPATIAL, CUDNN_BATCHNORM_OPS_BN, &one, &zero, x_desc_, x,
      nullptr, nullptr, x_desc_, y, stats_desc_, weight, bias, kMomentum, running_mean, running_var,
      eps_, saved_mean, saved_inv_std, nullptr, workspace_, workspace_bytes_, reserve_,
      reserve_bytes_));
  return Status::ok();
}

}  // namespace kb
