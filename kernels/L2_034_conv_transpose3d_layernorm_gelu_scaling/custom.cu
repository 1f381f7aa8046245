// L2_034 custom: out = gelu_erf(LayerNorm_W(conv_transpose3d(x) + bias)) * scale.
//   x: (N, C_in, D, H, W); weight: (C_in, C_out, 4, 4, 4); bias: (C_out); gamma, beta: (2W);
//   out: (N, C_out, 2D, 2H, 2W) fp32 NCDHW (full preset: x (32, 32, 16, 32, 32) -> out (32, 64,
//   32, 64, 64)). ConvTranspose3d(k 4, stride 2, padding 1). LayerNorm normalizes each
//   (n, co, od, oh) row of 2W values (W_out == C_out is what lets PyTorch run it):
//   out = gelu(((y - mean_row) / sqrt(var_row + eps)) gamma[w] + beta[w]) * scale, biased var.
//
// Cost (docs/problems.md#l2_034, full preset): 132.8 GFLOP; min DRAM 1,141 MB -> 0.27 ms;
// floor 1.98 ms strict fp32 FMA; 3xTF32 ~0.81 ms. Reference 25.2-25.6 ms, best strict-fp32 peer
// 22.24 ms (torch.compile, docs/baselines.md), goal <= 3.17 ms (1.6 x the floor).
//
// Ladder: four kernels, one per layer, picked by setup() below; each header holds its kernel's
// design, measured figures and accuracy notes.
//   row_ln.cuh  per output parity (pd, ph, pw) the conv is a dense implicit GEMM, K = 8 C_in
//               (2 taps per axis), in 3xTF32 on mma.sync m16n8k8; a CTA owns whole output rows
//               (kW = W rounded up to 16, 32 or 64), so each LayerNorm row is reduced on the
//               accumulators. Rows of W 13..64 above the FMA kernels' limits: the full preset's
//               kernel, under the 3.17 ms goal.
//   narrow.cuh  strict fp32 FMA, a thread per output row and 2 channels: rows of W <= 12 at
//               every size, W <= 16 under the FMA limits.
//   fma.cuh     strict fp32 FMA, a CTA per output row and 64-channel block: rows of W 17..64 in
//               layers of <= 32 M multiply-adds (more where row_ln's tile is mostly padding).
//   wide.cuh    rows longer than 128 (W > 64, C_out = 2W > 128): the generic gather writes the
//               conv and a warp per row normalizes it in place (correct, not tuned).
// The limits and the measurements that set them: kFmaMaxMacs, kFmaWasteCap and kNarrowW in the
// class. (Until 2026-12-03 row_ln took W = 32 only, and every other shape ran a strict-fp32 FMA
// kernel, 2.2x slower at the full preset: 6.03 against 2.79 ms.)
// Sweeps (`--sweep 8`): seed 2026 worst 2.42x the reference; seed 99 worst 0.89x (N 1, C_in 26,
// C_out 18, D 5, H 31, W 9: 48 against 43 us). Session 22: narrow.cuh takes rows of W <= 12 at
// every size and W <= 16 under the FMA limits (row_ln's kW 8 tiles dropped); sweeps seeds 5 and
// 77 worst 2.52x / 2.29x.
//
// Accuracy: per kernel in its header; all four take the row statistics in two passes in fp32
// (mean, then the centred sum of squares), rsqrtf, and gelu_erf_fast (kernels/cores/gelu.cuh).
// Robustness trials (small preset, seed 7, vs the golden model; measured on the FMA kernel
// row_ln replaced at W = 5; the robust preset's trials run W = 32):
// shift (x + 100) 0.011x the tolerance (reference 0.007x), scale (x 1000) 0.006x (0.004x),
// centered 0.004x (0.003x), random_affine (gamma, beta) 0.008x (0.006x).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/cuda/cuda_check.h"
#include "kernels/L2_034_conv_transpose3d_layernorm_gelu_scaling/fma.cuh"
#include "kernels/L2_034_conv_transpose3d_layernorm_gelu_scaling/narrow.cuh"
#include "kernels/L2_034_conv_transpose3d_layernorm_gelu_scaling/row_ln.cuh"
#include "kernels/L2_034_conv_transpose3d_layernorm_gelu_scaling/wide.cuh"
#include "kernels/cores/conv_transpose_gather/gather.cuh"
#include "kernels/implementation.h"

namespace kb::custom::L2_034 {

// ==== host side: picks the kernel (see the ladder above) and launches it ====

class ConvTLayerNormGelu final : public Implementation {
 public:
  ~ConvTLayerNormGelu() override {
    KB_CUDA_WARN(cudaFree(b_pk_));
    KB_CUDA_WARN(cudaFree(w_r_));
  }

