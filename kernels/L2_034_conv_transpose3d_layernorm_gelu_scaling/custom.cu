// L2_034 custom: out = gelu_erf(LayerNorm_W(conv_transpose3d(x) + bias)) * scale.
//   x: (N, C_in, D, H, W); weight: (C_in, C_out, 4, 4, 4); bias: (C_out); gamma, beta: (2W);
//   out: (N, C_out, 2D, 2H, 2W) (full preset: (32, 64, 32, 64, 64)). LayerNorm normalizes each
//   (n, co, od, oh) row of 2W values (W_out == C_out is what lets PyTorch run it).
//
// Cost (docs/problems.md#l2_034, full preset): 132.8 GFLOP; min DRAM 1,141 MB -> 0.27 ms;
// floor 1.98 ms strict fp32 FMA; 3xTF32 ~0.81 ms. Reference 25.4 ms, best peer 22.24 ms, goal
// <= 3.17 ms.
//
// Fast path (W = 32, C_out <= 64, x 16-byte aligned; the full preset), row_ln_gemm.cuh: per output
// parity (pd, ph, pw) the conv is a dense implicit GEMM, K = 8 C_in = 256 (2 taps per axis);
// 3xTF32 on mma.sync m16n8k8. A CTA owns 4 output rows x both W parities x all 64 channels
// (M = 256, N = 64), so each LayerNorm row (n, co, od, oh: 64 columns) is reduced on the
// accumulators (shuffles + one shared exchange between the two W-parity warps, two passes),
// then gamma/beta, gelu and scale, one store. A is read straight from an x slab in shared memory
// (16-byte copies of whole x rows, no im2col duplication); B (weights re-packed per call,
// 512 KB) streams through a 4-stage cp.async pipeline. 16,384 CTAs of 12,288 MMAs, 2 per SM.
//
// Generic path (any other shape the layer allows: the small / odd presets, W <= 64), strict
// fp32 FMA, one fused kernel + a per-call weight reorder: kernel stride 2, pad 1,
// k 4: output o = 2m + p gets exactly 2 taps per dim, s in {0, 1}: i = m + p - s, t = 2s + 1 - p.
// One CTA per (n, od, oh, 64-channel block): the x slab x[n][:, 2 d taps, 2 h taps, :] goes to
// shared memory with a zero halo; thread (co, w group) computes 16 consecutive outputs of its
// channel's row (8 input columns x both W parities): per (ci, sd, sh) one float4 of weights (4 kw)
// and 4 broadcast float4 of x feed 32 FMAs. The row's LayerNorm (two-pass mean / variance over
// the w groups through shared memory), gamma/beta, gelu and scale run in registers; one store.
//
// Predicted on the H200, fast path: 201M MMAs per call, the same CTA shape and MMA count per CTA
// as the L2_091 / L2_093 parity core (49 TFLOP/s effective on L2_093 incl. its erff epilogue):
// ~2.6-2.9 ms. Its A fragments are 16 scalar shared loads per k8 step and warp (the 2D core:
// 4 LDS.128 + 16 four-byte gathers per stage), its gathers 5 sixteen-byte copies per thread
// and stage: about a wash. The FMA path measured 6.03 ms (22 TFLOP/s). Accuracy: 3xTF32 ~fp32;
// LayerNorm amplifies by 1/sigma ~ 12 (host emulation of the index maps: <= 1.2% of tolerance).
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/L2_034_conv_transpose3d_layernorm_gelu_scaling/row_ln_gemm.cuh"
#include "kernels/device/cuda_check.h"
#include "kernels/implementation.h"

