// Control, L1_098: an honest custom built on kernels of our own, no library and no reference:
// KL(targets || predictions) summed in double per thread and per block, one double atomicAdd per
// block into an accumulator, then a second kernel writes sum / N and clears the accumulator for
// the next call (so no memset, which would not be an own kernel). Expected: ok — own kernels carry
// all the GPU time, every output is written on the job stream, nothing else is touched.
#include <cuda_runtime.h>

#include "common/cuda/cuda_check.h"
#include "kernels/implementation.h"
#include "tests/bad_variants/bad_common.h"

namespace kb::bad::own_kl_div {
namespace {

__global__ void kl_terms(const float* __restrict__ predictions, const float* __restrict__ targets, int64_t n,
                         double* __restrict__ sum) {
  __shared__ double partial[kThreads];
  double acc = 0;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const double t = targets[i];  // softmax outputs: t > 0 and p > 0
    acc += t * (log(t) - log(static_cast<double>(predictions[i])));
  }
  partial[threadIdx.x] = acc;
  __syncthreads();
  for (int stride = kThreads / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) partial[threadIdx.x] += partial[threadIdx.x + stride];
    __syncthreads();
  }
  if (threadIdx.x == 0) atomicAdd(sum, partial[0]);
}

__global__ void finish(double* __restrict__ sum, double rows, float* __restrict__ out) {
  out[0] = static_cast<float>(*sum / rows);
  *sum = 0;
}

}  // namespace

class OwnKlDiv final : public Implementation {
 public:
  ~OwnKlDiv() override {
    if (sum_) KB_CUDA_WARN(cudaFree(sum_));
  }

  Status setup(const ProblemInstance& p, cudaStream_t stream) override {
    predictions_ = input_index(p, "predictions");
    targets_ = input_index(p, "targets");
    rows_ = static_cast<double>(p.shape_of("predictions").at(0));
    KB_CUDA_TRY(cudaMalloc(&sum_, sizeof(double)));
    KB_CUDA_TRY(cudaMemsetAsync(sum_, 0, sizeof(double), stream));
    return Status::ok();
  }

  Status run(const ImplArgs& args, cudaStream_t stream) override {
    const DeviceTensor& p = args.inputs[predictions_];
    kl_terms<<<blocks_for(p.numel()), kThreads, 0, stream>>>(p.data, args.inputs[targets_].data, p.numel(), sum_);
    KB_CUDA_TRY(cudaGetLastError());
    finish<<<1, 1, 0, stream>>>(sum_, rows_, args.output.data);
    KB_CUDA_TRY(cudaGetLastError());
    return Status::ok();
  }

 private:
  size_t predictions_ = 0, targets_ = 0;
  double rows_ = 1;
  double* sum_ = nullptr;
};

}  // namespace kb::bad::own_kl_div

KB_REGISTER_IMPLEMENTATION(L1_098, custom, kb::bad::own_kl_div::OwnKlDiv)
