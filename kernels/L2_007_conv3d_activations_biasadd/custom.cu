// L2_007 custom: out = sigmoid(gelu_erf(leaky_relu(relu(Conv3d(8, 32, 3)(x) + conv.bias))))
//   + bias[c], one fused kernel (stride 1, no padding, leaky slope 0.01).
//   x: (N, C_in, D, H, W), w: (C_out, C_in, 3, 3, 3), conv.bias: (C_out), bias: (C_out, 1, 1, 1);
//   out: (N, C_out, D-2, H-2, W-2) fp32 NCDHW (full preset: x (64, 8, 32, 64, 64) -> out
//   (64, 32, 30, 62, 62)).
//   Math of the epilogue: r = relu(z) >= 0, so leaky_relu(r) = r for any slope; where r = 0 the
//   chain is sigmoid(gelu(0)) + bias = 0.5 + bias exactly (no erff/expf there, ~half the
//   outputs). Elsewhere gelu(r) = r/2 (1 + erf(r / sqrt 2)) and sigmoid(g) = 1 / (1 + exp(-g)).
//
// Cost (docs/problems.md#l2_007, full preset): 51.0 G MAC = 105 GFLOP -> t_fp32 1.57 ms (TF32 is
// borderline: not used); 1,213 MB -> t_mem 282 us. Floor 1.57 ms, FMA-bound. Reference (cuDNN +
// 5 eager kernels) 7.38-7.48 ms over the runs; best strict-fp32 peer 6.48 ms (torch.compile,
// docs/baselines.md); goal <= 2.51 ms (1.6 x the floor).
//
// Design: one launch of the direct tile kernel of kernels/cores/conv3d_direct/direct.cuh (3x3x3
// taps at compile time) with the whole chain fused into its store: a block stages 8 channels x 3
// planes x 10 rows x 66 columns of x (63 KB) and all 32 channels' weights (27 KB), 91 KB, two
// blocks per multiprocessor; each warp owns one task: 8 channels x 4 rows x 64 columns, a lane 64
// accumulators, 576 FFMA per 54 shared loads per (c, kd). Useful lanes 62/64 x 62/64 = 94%.
// 125 registers, no spills.
// Small layers (C_out 1, or <= 32 M multiply-adds) take the core's narrow kernel: one thread per
// output, the taps clamped once (direct.cuh; session 9 sweep: L1_054 0.37x -> 1.3x, L1_060 0.62x
// -> 1.75x, L2_007 0.31x -> 1.09x the reference at their worst shapes, docs/kernels.md).
// Fallback: other strides, dilations, groups or kernel sizes take the core's generic
// one-thread-per-output kernel with the same epilogue.
//
// Predicted: 1.57 ms / (0.94 x ~0.9) + epilogue ~0.1 ms + staging/tail ~5% ~ 2.0 ms.
// Measured (H200, full preset): 4.27-4.28 ms on 2026-11-30 (docs/kernels.md), 4.283 ms in
// docs/bench-h200-2026-12-02b.json: 25 TFLOP/s of the 67, 2.7x the floor. The accumulator tiles
// hold ~50% issue efficiency (2 blocks per SM, kw loop rolled) and the erf/exp epilogue on half
// the elements costs more than estimated. Next (docs/kernels.md): the 3xTF32 implicit GEMM
// (K = 216), predicted ~0.7 ms.
//
// Accuracy: strict fp32 FMA conv (216 products per output in one accumulator, the conv bias
// added after the sum as the reference does), then the accurate erff and expf (no fast
// intrinsics) and an IEEE division. The chain damps errors: sigmoid' <= 1/4 and the output lies
// in bias + [0.5, 1). Measured max |err| 4.8e-7 at the full preset (bench 2026-12-02b) vs 1e-4 +
// 1e-4 |r| allowed. Robustness trials (small preset, seed 7, vs the golden model): shift
// (x + 100) 0.014x the tolerance (reference 0.012x), scale (x 1000) 0.045x (0.039x), centered
// 0.0006x (0.0006x). No statistics.
#include <cuda_runtime.h>

#include <cmath>
#include <cstddef>

#include "kernels/cores/conv3d_direct/direct.cuh"
#include "kernels/implementation.h"

namespace kb::custom::L2_007 {

// out = sigmoid(gelu(relu(acc + conv_bias[co]))) + bias[co].
struct Activations {
  const float* conv_bias;  // (C_out)
  const float* bias;       // (C_out, 1, 1, 1)

  struct Channel {
    float conv_bias, bias;
    __host__ __device__ float operator()(float acc) const {
      const float r = fmaxf(acc + conv_bias, 0.f);
      if (r == 0.f) return 0.5f + bias;  // sigmoid(gelu(0)) = 0.5
      const float g = r * 0.5f * (1.0f + erff(r * 0.70710678118654752f));
      return 1.0f / (1.0f + expf(-g)) + bias;
    }
  };
  __host__ __device__ Channel channel(int co) const { return {conv_bias[co], bias[co]}; }
};

using Conv = conv3d_direct::Conv3d<3, 3, 3, Activations>;

class Conv3dActivationsBias final : public Implementation {
 public:
  Status setup(const ProblemInstance& p, cudaStream_t /*stream*/) override {
    x_ = input_index(p, "x");
    weight_ = param_index(p, "conv.weight");
    conv_bias_ = param_index(p, "conv.bias");
    bias_ = param_index(p, "bias");
    return conv_.setup(p, "conv");
  }

  Status run(const ImplArgs& args, cudaStream_t stream) override {
    const Activations epilogue{args.params[conv_bias_].data, args.params[bias_].data};
    return conv_.run(args.inputs[x_].data, args.params[weight_].data, args.output.data, epilogue,
                     stream);
  }

 private:
  Conv conv_;
  size_t x_ = 0, weight_ = 0, conv_bias_ = 0, bias_ = 0;
};

}  // namespace kb::custom::L2_007

KB_REGISTER_IMPLEMENTATION(L2_007, custom, kb::custom::L2_007::Conv3dActivationsBias)
