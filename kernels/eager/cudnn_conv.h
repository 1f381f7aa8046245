// A convolution or transposed convolution through cuDNN, as PyTorch eager runs it in strict fp32:
// the legacy cuDNN API, CUDNN_FMA_MATH (no TF32), NCHW/NCDHW fp32 tensors, the algorithm from
// cuDNN's heuristic (cudnnGetConvolution*Algorithm_v7, PyTorch's choice when
// torch.backends.cudnn.benchmark is False) restricted to algorithms whose workspace fits.
// A transposed convolution is cudnnConvolutionBackwardData, as in PyTorch. 1-D convolutions run as
// 2-D with a height of 1. The bias, when the layer has one, is added by a separate kernel after the
// convolution (PyTorch adds it with a broadcast add as well).
//
// Ownership: owns its descriptors and workspace; not copyable.
// Thread safety: use from one thread at a time.
#pragma once

#include <cuda_runtime.h>
#include <cudnn.h>

#include <string>

#include "common/problem_spec.h"
#include "common/status.h"

namespace kb {

class CudnnConv {
 public:
  CudnnConv() = default;
  ~CudnnConv();
  CudnnConv(const CudnnConv&) = delete;
  CudnnConv& operator=(const CudnnConv&) = delete;

  // Plans the `conv` or `conv_transpose` graph node `node` of `problem`: descriptors from the
  // node's attributes and the shapes of its inputs and output, algorithm, workspace.
  Status setup(const ProblemInstance& problem, const std::string& node, cudaStream_t stream);

  // y = conv(x, w) (+ bias when not null), on `stream`.
  Status run(const float* x, const float* w, const float* bias, float* y, cudaStream_t stream);

  // The algorithm chosen, for logs ("CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM").
  std::string algorithm_name() const;

 private:
  bool transposed_ = false;
  int64_t out_channels_ = 0;
  int64_t out_inner_ = 0;  // elements per (n, c) plane of y
  int64_t out_numel_ = 0;
  cudnnTensorDescriptor_t x_desc_ = nullptr, y_desc_ = nullptr;
  cudnnFilterDescriptor_t w_desc_ = nullptr;
  cudnnConvolutionDescriptor_t conv_desc_ = nullptr;
  int algo_ = 0;  // cudnnConvolutionFwdAlgo_t or cudnnConvolutionBwdDataAlgo_t
  void* workspace_ = nullptr;
  size_t workspace_bytes_ = 0;
};

}  // namespace kb
