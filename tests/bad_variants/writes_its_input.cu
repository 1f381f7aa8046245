// Bad variant (a), L2_031: computes the right output, then halves its input x in place (as a
// kernel that reuses its input as scratch space would). Expected verdict: input_mutated.
#include <cuda_runtime.h>

#include <cstddef>
#include <memory>

#include "common/cuda/cuda_check.h"
#include "kernels/implementation.h"
#include "tests/bad_variants/bad_common.h"

namespace kb::bad::writes_its_input {

__global__ void halve_in_place(float* x, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    x[i] *= 0.5f;
  }
}

class HalvesItsInput final : public Implementation {
 public:
  Status setup(const ProblemInstance& p, cudaStream_t stream) override {
    x_ = input_index(p, "x");
    return make_reference(p, stream, reference_);
  }

  Status run(const ImplArgs& args, cudaStream_t stream) override {
    KB_TRY(reference_->run(args, stream));
    // x: (N, C_in, H, W), read by the reference above; written here.
    const DeviceTensor& x = args.inputs[x_];
    halve_in_place<<<blocks_for(x.numel()), kThreads, 0, stream>>>(x.data, x.numel());
    KB_CUDA_TRY(cudaGetLastError());
    return Status::ok();
  }

 private:
  std::unique_ptr<Implementation> reference_;
  size_t x_ = 0;
};

}  // namespace kb::bad::writes_its_input

KB_REGISTER_IMPLEMENTATION(L2_031, custom, kb::bad::writes_its_input::HalvesItsInput)
