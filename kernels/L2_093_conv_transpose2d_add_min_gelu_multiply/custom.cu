// L2_093 custom: out = gelu_erf(min(conv_transpose2d(x) + b + add, cap)) * factor, one kernel.
//   x: (N, C_in, H, W); w: (C_in, C_out, 4, 4); b: (C_out); out: (N, C_out, 2H + 2, 2W + 2) fp32,
//   NCHW. ConvTranspose2d(k 4, stride 2, padding 0); add 0.5, cap 0.0, factor 2.0 from the spec.
//   Full preset: x (128, 64, 64, 64) -> out (128, 128, 130, 130).
//
// Cost (docs/problems.md#l2_093, full preset): 68.7 G MAC = 139.9 GFLOP; min DRAM 1,242 MB (out
// 1,108) -> 0.29 ms. fp32 FMA floor 2.09 ms; 3xTF32 floor ~0.86 ms. Strict-fp32 reference
// ~15.8 ms; best strict-fp32 peer 10.15 ms (autotuned cuDNN; compile 13.93,
// docs/baselines.md); goal <= 3.34 ms (1.6 x the floor).
//
// Design (kernels/cores/conv_transpose2d_tf32x3/parity_gemm.cuh): weights re-packed per call,
// then one GEMM launch. Per axis o = 2 q + r; both phases take taps at inputs q and q - 1 (r,
// r + 2), so the conv is one implicit GEMM per class (r_h, r_w): M = N x 65 x 65 q positions,
// K = C_in x 4 = 256, N = C_out = 128, 3xTF32 on mma.sync m16n8k8, borders by zero-filled
// copies. The epilogue adds b and the scalar chain in registers and writes each output once
// (stride-2 runs; the 4 class CTAs of a tile run side by side, so L2 merges the halves of each
// sector). 16,900 CTAs of 128 x 128 (64 waves of 264), no wasted q.
// Fallback: classes and taps come from the node's stride/padding/dilation/output_padding/kernel;
// layers the fast path does not take (groups != 1, > 2 taps per axis and phase, stride > 4,
// huge sizes) run the generic gather of kernels/cores/conv_transpose_gather into a workspace,
// then the same epilogue (fallback_epilogue_kernel).
//
// Predicted (H200): 208M MMAs; L1_003's kernel of the same shape ran 69 TFLOP/s effective ->
// ~2.05 ms of main loop + ~0.3 ms of fill, epilogue and stores not hidden by the co-resident
// CTA: ~2.3-2.6 ms. Measured: 2.85 ms (v1, 2026-11-30; 2.823 in the table of docs/kernels.md),
// 2.840 ms in docs/bench-h200-2026-12-02b.json (49 TFLOP/s, 1.36x the floor): under the
// 3.34 ms goal.
//
// Accuracy: the conv in 3xTF32 ~ fp32, its accumulation promoted per k8 step (GeluEpilogue::
// kPromoted, parity_gemm.cuh; until session 22 K = 256 stayed in the MMA accumulator, which
// truncates each step); the epilogue is the reference's op order ((y + b) + 0.5, a NaN-propagating
// min, gelu by A&S's erf, kernels/cores/gelu.cuh, <= 5e-7 from gelu for v <= 0, * 2; session
// 15: 2.850 -> 2.756 ms, max |err| 1.68e-6 -> 1.69e-6). Only the ~164 outputs with conv + 0.5 < 0
// are non-zero (the check's weakest point, docs/problems.md#l2_093); they pass through gelu with
// slope <= 1.2 after the x2. No statistics. Measured max |err| 1.7e-6 at the full preset (bench
// 2026-12-02b) vs 1e-4 + 1e-4 |r| allowed. Robustness trials (small preset, seed 7, vs the golden
// model): shift (x + 100) 0.063x the tolerance (reference 0.010x), scale (x 1000) 0.60x (0.095x),
// centered 0.004x (0.0002x): pass; other seeds reached 1.2-3.9x under scale, `fragile` at seed 5
// (1.67x, the reference 0.12x). Promoted (session 22): 0.06-0.68x under scale over seeds 5-13,
// at 3.06 ms instead of 2.76 (16 bytes of spills at the 2-CTA register cap; other forms of the
// promotion measured 3.07-3.56 ms, parity_gemm.cuh); kernelbench22 3.031 ms, goal 3.34.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "common/cuda/cuda_check.h"
#include "kernels/cores/conv_transpose2d_tf32x3/parity_gemm.cuh"
#include "kernels/cores/conv_transpose_gather/gather.cuh"
#include "kernels/cores/gelu.cuh"
#include "kernels/implementation.h"

