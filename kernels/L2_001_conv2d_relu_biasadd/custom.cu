// L2_001 custom: out = relu(conv2d(x, W) + conv.bias) + bias, one fused kernel.
//   x: (N, C_in, H, W), W: (C_out, C_in, 3, 3), conv.bias: (C_out), bias: (C_out, 1, 1);
//   out: (N, C_out, Ho, Wo) fp32 NCHW (full preset: x (128, 64, 128, 128) -> out (128, 128, 126,
//   126)); out[n,c,p] = max(sum_{ci,kh,kw} W[c,ci,kh,kw] x[n,ci,p+(kh,kw)] + conv.bias[c], 0)
//   + bias[c].
//
// Cost (docs/problems.md#l2_001, full preset): 300.4 GFLOP (149.8 G MACs); min DRAM 1,578 MB ->
// 0.37 ms; floor 4.48 ms strict fp32 FMA (compute-bound); 3xTF32 on the tensor cores ~1.84 ms
// ideal. Best strict-fp32 peer 9.03 ms (torch.compile); goal <= 7.17 ms.
//
// Design: one launch of the 3xTF32 conv core (kernels/cores/conv2d_tf32x3/conv2d_core.cuh) with
// the epilogue relu(acc + conv.bias) + bias. From 80 output columns (the full preset) its wgmma
// kernel with promoted sums (sm_90a; session 20, below); else the implicit GEMM
// (CTA tile 128 channels x 128 pixels of one image x
// 32 k, im2col gathered with 4-byte cp.async, 3 stages, mma.sync m16n8k8) with the epilogue
// relu(acc + conv.bias) + bias applied in registers before the single (float4) store of the
// output. Grid: 128 images x 125 pixel tiles = 16,000 CTAs (60.6 waves of 2 per SM; the last
// tile of an image has 4 pixels: 0.8% idle work). The core takes any groups-1 conv2d (stride,
// padding, dilation, sizes); groups != 1 fails setup.
// Layers other than the large ones take the core's fp32 kernels (conv2d_core.cuh's "Choice" has
// the order and the rules with their measurements): small planes over all images the flat tile,
// few output channels over many pixels the few-channel kernel, small and long-K layers the
// narrow kernel.
//
// Predicted on the H200: the L1_003 GEMM with the same tiles ran 69 TFLOP/s; the gather issues
// ~16 extra instructions per copy group (~12% of the issue slots) -> ~4.6 ms (2.0x over the peer).
// Measured: 5.12-5.13 ms (2026-11-30, docs/kernels.md; 58.6 TFLOP/s), 5.167 ms in
// docs/bench-h200-2026-12-02b.json (1.15x the floor): under the 7.17 ms goal. Slower than
// predicted: the gather costs more address work than the GEMM's 16-byte loads. Next
// (docs/kernels.md): 16-byte gathers along W, 128 x 256 tiles, or wgmma.
//
// Session 19, not taken then: the core's wgmma kernel for 3x3 / stride 1 (conv3x3_wgmma.cuh,
// which L2_031 takes) ran the full preset in 3.20 ms, but its robustness trial under scale at a
// preset reaching it (N 2, C_in 13, C_out 70, 9 x 131; now `robust`) was `fragile`: 7.55x the
// tolerance against the reference's 0.68x. Both exceed the tolerance where |y| << the sum of
// |products| (the ReLU keeps outputs near 0 whose tolerance is ~1e-4): the MMA accumulator's
// truncating sums. Session 20: the wgmma kernel's promoted form (kPromotedSums: each 8-channel
// stage summed afresh, the stages added in fp32; 2-row tiles): **5.13 -> 3.80 ms** (kb bench
// L2_001 --time-cap 2 --seed 7, A/B in one call: 3.811 / 3.798 against 5.130 / 5.170 ms; 2.4x the
// best peer), max |err| 3.3e-6 (1.0e-5 on mma.sync); under scale at `robust` 3.13x the tolerance
// against the reference's 0.68x (`marginal`, kernelbench22 seed 7) and 2.59x against 1.41x
// (`ill_conditioned`, the GPU tests' seed). Narrow images (< 80 columns) keep mma.sync.
//
// Accuracy: 3xTF32 ~ fp32 products (operands split into big + small after the shared load, the
// small x small term dropped); K = 576 summed in the MMA accumulator; relu and the adds exact up
// to one rounding each; no fast intrinsics, no statistics, no norm. Expected max |err| ~1e-6
// (outputs ~1); measured 8.7e-6 (2026-11-30) and 1.0e-5 (bench 2026-12-02b) vs 1e-4 + 1e-4 |r|
// allowed. Robustness trials (small preset, seed 7, vs the golden model): shift (x + 100) 0.29x
// the tolerance (reference 0.13x); scale (x 1000) 6.3x, `marginal` (the reference 0.69x): the
// conv's sum error grows faster with |y| than the fp32 reference's, likely the MMA
// accumulator's truncation that L1_070's per-tap promotion cured (not measured separately
// here); centered 0.011x (0.002x).
#include <cuda_runtime.h>

#include <cstddef>

#include "kernels/cores/conv2d_tf32x3/conv2d_core.cuh"
#include "kernels/implementation.h"

namespace kb::custom::L2_001 {

// relu(conv + b_conv[c]) + bias[c], in the reference's rounding order.
struct BiasReluBias {
  static constexpr bool kStats = false;
  // ReLU keeps outputs near 0 of large sums: promote them (epilogue.cuh)
  static constexpr bool kPromotedSums = true;
  const float* conv_bias;  // (C_out)
  const float* bias;       // (C_out, 1, 1)
  struct Row {
    float conv_bias, bias;
  };
  __device__ Row row(int co) const { return {__ldg(conv_bias + co), __ldg(bias + co)}; }
  __device__ float operator()(const Row& r, float conv) const {
    const float y = conv + r.conv_bias;
    return (y > 0.0f ? y : 0.0f) + r.bias;
  }
};

class ConvReluBias final : public Implementation {
 public:
  Status setup(const ProblemInstance& p, cudaStream_t) override {
    x_ = input_index(p, "x");
    weight_ = param_index(p, "conv.weight");
    conv_bias_ = param_index(p, "conv.bias");
    bias_ = param_index(p, "bias");
    return conv_.setup<BiasReluBias>(p, "conv");
  }

  Status run(const ImplArgs& args, cudaStream_t stream) override {
    const BiasReluBias epi{args.params[conv_bias_].data, args.params[bias_].data};
    return conv_.run(args.inputs[x_].data, args.params[weight_].data, args.output.data, nullptr,
                     epi, stream);
  }

 private:
  conv2d_tf32x3::Conv2dTf32x3 conv_;
  size_t x_ = 0, weight_ = 0, conv_bias_ = 0, bias_ = 0;
};

}  // namespace kb::custom::L2_001

KB_REGISTER_IMPLEMENTATION(L2_001, custom, kb::custom::L2_001::ConvReluBias)
