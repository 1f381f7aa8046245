// L2_031 custom: out = (min(conv2d(x, W) + conv.bias, c) + bias) * s, one fused kernel
// (c = 0.5 and s = 2.0 in the spec; both read from the graph).
//   x: (N, C_in, H, W), W: (C_out, C_in, 3, 3), conv.bias: (C_out), bias: (C_out, 1, 1);
//   out: (N, C_out, Ho, Wo) fp32 NCHW (full preset: x (128, 64, 128, 128) -> out (128, 128, 126,
//   126)); min is torch.min(y, tensor(c)): clamp(max = c), NaN-propagating.
//
// Cost (docs/problems.md#l2_031, full preset): 300.7 GFLOP (149.8 G MACs); min DRAM 1,578 MB ->
// 0.37 ms; floor 4.49 ms strict fp32 FMA (compute-bound); 3xTF32 on the tensor cores ~1.84 ms
// ideal. Best strict-fp32 peer 8.96 ms (torch.compile); goal <= 7.18 ms.
//
// Design: one launch of the implicit-GEMM 3xTF32 conv core
// (kernels/cores/conv2d_tf32x3/tensor_tile.cuh: CTA tile 128 channels x 128 pixels of one image x
// 32 k, im2col gathered with 4-byte cp.async, 3 stages, mma.sync m16n8k8) with the epilogue
// applied in registers before the single (float4) store. The x2 is not folded into the weights:
// in the epilogue it costs one multiply per output and gives the same bits (the reference's op
// order: conv + b, min, + bias, * s). The core takes any groups-1 conv2d (stride, padding,
// dilation, sizes); groups != 1 fails setup.
// Layers other than the large ones take the core's fp32 kernels (conv2d_core.cuh's "Choice" has
// the order and the rules with their measurements): small planes over all images the flat tile,
// few output channels over many pixels the few-channel kernel, small and long-K layers the
// narrow kernel.
//
// 3x3 / stride 1 images of 80 output columns or more (the full preset) take the core's wgmma
// kernel instead (kernels/cores/conv3x3_wgmma/conv3x3_wgmma.cuh, sm_90a: 64 channels x 4 rows x
// 128 columns per tile, m64n128k8 TF32 wgmmas on the split weights and input patch in shared
// memory) with the same epilogue: **3.19 ms** (session 19, `kb bench L2_031 --time-cap 2 --seed
// 7`, device call 11; 94 TFLOP/s, 0.71x the fp32 floor, 2.8x the peer), max |err| 2.1e-5; the
// sweep (seed 2026) met, worst 1.10x. Robustness at the `robust` preset (wgmma, K = 117): shift
// 0.93x the tolerance (reference 0.36x), scale 9.85x, `ill_conditioned` (reference 1.9x),
// centered 0.019x.
//
// Predicted on the H200 (mma.sync): as L2_001, ~4.6 ms (1.9x over the peer). Measured: 5.13 ms
// (2026-11-30, docs/kernels.md; 58.6 TFLOP/s), 5.157 ms in docs/bench-h200-2026-12-02b.json
// (1.15x the floor): under the 7.18 ms goal. Slower than predicted for L2_001's reason (the
// gather's address work).
//
// Accuracy: 3xTF32 ~ fp32 products; K = 576 summed in the MMA accumulator; min, the adds and the
// exact x2 in the reference's order; no fast intrinsics, no statistics, no norm. Expected max
// |err| ~2e-6 (outputs ~1); measured 1.9e-5 (2026-11-30) and 2.1e-5 (bench 2026-12-02b) vs
// 1e-4 + 1e-4 |r| allowed. Robustness trials (small preset, seed 7, vs the golden model): shift
// (x + 100) 0.81x the tolerance (reference 0.37x); scale (x 1000) 8.1x, `ill_conditioned` (the
// reference is outside too, 2.2x): the custom's sum error grows faster with |y| than the fp32
// reference's, likely the MMA accumulator's truncation that L1_070's per-tap promotion cured
// (not measured separately here); centered 0.026x (0.004x).
#include <cuda_runtime.h>

#include <cstddef>

#include "kernels/cores/conv2d_tf32x3/conv2d_core.cuh"
#include "kernels/implementation.h"

namespace kb::custom::L2_031 {

// (min(conv + b_conv[c], cap) + bias[c]) * scale; the min propagates NaN like torch.min.
struct MinAddScale {
  static constexpr bool kStats = false;
  static constexpr bool kPromotedSums = false;
  const float* conv_bias;  // (C_out)
  const float* bias;       // (C_out, 1, 1)
  float cap, scale;
  struct Row {
    float conv_bias, bias;
  };
  __device__ Row row(int co) const { return {__ldg(conv_bias + co), __ldg(bias + co)}; }
  __device__ float operator()(const Row& r, float conv) const {
    const float y = conv + r.conv_bias;
    return ((y > cap ? cap : y) + r.bias) * scale;
  }
};

class ConvMinAddScale final : public Implementation {
 public:
  Status setup(const ProblemInstance& p, cudaStream_t) override {
    x_ = input_index(p, "x");
    weight_ = param_index(p, "conv.weight");
    conv_bias_ = param_index(p, "conv.bias");
    bias_ = param_index(p, "bias");
    cap_ = static_cast<float>(p.number("min", "value"));
    scale_ = static_cast<float>(p.number("scale", "value"));
    return conv_.setup<MinAddScale>(p, "conv");
  }

  Status run(const ImplArgs& args, cudaStream_t stream) override {
    const MinAddScale epi{args.params[conv_bias_].data, args.params[bias_].data, cap_, scale_};
    return conv_.run(args.inputs[x_].data, args.params[weight_].data, args.output.data, nullptr,
                     epi, stream);
  }

 private:
  conv2d_tf32x3::Conv2dTf32x3 conv_;
  size_t x_ = 0, weight_ = 0, conv_bias_ = 0, bias_ = 0;
  float cap_ = 0, scale_ = 1;
};

}  // namespace kb::custom::L2_031

KB_REGISTER_IMPLEMENTATION(L2_031, custom, kb::custom::L2_031::ConvMinAddScale)
