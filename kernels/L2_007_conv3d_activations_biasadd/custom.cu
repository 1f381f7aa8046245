// L2_007 custom: out = sigmoid(gelu_erf(leaky_relu(relu(Conv3d(8, 32, 3)(x) + conv.bias))))
//   + bias[c], one fused kernel (stride 1, no padding, leaky slope 0.01).
//   x: (N, C_in, D, H, W), w: (C_out, C_in, 3, 3, 3), conv.bias: (C_out), bias: (C_out, 1, 1, 1);
//   out: (N, C_out, D-2, H-2, W-2) fp32 NCDHW (full preset: x (64, 8, 32, 64, 64) -> out
//   (64, 32, 30, 62, 62)).
//   Math of the epilogue: r = relu(z) >= 0, so leaky_relu(r) = r for any slope; where r = 0 the
//   chain is sigmoid(gelu(0)) + bias = 0.5 + bias exactly (no erff/expf there, ~half the
//   outputs). Elsewhere gelu(r) = r/2 (1 + erf(r / sqrt 2)) and sigmoid(g) = 1 / (1 + exp(-g)).
//
// Cost (docs/problems.md#l2_007, full preset): 51.0 G MAC = 105 GFLOP -> t_fp32 1.57 ms (plain TF32
// is borderline: not used; 3xTF32 is ~fp32 per product); 1,213 MB -> t_mem 282 us. Floor 1.57 ms,
// FMA-bound. Reference (cuDNN + 5 eager kernels) 7.38-7.48 ms over the runs; best strict-fp32
// peer 6.48 ms (torch.compile, docs/baselines.md); goal <= 2.51 ms (1.6 x the floor).
//
// Design: one launch of kernels/cores/conv3d_direct/direct.cuh's Conv3d (3x3x3 taps at compile
// time) with the whole chain fused into its store:
//  - 16 < C_out <= 32 (the full preset): the 3xTF32 implicit-GEMM tile (tf32x3_tile.cuh) with a
//    32-channel block: a persistent block owns 4 output rows x 64 columns x 32 channels per tile;
//    K = 216 runs as two channel chunks of 4 (K 108 padded to 112 each), so that the patch of
//    one chunk (12 planes x 6 rows x 67 columns, split into TF32 big / small), the next stage's
//    raw patch and all weights take 98 KB and two blocks share an SM (155 KB whole: one).
//    107 registers, no spills.
//  - C_out <= 16: the FMA tile: a block stages 8 channels x 3 planes x 10 rows x 66 columns of x
//    and its channels' weights; each warp owns 8 channels x 4 rows x 64 columns, a lane 64
//    accumulators, 576 FFMA per 54 shared loads per (c, kd).
// Narrow output rows (W' < 32) and small layers of 4 or more channels take the core's
// channel-group kernel where its threads fill the machine (a thread per output position and 8
// channels; direct.cuh's conv3d_group_is_faster has the rule and its measurements). Other small
// layers (C_out 1, or <= 32 M multiply-adds) take the core's narrow kernel: one thread per
// output, the taps clamped once (direct.cuh; session 9 sweep: L1_054 0.37x -> 1.3x, L1_060 0.62x
// -> 1.75x, L2_007 0.31x -> 1.09x the reference at their worst shapes, docs/kernels.md).
// Fallback: other strides, dilations, groups or kernel sizes take the core's generic
// one-thread-per-output kernel with the same epilogue.
//
// Ladder (H200, full preset): v1 the FMA tile, predicted ~2.0 ms, measured 4.27-4.28 ms
// (docs/bench-h200-2026-12-02b.json: 25 TFLOP/s of the 67, 2.7x the floor; ~50% issue at 2
// blocks per SM, the erf/exp epilogue on half the elements). v2 (session 5) the 3xTF32 tile with
// a 64-channel block: 5.12 ms (half the warps idle at C_out 32, 155 KB: one block per SM). v3
// (session 13) the 32-channel block and channel chunks: predicted 2.2-2.6 ms, measured 3.03 ms
// (kb bench L2_007 --time-cap 2 --seed 7; 2.39x the reference; ncu: 56% issue, 15 warps per
// SM, latency-bound), 1.2x from the 2.51 ms goal. Rejected: loading the next k8 step's offsets
// and B one step ahead (3.12 ms); a warp per row with all 32 channels in 4-warp blocks (3.14 ms
// at three blocks per SM, 3.69 at two). v4 (session 14): __expf and __fdividef in the epilogue
// (accuracy below): 3.024 -> 2.890-2.900 ms, 1.15x from the goal. v5 (session 15): gelu by
// Abramowitz & Stegun 7.1.28 (kernels/cores/gelu.cuh) instead of erff, and no branch at r = 0
// (ncu: the epilogue was 29% of the instructions, ~50 per output, erff ~30 of them in two
// selected polynomial ranges; half the outputs are r = 0, so warps ran both sides of the
// branch): 2.890 -> 2.566-2.590 ms (kb bench L2_007 --time-cap 2 --seed 7, three calls), the same
// 1.07e-6 max |err|, 1.02-1.03x from the goal. The sign-general gelu costs 2.3% here (A/B in one
// call: 2.638-2.653 against 2.577-2.590 ms), so relu's output takes the r >= 0 form. Session 17,
// rejected (docs/kernels.md): the tile at 3 blocks per SM (2.722 against 2.567 ms), the patch
// split's stores rotated against bank conflicts (2.78: more instructions in an issue-bound phase)
// and K chunks of whole k8 steps (27 MMA steps instead of 28, but 13 patch planes: 0.7% slower).
// v6 (session 21): sigmoid(gelu(r)) as one function of r >= 0, a table of cubics (segments of
// 1/8 on [0, 16], kernels/cores/cubic_table) instead of A&S's erf, __expf and two reciprocals:
// ~14 instructions per output and no MUFU against ~22 and three; predicted ~5% (the epilogue
// ~15% of the instructions) -> ncu 1,320 M -> 1,214 M warp instructions (MUFU/XU 31.0 M -> 8.2
// M), 2.60 -> 2.51 ms under ncu; `kb bench L2_007 --time-cap 2 --seed 7` alternating with the
// v5 pack in one call: 2.507 / 2.485 against 2.573 / 2.574 ms (goal 2.51 met).
//
// Accuracy: 3xTF32 conv (the tile's header: ~fp32 per product, the MMA's truncating
// accumulation over 28 k8 steps costs a few ulp; the FMA tile: strict fp32), the conv bias added
// after the sum as the reference does, then r = relu(.) clamped to 16 and sigmoid(gelu(r)) from
// the cubic table: <= 1.5e-7 from the function in double on [0, 16] in the device's fp32 steps
// (tests/unit/kernels/cubic_table_test.cpp), exact 1/2 at r = 0 (relu's zeros, about half the
// outputs), and past 16 the clamp's 1 - f(16) = e^-16 < 1.2e-7. The chain damps the conv's error:
// sigmoid' <= 1/4 and the output lies in bias + [0.5, 1). Measured max |err| 1.07e-6 at the full
// preset (v5 and v6 alike, call 1 of session 21) vs 1e-4 + 1e-4 |r| allowed; the GPU tests' presets
// 1.2e-7 to 7.2e-7. Robustness trials (small preset, seed 7, vs the golden model; session 21,
// the table): shift (x + 100) 1.2e-7 (reference 1.3e-7), scale (x 1000) 7.7e-6 (1.8e-5),
// centered 1.9e-7 (1.7e-7): all <= 0.044x the tolerance. No statistics.
#include <cuda_runtime.h>