namespace kb::custom::L2_034 {

constexpr int kCoPerCta = 64;     // two warps' worth of channels per w group
constexpr int kMPerThread = 8;    // input columns per thread -> 16 outputs
constexpr int kHalo = 4;          // zero columns left of x in the slab (aligned float4 loads)
constexpr int kMaxWGroups = 8;    // 64 x 8 = 512 threads; W <= 64
static_assert(kCoPerCta == 64, "thread -> (lane, half, w group) mapping below");
static_assert(kHalo == 4 && kMPerThread == 8, "the four float4 x loads cover m-4 .. m+11");

struct Args {
  const float* x;      // (N, C_in, D, H, W)
  const float* w_r;    // (2 pd, 2 ph, C_in, 2 sd, 2 sh, co_pad, 4 kw): reordered weight
  const float* bias;   // (C_out)
  const float* gamma;  // (2W)
  const float* beta;   // (2W)
  float* out;          // (N, C_out, 2D, 2H, 2W)
  int c_in, c_out, co_pad, d, h, w, w_groups, w_pad;  // w_pad: slab row length
  float eps, scale;
};

// w_r[pd][ph][ci][sd][sh][co][kw] = weight[ci][co][2sd+1-pd][2sh+1-ph][kw], 0 for co >= C_out.
__global__ void reorder_weight_kernel(const float* __restrict__ weight, float* __restrict__ w_r,
                                      int c_in, int c_out, int co_pad) {
  const int total = 16 * c_in * co_pad * 4;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += gridDim.x * blockDim.x) {
    const int kw = i % 4, co = i / 4 % co_pad, r = i / (4 * co_pad);
    const int sh = r % 2, sd = r / 2 % 2, ci = r / 4 % c_in, ph = r / (4 * c_in) % 2,
              pd = r / (8 * c_in);
    const int kd = 2 * sd + 1 - pd, kh = 2 * sh + 1 - ph;
    w_r[i] = co < c_out ? weight[((int64_t{ci} * c_out + co) * 4 + kd) * 16 + kh * 4 + kw] : 0.0f;
  }
}

// Fills slab[ci][sd][sh][w_pad] with x[n][ci][md+pd-sd][mh+ph-sh][col - kHalo], zero outside x.
__device__ __forceinline__ void load_slab(const Args& p, float* slab, int n, int md, int pd, int mh,
                                          int ph) {
  const int total = p.c_in * 4 * p.w_pad;
  for (int i = threadIdx.x; i < total; i += blockDim.x) {
    const int col = i % p.w_pad, r = i / p.w_pad;
    const int sh = r % 2, sd = r / 2 % 2, ci = r / 4;
    const int id = md + pd - sd, ih = mh + ph - sh, iw = col - kHalo;
    const bool ok = id >= 0 && id < p.d && ih >= 0 && ih < p.h && iw >= 0 && iw < p.w;
    slab[i] = ok ? __ldg(p.x + ((((int64_t{n} * p.c_in + ci) * p.d + id) * p.h + ih) * p.w + iw))
                 : 0.0f;
  }
}

// Block: 64 * w_groups threads; grid: (2H * 2D, N, co tiles). Thread (lane, half, w group g):
// channel co0 + 32 half + lane, outputs w = 16 g .. 16 g + 15 of row (n, co, od, oh).
__global__ void __launch_bounds__(kCoPerCta * kMaxWGroups)
    convt_ln_gelu_kernel(const Args p) {
  extern __shared__ __align__(16) float smem[];  // slab, then red (w_groups x 64)
  const int oh = blockIdx.x % (2 * p.h), od = blockIdx.x / (2 * p.h), n = blockIdx.y;
  const int pd = od & 1, md = od >> 1, ph = oh & 1, mh = oh >> 1;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int g = warp % p.w_groups, cl = (warp / p.w_groups) * 32 + lane;  // cl < 64
  const int co = blockIdx.z * kCoPerCta + cl, mb = g * kMPerThread;
  float* slab = smem;
  float* red = smem + p.c_in * 4 * p.w_pad;
  load_slab(p, slab, n, md, pd, mh, ph);
  __syncthreads();

  float acc[2 * kMPerThread] = {};
  const float4* wq = reinterpret_cast<const float4*>(p.w_r) +
                     int64_t{(pd * 2 + ph) * p.c_in} * 4 * p.co_pad + co;
  for (int ci = 0; ci < p.c_in; ++ci)
#pragma unroll
    for (int sds = 0; sds < 4; ++sds) {  // (sd, sh)
      const float4 wv = __ldg(wq + (ci * 4 + sds) * p.co_pad);
      const float wk[4] = {wv.x, wv.y, wv.z, wv.w};
      // xv[c] = x at input column mb - 4 + c
      const float4* row = reinterpret_cast<const float4*>(slab + (ci * 4 + sds) * p.w_pad + mb);
      float xv[16];
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        const float4 v = row[q];
        xv[4 * q] = v.x, xv[4 * q + 1] = v.y, xv[4 * q + 2] = v.z, xv[4 * q + 3] = v.w;
      }
#pragma unroll
      for (int j = 0; j < 2 * kMPerThread; ++j)  // w = 2 (mb + j/2) + pw
#pragma unroll
        for (int s = 0; s < 2; ++s) {
          const int pw = j & 1, iw = j / 2 + pw - s;  // input column - mb
          acc[j] = fmaf(xv[iw + kHalo], wk[2 * s + 1 - pw], acc[j]);
        }
    }

  // LayerNorm over the row's 2W outputs: the 16 of each of the w_groups threads of channel cl.
  const int w_out = 2 * p.w, w0 = 2 * mb;
  const float b = co < p.c_out ? __ldg(p.bias + co) : 0.0f;
  float s = 0.0f;
