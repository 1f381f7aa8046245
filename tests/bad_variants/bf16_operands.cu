// Bad variant, L1_081 (issue 12, trick 7): a precision drop. x and the weight are rounded to
// bfloat16 (what bf16 tensor-core math reads) by a kernel of our own, and the reference's conv
// runs on the rounded copies with fp32 accumulation. Everything else is honest (HonestWork).
// Why the old harness missed it: it did not, where the tolerance is tight enough: 8 mantissa bits
// give relative errors of ~4e-3, far above this problem's rtol 1e-4. The same drop to TF32
// (11 bits) passes 1e-4 on weakly checked problems such as L1_003, whose U[0,1) operands make all
// ~K/4 ~ 256-sized outputs add without cancellation; that case is for the robustness trials
// (shifted inputs make the sums cancel: `fragile`) and the problem lint, and needs L1_003's custom
// slot, which cublas_only.cu holds in this pack.
// What catches it: the correctness trials, as before. Expected: mismatch.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <vector>

#include "common/cuda/cuda_check.h"
#include "kernels/implementation.h"
#include "tests/bad_variants/bad_common.h"

namespace kb::bad::bf16_operands {
namespace {

__global__ void round_to_bf16(const float* __restrict__ src, float* __restrict__ dst, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    dst[i] = __bfloat162float(__float2bfloat16_rn(src[i]));
  }
}

}  // namespace

class Bf16Operands final : public Implementation {
 public:
  Status setup(const ProblemInstance& p, cudaStream_t stream) override {
    x_ = input_index(p, "x");
    weight_ = param_index(p, "conv_transpose2d.weight");
    KB_TRY(x_rounded_.allocate(element_count(p.input_shapes()[x_])));
    KB_TRY(weight_rounded_.allocate(element_count(p.param_shapes()[weight_])));
    return work_.setup(p, stream);
  }

  Status run(const ImplArgs& args, cudaStream_t stream) override {
    std::vector<DeviceTensor> inputs(args.inputs.begin(), args.inputs.end());
    std::vector<DeviceTensor> params(args.params.begin(), args.params.end());
    KB_TRY(round_into(inputs[x_], x_rounded_, stream));
    KB_TRY(round_into(params[weight_], weight_rounded_, stream));
    return work_.run({inputs, params, args.output}, stream);
  }

 private:
  // Rounds `t` into `to` and points `t` at the rounded copy.
  static Status round_into(DeviceTensor& t, DeviceScratch& to, cudaStream_t stream) {
    round_to_bf16<<<blocks_for(t.numel()), kThreads, 0, stream>>>(t.data, to.data(), t.numel());
    KB_CUDA_TRY(cudaGetLastError());
    t.data = to.data();
    return Status::ok();
  }

  HonestWork work_;
  size_t x_ = 0, weight_ = 0;
  DeviceScratch x_rounded_, weight_rounded_;
};

}  // namespace kb::bad::bf16_operands

KB_REGISTER_IMPLEMENTATION(L1_081, custom, kb::bad::bf16_operands::Bf16Operands)
