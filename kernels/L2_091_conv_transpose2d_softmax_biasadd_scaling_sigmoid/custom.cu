// L2_091 custom: out = sigmoid((softmax_c(conv_transpose2d(x) + b) + bias[c]) * scale), one kernel.
//   x: (N, C_in, H, W); w: (C_in, C_out, 4, 4); b: (C_out); bias: (C_out, 1, 1);
//   out: (N, C_out, 2H + 1, 2W + 1) fp32, NCHW. ConvTranspose2d(k 4, stride 2, padding 1,
//   output_padding 1); softmax over the channels (dim 1); scale 2.0 from the spec.
//
// Cost (PROBLEMS.md, full preset 128 x 64 x 64 x 64 -> 128 x 128 x 129 x 129): 68.2 G MAC =
// 139.6 GFLOP; min DRAM 1,225 MB (out 1,091) -> 0.29 ms. fp32 FMA floor 2.08 ms; 3xTF32 floor
// ~0.86 ms. Strict-fp32 reference ~17.1 ms, best peer 14.48 ms (goal <= 3.33 ms).
//
// Design (../conv_transpose2d_tf32x3/parity_gemm.cuh): per axis o + 1 = 2 q + r; both phases take
// taps at inputs q and q - 1, so the conv is one implicit GEMM per class (r_h, r_w): M = N x 65 x
// 65 q positions (the union over phases; 1.6% of them fall outside the 129 x 129 output and are
// not stored), K = C_in x 4 = 256, N = C_out = 128, 3xTF32 on mma.sync m16n8k8. A CTA owns all
// channels of its 128 pixels, so the softmax runs in the epilogue on the shared C tile: two
// threads per pixel (64 channels each) find the max, store exp(y - max) in place and sum it;
// then a warp per channel row writes sigmoid((e / sum + bias) * scale) (stride-2 runs; the 4
// class CTAs of a tile run side by side, so L2 merges the halves of each sector).
// Classes and taps come from the node's attributes; C_out > 128 and layers the fast path does
// not take (groups != 1, > 2 taps per axis and phase, stride > 4, huge sizes) run the generic
// gather of ../conv_transpose_gather into a workspace, then a per-pixel softmax kernel.
//
// Predicted (H200): 211M MMAs (L1_003's kernel shape: 69 TFLOP/s effective) -> ~2.1 ms of main
// loop + ~0.4 ms of fill, softmax (2 expf + 1 division per output) and stores not hidden by the
// co-resident CTA: ~2.5-2.9 ms. Accuracy: ~fp32 level; the output barely depends on the conv.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "kernels/conv_transpose2d_tf32x3/parity_gemm.cuh"
#include "kernels/conv_transpose_gather/gather.cuh"
#include "kernels/device/cuda_check.h"
#include "kernels/implementation.h"

namespace kb::custom::L2_091 {

namespace pg = parity_gemm;

struct SoftmaxEpilogue {
  const float* conv_bias;  // (C_out)
  const float* bias;       // (C_out, 1, 1)
  float scale;

  // e = exp(y - max) of channel co, sum over the pixel's channels.
  __device__ __forceinline__ float apply(int co, float e, float sum) const {
    const float p = e / sum;
    return 1.0f / (1.0f + expf(-((p + __ldg(bias + co)) * scale)));
  }