#pragma unroll
  for (int j = 0; j < 2 * kMPerThread; ++j) {
    acc[j] += b;
    if (w0 + j < w_out) s += acc[j];
  }
  red[g * kCoPerCta + cl] = s;
  __syncthreads();
  float mean = 0.0f;
  for (int k = 0; k < p.w_groups; ++k) mean += red[k * kCoPerCta + cl];
  mean /= static_cast<float>(w_out);
  float q = 0.0f;
#pragma unroll
  for (int j = 0; j < 2 * kMPerThread; ++j)
    if (w0 + j < w_out) q += (acc[j] - mean) * (acc[j] - mean);
  __syncthreads();  // everyone has read the sums
  red[g * kCoPerCta + cl] = q;
  __syncthreads();
  float var = 0.0f;
  for (int k = 0; k < p.w_groups; ++k) var += red[k * kCoPerCta + cl];
  const float rstd = rsqrtf(var / static_cast<float>(w_out) + p.eps);
  if (co >= p.c_out) return;
  float* out = p.out + (((int64_t{n} * p.c_out + co) * 2 * p.d + od) * 2 * p.h + oh) * w_out;
#pragma unroll
  for (int j = 0; j < 2 * kMPerThread; ++j)
    if (w0 + j < w_out) {
      const float z = (acc[j] - mean) * rstd * __ldg(p.gamma + w0 + j) + __ldg(p.beta + w0 + j);
      out[w0 + j] = gelu_erf(z) * p.scale;
    }
}

// ---- host side ----

class ConvTLayerNormGelu final : public Implementation {
 public:
  ~ConvTLayerNormGelu() override {
    KB_CUDA_WARN(cudaFree(w_r_));
    KB_CUDA_WARN(cudaFree(b_pk_));
  }

  Status setup(const ProblemInstance& p, cudaStream_t) override {
    x_ = input_index(p, "x");
    weight_ = param_index(p, "conv_transpose.weight");
    bias_ = param_index(p, "conv_transpose.bias");
    gamma_ = param_index(p, "layer_norm.weight");
    beta_ = param_index(p, "layer_norm.bias");
    KB_TRY(read_geometry(p));
    a_.eps = static_cast<float>(p.number("layer_norm", "eps"));
    a_.scale = static_cast<float>(p.number("scale", "value"));
    KB_CUDA_TRY(cudaMalloc(&w_r_, size_t(16) * a_.c_in * a_.co_pad * 4 * sizeof(float)));
    KB_CUDA_TRY(cudaFuncSetAttribute(convt_ln_gelu_kernel,
                                     cudaFuncAttributeMaxDynamicSharedMemorySize, smem_bytes_));
    return setup_fast_path();
  }

  Status run(const ImplArgs& args, cudaStream_t stream) override {
    const float* x = args.inputs[x_].data;
    if (fast_ && reinterpret_cast<uintptr_t>(x) % 16 == 0) return run_fast(args, stream);
    Args a = a_;
    a.x = x;
    a.w_r = w_r_;
    a.bias = args.params[bias_].data;
    a.gamma = args.params[gamma_].data;
    a.beta = args.params[beta_].data;
    a.out = args.output.data;
    const int w_floats = 16 * a.c_in * a.co_pad * 4;
    reorder_weight_kernel<<<(w_floats + 255) / 256, 256, 0, stream>>>(
        args.params[weight_].data, w_r_, a.c_in, a.c_out, a.co_pad);
    KB_CUDA_TRY(cudaGetLastError());
    const dim3 grid(static_cast<unsigned>(4 * a.d * a.h), static_cast<unsigned>(n_),
                    static_cast<unsigned>(a.co_pad / kCoPerCta));
    convt_ln_gelu_kernel<<<grid, kCoPerCta * a.w_groups, smem_bytes_, stream>>>(a);
    KB_CUDA_TRY(cudaGetLastError());
    return Status::ok();
  }