  Status setup(const ProblemInstance& p, cudaStream_t) override {
    namespace rl = row_ln;
    x_ = input_index(p, "x");
    weight_ = param_index(p, "conv_transpose.weight");
    bias_ = param_index(p, "conv_transpose.bias");
    gamma_ = param_index(p, "layer_norm.weight");
    beta_ = param_index(p, "layer_norm.bias");
    KB_TRY(read_geometry(p));
    params_.eps = static_cast<float>(p.number("layer_norm", "eps"));
    params_.scale = static_cast<float>(p.number("scale", "value"));
    if (params_.w > row_ln::kMaxW) {
      KB_ASSIGN_OR_RETURN(wide_, gather::read_conv_transpose(p, "conv_transpose"));
      return Status::ok();
    }
    use_fma_ = setup_fma(!row_ln_fits());
    if (use_fma_ && use_narrow_) {  // w_r_: an aligned copy of a misaligned weight
      KB_CUDA_TRY(cudaMalloc(&w_r_, size_t(64) * params_.c_in * params_.c_out * sizeof(float)));
      return Status::ok();
    }
    if (use_fma_) {
      KB_CUDA_TRY(cudaMalloc(&w_r_, size_t(16) * fma_.c_in * fma_.co_pad * 4 * sizeof(float)));
      KB_CUDA_TRY(cudaFuncSetAttribute(fma::convt_ln_gelu_kernel,
                                       cudaFuncAttributeMaxDynamicSharedMemorySize, fma_smem_));
      return Status::ok();
    }
    if (!row_ln_fits())
      return Status::failed_precondition(
          "L2_034 custom: neither kernel takes this layer (a sample's channel block >= 2^31 "
          "outputs, N > 65535)");
    w_pad_ = rl::padded_width(params_.w);
    params_.k_tiles = (params_.c_in + rl::kCiPerStage - 1) / rl::kCiPerStage;
    params_.h_tiles = (params_.h + rl::rows_per_cta(w_pad_) - 1) / rl::rows_per_cta(w_pad_);
    params_.co_blocks = (params_.c_out + rl::kN - 1) / rl::kN;
    if (params_.blocks() >= 0x7fffffff)
      return Status::failed_precondition("L2_034 custom: more than 2^31 CTAs");
    KB_CUDA_TRY(cudaMalloc(
        &b_pk_, size_t(8) * params_.co_blocks * params_.k_pad() * rl::kN * sizeof(float)));
    return rl::allow(w_pad_);
  }

  Status run(const ImplArgs& args, cudaStream_t stream) override {
    namespace rl = row_ln;
    if (wide_.rank != 0) return run_wide(args, stream);
    if (use_fma_) return run_fma(args, stream);
    rl::Params p = with_tensors(params_, args);
    p.b_pk = b_pk_;
    const int64_t packed = int64_t{8} * p.co_blocks * p.k_pad() * rl::kN;
    rl::pack_weights_kernel<<<static_cast<unsigned>(std::min<int64_t>((packed + 255) / 256, 65535)),
                              256, 0, stream>>>(args.params[weight_].data, b_pk_, p);
    KB_CUDA_TRY(cudaGetLastError());
    const bool full = p.w == w_pad_ && reinterpret_cast<uintptr_t>(p.x) % 16 == 0;
    return rl::launch(p, w_pad_, full, stream);
  }

 private:
  // `sizes` (either kernel's parameters) with this call's tensors.
  template <class KernelParams>
  KernelParams with_tensors(KernelParams sizes, const ImplArgs& args) const {
    sizes.x = args.inputs[x_].data;
    sizes.bias = args.params[bias_].data;
    sizes.gamma = args.params[gamma_].data;
    sizes.beta = args.params[beta_].data;
    sizes.out = args.output.data;
    return sizes;
  }

  // Layers of at most this many multiply-adds run the FMA kernel: row_ln's CTAs (M 256 x N 64,
  // a 3-4 stage pipeline, two barriers in the epilogue) take ~30 us at the sweep's tiny shapes
  // (N 3, C_in 1, C_out 6: 31 us against the FMA kernel's 10.5; N 13, C_in 14, C_out 6, 7 x 9 x
  // 3: 41 us, the FMA kernel 37, the reference 38). Above it the GPU tests' row-kernel presets
  // (robust, full16 .. part64: 33-48 M, within the golden model's budget) keep every kW tested.
  static constexpr double kFmaMaxMacs = 32e6;
  // ... and, where row_ln's tile would mostly compute padding (rows of W in kW columns, C_out in
  // 64-channel blocks: the tile's multiply-adds over the layer's, `waste`, of 8 or more), up to
  // kFmaMaxMacs x kFmaWasteCap: N 64, C_in 32, C_out 6, 15 x 5 x 3 (177 M, waste 28) took 781
  // us on row_ln, 308 on fma, the reference 161 (session 22; narrow.cuh now 39).
  static constexpr double kFmaWasteCap = 8;
  // Rows of W <= kNarrowW (C_out <= 24: row_ln's rows pad to 16 columns and its 64-channel block
  // is mostly padding) run narrow.cuh's kernel at every size: N 32, C_in 32, C_out 16, 16 x 32 x 8
  // (4.3 G multiply-adds) 452 us against row_ln's 755, N 16, C_in 32, C_out 24, 16 x 16 x 12
  // 215 against 430, N 32, C_in 24, C_out 18, 8 x 16 x 9 162 against 353 (session 22). At W 16
  // row_ln was 2x faster (N 8 and 32, C_in 32, 16 x 32 x 16: 357 / 740 us, 1,368 / 2,778), so
  // rows of 13..16 take narrow.cuh only under the FMA kernels' limits above.
  static constexpr int kNarrowW = 12;