#include <cmath>
#include <cstddef>
#include <vector>

#include "kernels/cores/conv3d_direct/direct.cuh"
#include "kernels/cores/cubic_table/fit.h"
#include "kernels/cores/cubic_table/table.cuh"
#include "kernels/implementation.h"

namespace kb::custom::L2_007 {

// sigmoid(gelu(r)) for r >= 0 on [0, 16] in segments of 1/8 (cubic_table: 129 x 16 bytes; fit
// error 1.5e-7, cubic_table_test.cpp). Past 16 the clamp costs < 1.2e-7: 1 - f(16) = e^-16.
using SigmoidGelu = cubic_table::Table<8, 128>;

double sigmoid_gelu_exact(double r) {
  return 1.0 / (1.0 + std::exp(-0.5 * r * (1.0 + std::erf(r / std::sqrt(2.0)))));
}

// out = sigmoid(gelu(relu(acc + conv_bias[co]))) + bias[co].
struct Activations {
  const float* conv_bias;  // (C_out)
  const float* bias;       // (C_out, 1, 1, 1)
  SigmoidGelu sigmoid_gelu;

  struct Channel {
    float conv_bias, bias;
    SigmoidGelu sigmoid_gelu;
    __host__ __device__ float operator()(float acc) const {
#ifdef __CUDA_ARCH__
      // fmaxf first: a NaN sum becomes r = 0 (as relu's fmaxf made it before).
      return sigmoid_gelu(fminf(fmaxf(acc + conv_bias, 0.f), SigmoidGelu::kEnd)) + bias;
#else
      const float r = fmaxf(acc + conv_bias, 0.f);
      const float g = r * 0.5f * (1.0f + erff(r * 0.70710678118654752f));
      return 1.0f / (1.0f + expf(-g)) + bias;
#endif
    }
  };
  __host__ __device__ Channel channel(int co) const {
    return {conv_bias[co], bias[co], sigmoid_gelu};
  }
};

using Conv = conv3d_direct::Conv3d<3, 3, 3, Activations>;

class Conv3dActivationsBias final : public Implementation {
 public:
  ~Conv3dActivationsBias() override { KB_CUDA_WARN(cudaFree(table_)); }

  Status setup(const ProblemInstance& p, cudaStream_t /*stream*/) override {
    x_ = input_index(p, "x");
    weight_ = param_index(p, "conv.weight");
    conv_bias_ = param_index(p, "conv.bias");
    bias_ = param_index(p, "bias");
    const std::vector<cubic_table::Segment> table =
        cubic_table::fit(sigmoid_gelu_exact, SigmoidGelu::kSteps, SigmoidGelu::kLastSegment);
    static_assert(sizeof(cubic_table::Segment) == sizeof(float4), "one float4 per segment");
    KB_CUDA_TRY(cudaMalloc(&table_, sizeof(float4) * SigmoidGelu::kSegments));
    KB_CUDA_TRY(cudaMemcpy(table_, table.data(), sizeof(float4) * SigmoidGelu::kSegments,
                           cudaMemcpyHostToDevice));
    return conv_.setup(p, "conv");
  }

  Status run(const ImplArgs& args, cudaStream_t stream) override {
    const Activations epilogue{args.params[conv_bias_].data, args.params[bias_].data,
                               SigmoidGelu{table_}};
    return conv_.run(args.inputs[x_].data, args.params[weight_].data, args.output.data, epilogue,
                     stream);
  }

 private:
  Conv conv_;
  float4* table_ = nullptr;  // SigmoidGelu's segments; owned
  size_t x_ = 0, weight_ = 0, conv_bias_ = 0, bias_ = 0;
};

}  // namespace kb::custom::L2_007

KB_REGISTER_IMPLEMENTATION(L2_007, custom, kb::custom::L2_007::Conv3dActivationsBias)