 private:
  // The 3xTF32 path (row_ln_gemm.cuh) takes W = 32 and C_out <= 64; x must also be 16-byte
  // aligned, checked per call.
  Status setup_fast_path() {
    namespace rl = row_ln;
    fast_ = a_.w == rl::kW && a_.c_out <= rl::kN && a_.c_in >= 1;
    if (!fast_) return Status::ok();
    fp_ = {};
    fp_.n = n_, fp_.c_in = a_.c_in, fp_.c_out = a_.c_out, fp_.d = a_.d, fp_.h = a_.h;
    fp_.k_tiles = (a_.c_in + rl::kCiPerStage - 1) / rl::kCiPerStage;
    fp_.h_tiles = (a_.h + rl::kRows - 1) / rl::kRows;
    fp_.eps = a_.eps, fp_.scale = a_.scale;
    if (fp_.blocks() >= 0x7fffffff) {
      fast_ = false;
      return Status::ok();
    }
    KB_CUDA_TRY(cudaMalloc(&b_pk_, size_t(8) * fp_.k_pad() * rl::kN * sizeof(float)));
    KB_CUDA_TRY(cudaFuncSetAttribute(rl::row_ln_kernel,
                                     cudaFuncAttributeMaxDynamicSharedMemorySize, rl::kSmemBytes));
    KB_CUDA_TRY(cudaFuncSetAttribute(rl::row_ln_kernel,
                                     cudaFuncAttributePreferredSharedMemoryCarveout,
                                     cudaSharedmemCarveoutMaxShared));
    return Status::ok();
  }

  Status run_fast(const ImplArgs& args, cudaStream_t stream) {
    namespace rl = row_ln;
    rl::Params p = fp_;
    p.x = args.inputs[x_].data;
    p.b_pk = b_pk_;
    p.bias = args.params[bias_].data;
    p.gamma = args.params[gamma_].data;
    p.beta = args.params[beta_].data;
    p.out = args.output.data;
    const int pack_blocks = (8 * p.k_pad() * rl::kN + 255) / 256;
    rl::pack_weights_kernel<<<pack_blocks, 256, 0, stream>>>(args.params[weight_].data, b_pk_, p);
    KB_CUDA_TRY(cudaGetLastError());
    rl::row_ln_kernel<<<static_cast<unsigned>(p.blocks()), rl::kThreads, rl::kSmemBytes, stream>>>(
        p);
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
    bool ok = xs.size() == 5 && ws.size() == 5 && ys.size() == 5 && groups == 1 &&
              ws[0] == xs[1] && ys[1] == ws[1] && st.size() == 3 && pad.size() == 3 &&
              opad.size() == 3 && dil.size() == 3 &&
              element_count(p.shape_of("layer_norm.weight")) == 2 * xs[4];
    for (int i = 0; ok && i < 3; ++i)
      ok = ws[2 + i] == 4 && st[i] == 2 && pad[i] == 1 && opad[i] == 0 && dil[i] == 1 &&
           ys[2 + i] == 2 * xs[2 + i];
    if (!ok || xs[4] > kMPerThread * kMaxWGroups || 4 * xs[2] * xs[3] > 0x7fffffff ||
        xs[0] > 65535 || xs[1] * ws[1] > (1 << 24))
      return Status::failed_precondition(
          "L2_034 custom: needs ConvTranspose3d(k 4, s 2, p 1), W <= 64, LayerNorm over 2W");
    n_ = static_cast<int>(xs[0]);
    a_.c_in = static_cast<int>(xs[1]), a_.c_out = static_cast<int>(ws[1]);
    a_.co_pad = (a_.c_out + kCoPerCta - 1) / kCoPerCta * kCoPerCta;
    a_.d = static_cast<int>(xs[2]), a_.h = static_cast<int>(xs[3]), a_.w = static_cast<int>(xs[4]);
    a_.w_groups = (a_.w + kMPerThread - 1) / kMPerThread;
    a_.w_pad = kMPerThread * a_.w_groups + 2 * kHalo;  // covers columns mb - 4 .. mb + 11
    smem_bytes_ = (a_.c_in * 4 * a_.w_pad + a_.w_groups * kCoPerCta) * int(sizeof(float));
    if (smem_bytes_ > 227 * 1024)
      return Status::failed_precondition("L2_034 custom: the x slab exceeds shared memory");
    return Status::ok();
  }

  size_t x_ = 0, weight_ = 0, bias_ = 0, gamma_ = 0, beta_ = 0;
  int n_ = 0, smem_bytes_ = 0;
  Args a_{};                // sizes; pointers are filled per call
  float* w_r_ = nullptr;    // reordered weight, rewritten every call
  bool fast_ = false;       // the 3xTF32 row-LayerNorm path applies
  row_ln::Params fp_{};     // its sizes; pointers are filled per call
  float* b_pk_ = nullptr;   // its packed weight, rewritten every call
};

}  // namespace kb::custom::L2_034

KB_REGISTER_IMPLEMENTATION(L2_034, custom, kb::custom::L2_034::ConvTLayerNormGelu)
