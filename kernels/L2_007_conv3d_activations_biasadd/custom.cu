// L2_007 custom: sigmoid(gelu_erf(leaky_relu(relu(Conv3d(8, 32, 3)(x) + conv.bias)))) + bias[c].
//   x: (64, 8, 32, 64, 64) -> out: (64, 32, 30, 62, 62), fp32 NCDHW (full preset);
//   conv.bias: (32), bias: (32, 1, 1, 1).
//
// Cost (docs/problems.md#l2_007): 51.0 G MAC = 105 GFLOP -> t_fp32 1.57 ms (TF32 is borderline: not
// used); 1,213 MB -> t_mem 282 us. Floor 1.57 ms, FMA-bound. Reference (cuDNN + 5 eager
// kernels) 7.38 ms.
//
// Math of the epilogue: r = relu(z) >= 0, so leaky_relu(r) = r for any slope; where r = 0 the
// chain is sigmoid(gelu(0)) + bias = 0.5 + bias exactly (no erff/expf there, ~half the outputs).
// Elsewhere gelu(r) = r/2 (1 + erf(r / sqrt 2)) and sigmoid(g) = 1 / (1 + exp(-g)), as eager.
//
// Design: the direct tile kernel of kernels/cores/conv3d_direct/direct.cuh (3x3x3 taps at compile
// time) with the whole chain fused into its store: a block stages 8 channels x 3 planes x
// 10 rows x 66 columns of x (63 KB) and all 32 channels' weights (27 KB), 91 KB, two blocks per
// multiprocessor; each warp owns one task: 8 channels x 4 rows x 64 columns, a lane 64
// accumulators, 576 FFMA per 54 shared loads per (c, kd). Useful lanes 62/64 x 62/64 = 94%.
// 125 registers, no spills.
// Predicted: 1.57 ms / (0.94 x ~0.9) + epilogue ~0.1 ms + staging/tail ~5% ~ 2.0 ms.
// Other strides, dilations, groups or kernel sizes take the generic one-thread-per-output kernel.
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