  // The FMA kernels' sizes (narrow's at W <= 16, else fma's); false when the layer is above
  // kFmaMaxMacs (unless `required`: row_ln cannot take it) or outside fma's limits (grid y = N <=
  // 65535, the x slab in shared memory; narrow has none).
  // row_ln addresses a channel block's outputs with 32-bit offsets.
  bool row_ln_fits() const {
    return int64_t{row_ln::kN} * 8 * params_.d * params_.h * params_.w < 0x7fffffff;
  }

  bool setup_fma(bool required) {
    const double macs =
        64.0 * params_.n * params_.c_in * params_.c_out * params_.d * params_.h * params_.w;
    const double waste =
        double(row_ln::padded_width(params_.w)) / params_.w *
        (double((params_.c_out + row_ln::kN - 1) / row_ln::kN) * row_ln::kN / params_.c_out);
    const double limit = waste >= kFmaWasteCap ? kFmaMaxMacs * kFmaWasteCap : kFmaMaxMacs;
    use_narrow_ = false;
    if (macs > limit && params_.w > kNarrowW && !required) return false;
    use_narrow_ = params_.w <= narrow::kMaxW;
    if (use_narrow_) {
      narrow_ = {};
      narrow_.rows = int64_t{params_.n} * 4 * params_.d * params_.h;
      narrow_.c_in = params_.c_in, narrow_.c_out = params_.c_out;
      narrow_.co_pairs = (params_.c_out + narrow::kCo - 1) / narrow::kCo;
      narrow_.d = params_.d, narrow_.h = params_.h;
      narrow_.eps = params_.eps, narrow_.scale = params_.scale;
      return true;
    }
    if (params_.n > 65535) return false;
    fma_ = {};
    fma_.c_in = params_.c_in, fma_.c_out = params_.c_out;
    fma_.co_pad = (fma_.c_out + fma::kCoPerCta - 1) / fma::kCoPerCta * fma::kCoPerCta;
    fma_.d = params_.d, fma_.h = params_.h, fma_.w = params_.w;
    fma_.w_groups = (fma_.w + fma::kMPerThread - 1) / fma::kMPerThread;
    fma_.w_pad = fma::kMPerThread * fma_.w_groups + 2 * fma::kHalo;  // columns mb - 4 .. mb + 11
    fma_.eps = params_.eps, fma_.scale = params_.scale;
    fma_smem_ = (fma_.c_in * 4 * fma_.w_pad + fma_.w_groups * fma::kCoPerCta) * int(sizeof(float));
    return fma_smem_ <= 227 * 1024;
  }

  Status run_fma(const ImplArgs& args, cudaStream_t stream) {
    if (use_narrow_) return run_narrow(args, stream);
    fma::Args a = with_tensors(fma_, args);
    a.w_r = w_r_;
    const int w_floats = 16 * a.c_in * a.co_pad * 4;
    fma::reorder_weight_kernel<<<(w_floats + 255) / 256, 256, 0, stream>>>(
        args.params[weight_].data, w_r_, a.c_in, a.c_out, a.co_pad);
    KB_CUDA_TRY(cudaGetLastError());
    const dim3 grid(static_cast<unsigned>(4 * a.d * a.h), static_cast<unsigned>(params_.n),
                    static_cast<unsigned>(a.co_pad / fma::kCoPerCta));
    const int channel_lanes = a.c_out <= 32 ? 32 : fma::kCoPerCta;  // no idle warp at C_out <= 32
    fma::convt_ln_gelu_kernel<<<grid, channel_lanes * a.w_groups, fma_smem_, stream>>>(a);
    KB_CUDA_TRY(cudaGetLastError());
    return Status::ok();
  }

  Status run_narrow(const ImplArgs& args, cudaStream_t stream) {
    narrow::Args a = with_tensors(narrow_, args);
    const float* w = args.params[weight_].data;
    if (reinterpret_cast<uintptr_t>(w) % 16 != 0) {  // the kernel reads it as float4s
      KB_CUDA_TRY(cudaMemcpyAsync(w_r_, w, size_t(64) * a.c_in * a.c_out * sizeof(float),
                                  cudaMemcpyDeviceToDevice, stream));
      w = w_r_;
    }
    a.w4 = reinterpret_cast<const float4*>(w);
    return narrow::launch(a, params_.w, stream);
  }