namespace kb::custom::L2_093 {

namespace pg = parity_gemm;

// The ops after the conv, in the reference's order: ((y + b) + add), min (NaN-propagating as
// torch.min), gelu (erf form, as eager), * factor.
struct GeluEpilogue {
  static constexpr bool kPromoted = true;  // parity_gemm.cuh: accurate under scaled inputs
  const float* conv_bias;                  // (C_out)
  float offset, cap, factor;

  __device__ __forceinline__ float apply(int co, float conv) const {
    const float a = (conv + __ldg(conv_bias + co)) + offset;
    const float m = cap < a ? cap : a;
    return gelu_erf_fast(m) * factor;
  }
  __device__ __forceinline__ void operator()(const pg::GemmParams& p, const pg::Tile& t,
                                             float* smem, const pg::OutputRows& rows) const {
    pg::store_tile(p, t, smem, rows, [this](int co, float v, int) { return apply(co, v); });
  }
};

// Fallback: out[i] = epilogue(y[i]) for the generic gather's y (no bias).
__global__ void __launch_bounds__(256)
    fallback_epilogue_kernel(const float* __restrict__ y, float* __restrict__ out, GeluEpilogue e,
                             int64_t total, int64_t plane, int64_t c_out) {
  for (int64_t i = int64_t{blockIdx.x} * 256 + threadIdx.x; i < total;
       i += int64_t{gridDim.x} * 256)
    out[i] = e.apply(static_cast<int>(i / plane % c_out), y[i]);
}

class ConvTransposeAddMinGeluScale final : public Implementation {
 public:
  ~ConvTransposeAddMinGeluScale() override { KB_CUDA_WARN(cudaFree(workspace_)); }

  Status setup(const ProblemInstance& p, cudaStream_t) override {
    KB_TRY(conv_.bind(p));
    b_ = param_index(p, "conv_transpose.bias");
    epilogue_ = {nullptr, static_cast<float>(p.number("add", "value")),
                 static_cast<float>(p.number("min", "value")),
                 static_cast<float>(p.number("multiply", "value"))};
    Result<pg::ParityPlan> plan = pg::plan_parity_gemm(conv_.geometry, INT64_MAX);
    fast_ = plan.is_ok();
    if (fast_) {
      plan_ = plan.value();
      KB_TRY(pg::prepare_parity_gemm<GeluEpilogue>());
      KB_CUDA_TRY(cudaMalloc(&workspace_, pg::packed_weight_floats(plan_) * sizeof(float)));
    } else {  // y of the generic gather
      KB_CUDA_TRY(cudaMalloc(&workspace_, conv_.geometry.output_numel() * sizeof(float)));
    }
    return Status::ok();
  }

  Status run(const ImplArgs& args, cudaStream_t stream) override {
    const float* x = conv_.input(args);
    const float* w = conv_.weight(args);
    GeluEpilogue e = epilogue_;
    e.conv_bias = args.params[b_].data;
    const int64_t total = conv_.geometry.output_numel();
    if (total == 0) return Status::ok();
    if (fast_) {
      const pg::GemmParams params{plan_, x, nullptr, args.output.data};
      return pg::launch_parity_gemm(params, w, workspace_, e, stream);
    }
    KB_TRY(gather::launch_generic(x, w, workspace_, conv_.geometry, stream));
    const int64_t plane = conv_.geometry.out[0] * conv_.geometry.out[1] * conv_.geometry.out[2];
    const int64_t blocks = std::min<int64_t>((total + 255) / 256, int64_t{1} << 20);
    fallback_epilogue_kernel<<<static_cast<unsigned>(blocks), 256, 0, stream>>>(
        workspace_, args.output.data, e, total, plane, conv_.geometry.out_channels);
    KB_CUDA_TRY(cudaGetLastError());
    return Status::ok();
  }

 private:
  gather::ConvTransposeNode conv_{"conv_transpose", "x", "conv_transpose.weight"};
  pg::ParityPlan plan_;
  GeluEpilogue epilogue_{};
  size_t b_ = 0;
  bool fast_ = false;
  float* workspace_ = nullptr;  // owned: packed weights (fast) or y (fallback)
};

}  // namespace kb::custom::L2_093

KB_REGISTER_IMPLEMENTATION(L2_093, custom, kb::custom::L2_093::ConvTransposeAddMinGeluScale)