  // The C tile holds all channels (C_out <= 128, n0 = 0). Scratch after it: [0, 256) max and
  // [256, 512) sum partials per (half, pixel), [512, 640) the pixel's sum.
  __device__ __forceinline__ void operator()(const pg::GemmParams& p, const pg::Tile& t,
                                             float* smem, const pg::OutputRows& rows) const {
    static_assert(640 <= pg::kEpilogueFloats, "softmax scratch fits after the C tile");
    float* c_tile = smem;
    float* stats = smem + pg::kTile * pg::kTile;
    const int m = threadIdx.x % pg::kTile, half = threadIdx.x / pg::kTile;
    const int lo = half * (pg::kTile / 2), hi = min(p.plan.c_out, lo + pg::kTile / 2);
    float max = -INFINITY;
    for (int co = lo; co < hi; ++co) {
      float& v = c_tile[pg::c_smem_index(co, m)];
      v += __ldg(conv_bias + co);
      max = fmaxf(max, v);
    }
    stats[half * pg::kTile + m] = max;
    __syncthreads();
    max = fmaxf(stats[m], stats[pg::kTile + m]);
    float sum = 0.0f;
    for (int co = lo; co < hi; ++co) {
      float& v = c_tile[pg::c_smem_index(co, m)];
      v = expf(v - max);
      sum += v;
    }
    stats[2 * pg::kTile + half * pg::kTile + m] = sum;
    __syncthreads();
    if (half == 0) stats[4 * pg::kTile + m] = stats[2 * pg::kTile + m] + stats[3 * pg::kTile + m];
    __syncthreads();
    const float* sums = stats + 4 * pg::kTile;
    pg::store_tile(p, t, c_tile, rows,
                   [this, sums](int co, float e, int ml) { return apply(co, e, sums[ml]); });
  }
};

// Fallback: one thread per (n, pixel) over the generic gather's y (no bias).
__global__ void __launch_bounds__(256)
    fallback_softmax_kernel(const float* __restrict__ y, float* __restrict__ out,
                            SoftmaxEpilogue e, int64_t pixels, int64_t plane, int64_t c_out) {
  for (int64_t i = int64_t{blockIdx.x} * 256 + threadIdx.x; i < pixels;
       i += int64_t{gridDim.x} * 256) {
    const int64_t base = i / plane * c_out * plane + i % plane;
    float max = -INFINITY, sum = 0.0f;
    for (int64_t c = 0; c < c_out; ++c) max = fmaxf(max, y[base + c * plane] + e.conv_bias[c]);
    for (int64_t c = 0; c < c_out; ++c) sum += expf(y[base + c * plane] + e.conv_bias[c] - max);
    for (int64_t c = 0; c < c_out; ++c) {
      const float v = expf(y[base + c * plane] + e.conv_bias[c] - max);
      out[base + c * plane] = e.apply(static_cast<int>(c), v, sum);
    }
  }
}

class Custom final : public Implementation {
 public:
  ~Custom() override { KB_CUDA_WARN(cudaFree(workspace_)); }

  Status setup(const ProblemInstance& p, cudaStream_t) override {
    Result<gather::ConvTransposeGeometry> g = gather::read_conv_transpose(p, "conv_transpose");
    if (!g.is_ok()) return g.status();
    geometry_ = g.value();
    const int64_t dim = p.int_attr("softmax", "dim");
    if (dim != 1 && dim != 1 - static_cast<int64_t>(p.shape_of("y").size()))
      return Status::failed_precondition("L2_091 custom: softmax must run over the channels");
    x_ = input_index(p, "x");
    w_ = param_index(p, "conv_transpose.weight");
    conv_bias_ = param_index(p, "conv_transpose.bias");
    bias_ = param_index(p, "bias");
    epilogue_ = {nullptr, nullptr, static_cast<float>(p.number("scale", "value"))};
    Result<pg::ParityPlan> plan = pg::plan_parity_gemm(geometry_, /*max_c_out=*/pg::kTile);
    fast_ = plan.is_ok();
    if (fast_) {
      plan_ = plan.value();
      KB_TRY(pg::prepare_parity_gemm<SoftmaxEpilogue>());
      KB_CUDA_TRY(cudaMalloc(&workspace_, pg::packed_weight_floats(plan_) * sizeof(float)));
    } else {  // y of the generic gather
      KB_CUDA_TRY(cudaMalloc(&workspace_, geometry_.output_numel() * sizeof(float)));
    }
    return Status::ok();
  }

  Status run(const ImplArgs& args, cudaStream_t stream) override {
    const float* x = args.inputs[x_].data;
    const float* w = args.params[w_].data;
    SoftmaxEpilogue e = epilogue_;
    e.conv_bias = args.params[conv_bias_].data;
    e.bias = args.params[bias_].data;
    if (geometry_.output_numel() == 0) return Status::ok();
    if (fast_) {
      const pg::GemmParams params{plan_, x, nullptr, args.output.data};
      return pg::launch_parity_gemm(params, w, workspace_, e, stream);
    }
    KB_TRY(gather::launch_generic(x, w, workspace_, geometry_, stream));
    const int64_t plane = geometry_.out[0] * geometry_.out[1] * geometry_.out[2];
    const int64_t pixels = geometry_.batch * plane;
    const int64_t blocks = std::min<int64_t>((pixels + 255) / 256, int64_t{1} << 20);
    fallback_softmax_kernel<<<static_cast<unsigned>(blocks), 256, 0, stream>>>(
        workspace_, args.output.data, e, pixels, plane, geometry_.out_channels);
    KB_CUDA_TRY(cudaGetLastError());
    return Status::ok();
  }

 private:
  gather::ConvTransposeGeometry geometry_;
  pg::ParityPlan plan_;
  SoftmaxEpilogue epilogue_{};
  size_t x_ = 0, w_ = 0, conv_bias_ = 0, bias_ = 0;
  bool fast_ = false;
  float* workspace_ = nullptr;  // owned: packed weights (fast) or y (fallback)
};

}  // namespace kb::custom::L2_091

KB_REGISTER_IMPLEMENTATION(L2_091, custom, kb::custom::L2_091::Custom)