  Status run_wide(const ImplArgs& args, cudaStream_t stream) {
    KB_TRY(gather::launch_generic(args.inputs[x_].data, args.params[weight_].data, args.output.data,
                                  wide_, stream));
    wide::Args a{args.output.data,
                 args.params[bias_].data,
                 args.params[gamma_].data,
                 args.params[beta_].data,
                 int64_t{params_.n} * params_.c_out * 4 * params_.d * params_.h,
                 int64_t{4} * params_.d * params_.h,
                 2 * params_.w,
                 params_.c_out,
                 params_.eps,
                 params_.scale};
    const int64_t blocks = std::min<int64_t>((a.rows + wide::kWarps - 1) / wide::kWarps, 1 << 20);
    wide::row_norm_kernel<<<static_cast<unsigned>(blocks), wide::kThreads, 0, stream>>>(a);
    KB_CUDA_TRY(cudaGetLastError());
    return Status::ok();
  }

  static std::vector<int64_t> ints_or(const ProblemInstance& p, const char* attr, int64_t fill) {
    return p.has_attr("conv_transpose", attr) ? p.ints("conv_transpose", attr)
                                              : std::vector<int64_t>(3, fill);
  }

  // ConvTranspose3d k 4, stride 2, padding 1 (every size doubles), LayerNorm over 2W.
  Status read_geometry(const ProblemInstance& p) {
    const Shape& xs = p.shape_of("x");                      // (N, C_in, D, H, W)
    const Shape& ws = p.shape_of("conv_transpose.weight");  // (C_in, C_out, 4, 4, 4)
    const Shape& ys = p.shape_of("y");                      // (N, C_out, 2D, 2H, 2W)
    const std::vector<int64_t> st = ints_or(p, "stride", 1), pad = ints_or(p, "padding", 0),
                               opad = ints_or(p, "output_padding", 0),
                               dil = ints_or(p, "dilation", 1);
    const int64_t groups =
        p.has_attr("conv_transpose", "groups") ? p.int_attr("conv_transpose", "groups") : 1;
    bool ok = xs.size() == 5 && ws.size() == 5 && ys.size() == 5 && groups == 1 && ws[0] == xs[1] &&
              ys[1] == ws[1] && st.size() == 3 && pad.size() == 3 && opad.size() == 3 &&
              dil.size() == 3 && element_count(p.shape_of("layer_norm.weight")) == 2 * xs[4];
    for (int i = 0; ok && i < 3; ++i)
      ok = ws[2 + i] == 4 && st[i] == 2 && pad[i] == 1 && opad[i] == 0 && dil[i] == 1 &&
           ys[2 + i] == 2 * xs[2 + i];
    if (!ok || xs[0] * xs[1] * xs[2] * xs[3] * xs[4] > 0x7fffffff ||
        xs[0] * ws[1] * ys[2] * ys[3] > 0x7fffffff)
      return Status::failed_precondition(
          "L2_034 custom: needs ConvTranspose3d(k 4, s 2, p 1), LayerNorm over 2W, fewer than "
          "2^31 input elements and output rows");
    params_ = {};
    params_.n = static_cast<int>(xs[0]);
    params_.c_in = static_cast<int>(xs[1]), params_.c_out = static_cast<int>(ws[1]);
    params_.d = static_cast<int>(xs[2]), params_.h = static_cast<int>(xs[3]);
    params_.w = static_cast<int>(xs[4]);
    return Status::ok();
  }

  size_t x_ = 0, weight_ = 0, bias_ = 0, gamma_ = 0, beta_ = 0;
  row_ln::Params params_{};  // sizes; pointers are filled per call
  int w_pad_ = 0;            // the kernel's row length: W rounded up to 16, 32 or 64
  float* b_pk_ = nullptr;    // packed weight, rewritten every call
  bool use_fma_ = false;     // a small layer: the FMA kernel runs
  fma::Args fma_{};          // its sizes; pointers are filled per call
  int fma_smem_ = 0;
  bool use_narrow_ = false;               // ... and rows of W <= narrow::kMaxW: narrow.cuh's kernel
  narrow::Args narrow_{};                 // its sizes; pointers are filled per call
  float* w_r_ = nullptr;                  // its reordered weight, rewritten every call
  gather::ConvTransposeGeometry wide_{};  // rank != 0: W > kMaxW, the wide path runs
};

}  // namespace kb::custom::L2_034

KB_REGISTER_IMPLEMENTATION(L2_034, custom, kb::custom::L2_034::ConvTLayerNormGelu)
