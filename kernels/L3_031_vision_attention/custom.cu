// L3_031 custom: VisionAttention = pixels as tokens through nn.MultiheadAttention (batch_first =
// False, packed in_proj, dropout 0), residual add, LayerNorm over the channels, image layout.
//   x: (N, E, H, W) fp32 NCHW; tokens t[l, n, e] = x[n, e, l], l = h*W + w, L = H*W.
//   out[n, c, l] = LN_c(out_proj(concat_h softmax(q_h k_h^T) v_h)[l, n, c] + x[n, c, l]).
//
//   in_proj: W_in (3E, E), b_in (3E); out_proj: W_o (E, E), b_o (E); LN gamma, beta (E);
//   out: (N, E, H, W) fp32 NCHW (full preset: x (2, 128, 128, 128), 4 heads of hd = 32).
//
// Cost (full preset N 2, E 128, 4 heads, L 16384; docs/problems.md#l3_031): 290 GFLOP (QK^T 137 G,
// PV 137 G, projections 4.3 G), 2.15e9 exps; min DRAM 33.8 MB (8 us). fp32 FMA floor 4.33 ms, TF32
// 0.59 ms, 3xTF32 ~1.8 ms: compute-bound. Reference 25.4 ms (17.2 ms in bench 2026-12-02b; it
// materializes 8.6 GB of scores); best strict-fp32 peer 14.65 ms (torch.compile,
// docs/baselines.md); goal <= 6.92 ms (1.6 x the floor).
//
// Design (three launches, no atomics, deterministic):
//  1. qkv_projection_kernel (fp32 FMA, 64 tokens x 64 features x 16 k tiles): reads x in place
//     (the token view needs no copy), adds in_proj_bias, scales q by 1/sqrt(hd) after its bias,
//     writes head-major q (N*heads, L, hd). For the fast path k and v are written pre-split for
//     3xTF32 (big = tf32_rna(x), small = tf32_rna(x - big)), so the attention loop splits only P.
//  2. flash_attention_kernel (hd == 32, flash_attention.cuh): one CTA per (n*head, 128 query rows),
//  8 warps of 16 rows;
//     K/V tiles of 64 keys, cp.async double-buffered (76 KB, 2 CTAs/SM); S = Q K^T and O += P V
//     with 3xTF32 mma.sync m16n8k8 (3 MMAs per product: small*big, big*small, big*big); online
//     softmax in fp32 (max subtraction, exp2 with log2e folded, rescaling). The k dimension of
//     both MMAs is permuted (logical t, t+4 -> physical 2t, 2t+1) so that the S accumulator is
//     directly P's A fragment and K's B fragment is one float2. Each KV tile's P V goes into a
//     fresh accumulator folded into O with one rounded fma (short MMA sum chains: no drift over
//     16384 keys even if the tensor core truncates its sums). A head_dim below 32 (E = 108 or
//     116 at 4 heads) runs the same kernel with q, k, v zero-padded to 32 dims (the sweep
//     measured the generic kernel 8x slower than the reference there); above 32:
//     generic_attention_kernel (one warp per query row, fp32, exact expf).
//  3. out_proj_layernorm_kernel (out_proj_layernorm.cuh): 32 tokens of one image per CTA; concat
//     heads (O is (N, L, E)), out_proj + bias + residual x, two-pass LayerNorm over E, writes
//     out[n, c, l] coalesced.
// Small grids (any stage under one wave of 132 SMs; N 1, E 76, L 495 measured 85 us against the
// reference's 73, every kernel at 16-32 CTAs): the projection takes 32- or 16-token tiles with a
// register prefetch of the next k tile; the flash kernel splits the keys over gridDim.z (about
// one CTA per SM, >= 1 tile of 64 keys each), each split writing unnormalized (O, m, l) that
// attention_combine_kernel folds in split order (max subtraction again, no atomics); the
// epilogue takes 8 tokens per CTA with W staged in shared memory; and the zero pad dims of
// q, k, v (head_dim < 32) are written once in setup() instead of five memsets per run.
//
// Predicted on the H200: attention 403M MMAs (as L1_003, measured 3.98 ms there) plus softmax:
// ~4.5 ms; projection ~0.06 ms, epilogue ~0.05 ms: ~4.6 ms total (vs 14.65 ms best peer).
// Measured: 4.86 ms (2026-11-30, docs/kernels.md; 59.7 TFLOP/s), 4.840 ms in
// docs/bench-h200-2026-12-02b.json (1.12x the fp32 floor): under the 6.92 ms goal. Shape sweep
// (docs/kernels.md): head_dim 27 / 29 took the generic kernel at 0.12x the reference; zero-padded
// into the flash kernel, 2.0-2.6 ms (2.26x worst).
//
// Accuracy: QK^T and PV in 3xTF32 (3 MMAs per product, ~ fp32 products); projections, softmax and
// LayerNorm in fp32 FMA. The attention is nearly uniform at this L (max probability 9.9e-5 against
// 1/L = 6.1e-5, docs/problems.md#l3_031), so the long PV sums decide the error (plain TF32 fails
// 8x): each 64-key tile's P V starts a fresh MMA accumulator and is folded into O by one rounded
// fma, so no MMA sum runs over more than 64 keys. The online softmax subtracts the running max (no
// overflow under shifted or scaled inputs) and uses exp2f with log2e folded into one FFMA per
// score, rescaling O by exp2f of the max's change. The LayerNorm is two-pass (mean, then the
// centred sum of squares) and 1 / sqrtf (IEEE): a shift of x costs no digits there. The generic
// kernel (head_dim > 32) uses expf. Measured max |err| 7.2e-6 at the full preset (bench
// 2026-12-02b) vs 1e-4 + 1e-4 |r| allowed. Robustness trials (small preset, seed 7, vs the golden
// model; L = 63 tokens, the flash kernel): shift (x + 100) 0.021x the tolerance (reference 0.020x),
// scale (x 1000) 0.009x (0.005x), centered 0.001x (0.001x), random_affine (LN gamma, beta and the
// zero biases) 0.015x (0.004x).
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include <algorithm>

#include "common/cuda/cuda_check.h"
#include "common/cuda/device_query.h"
#include "kernels/L3_031_vision_attention/flash_attention.cuh"
#include "kernels/L3_031_vision_attention/out_proj_layernorm.cuh"
#include "kernels/cores/block_reduce.cuh"
#include "kernels/cores/tf32x3/mma.cuh"
#include "kernels/implementation.h"

namespace kb::custom::L3_031 {

// ---- 3xTF32 primitives (as kernels/L1_003_batched_matmul/tf32x3_gemm.cuh) ----

// 3xTF32 and cp.async primitives: kernels/cores/tf32x3/mma.cuh.
using ::kb::tf32x3::SplitTf32;
using ::kb::tf32x3::split_tf32;
using ::kb::tf32x3::mma_tf32;
using ::kb::tf32x3::cp_async_16;
using ::kb::tf32x3::cp_async_4;
using ::kb::tf32x3::cp_async_commit;
using ::kb::tf32x3::cp_async_wait;
using ::kb::tf32x3::tf32_rna_bits;

// ---- 1. QKV projection ----

constexpr int kProjFeat = 64, kProjK = 16, kProjThreads = 256;
static_assert(kProjFeat * kProjK == 4 * kProjThreads, "each thread stages 4 W values per k tile");
static_assert(kProjThreads / 16 == 16 && 16 * 4 == kProjFeat,
              "16 x 16 threads of kRows tokens x 4 features");

struct QkvArgs {
  const float* x;      // (N, E, L)
  const float* w;      // in_proj_weight (3E, E)
  const float* bias;   // in_proj_bias (3E)
  float* q;            // (N*heads, L, hd), scaled
  float* k_big;        // (N*heads, L, hd); plain k when !split
  float* k_small;      // (N*heads, L, hd); unused when !split
  float* v_big;
  float* v_small;
  int len, embed, heads, head_dim;
  int hd_stride;  // row stride of q, k, v: head_dim, or 32 when head_dim < 32 is zero-padded
  float q_scale;
  bool split;          // write k, v as 3xTF32 big / small parts
};

__device__ __forceinline__ void store_qkv(const QkvArgs& a, int n, int l, int j, float acc) {
  const int which = j / a.embed, within = j - which * a.embed;  // 0: q, 1: k, 2: v
  const int h = within / a.head_dim, d = within - h * a.head_dim;
  const int64_t idx = ((int64_t{n} * a.heads + h) * a.len + l) * a.hd_stride + d;
  const float v = acc + a.bias[j];
  if (which == 0) {
    a.q[idx] = v * a.q_scale;
    return;
  }
  float* big = which == 1 ? a.k_big : a.v_big;
  if (!a.split) {
    big[idx] = v;
    return;
  }
  const SplitTf32 s = split_tf32(v);
  big[idx] = __uint_as_float(s.big);
  (which == 1 ? a.k_small : a.v_small)[idx] = __uint_as_float(s.small);
}

// grid (ceil(L / (16 kRows)), ceil(3E / 64), N); C[l, j] = sum_e x[n, e, l] * W[j, e]. kRows 4
// (64-token tiles) at large grids; 2 or 1 (32 or 16 tokens) where 64-token tiles would leave
// SMs idle (N 1, E 76, L 495: 32 CTAs, 15.1 us in ncu). There the next k tile's loads are in
// flight (registers) while the current one is multiplied; at kRows 4 the loads stay where they
// were (right before their smem stores: 77 registers, 3 CTAs per SM, as measured at full).
template <int kRows>
__global__ void __launch_bounds__(kProjThreads) qkv_projection_kernel(const QkvArgs a) {
  constexpr int kTok = 16 * kRows;
  static_assert(kTok * kProjK == kRows * kProjThreads,
                "each thread stages kRows x values per k tile");
  __shared__ float xs[kProjK][kTok];           // x[n, e0 + k, l0 + t]
  __shared__ float ws[kProjK][kProjFeat + 1];  // W[j0 + f, e0 + k]
  const int n = blockIdx.z, l0 = blockIdx.x * kTok, j0 = blockIdx.y * kProjFeat;
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;  // features tx + 16i, tokens ty + 16r
  const float* x = a.x + int64_t{n} * a.embed * a.len;
  const int feats = 3 * a.embed;
  float xr[kRows], wr[4];  // the staged k tile, in registers until its predecessor is done
  const auto load_tile = [&](int e0) {
#pragma unroll
    for (int u = 0; u < kRows; ++u) {
      const int i = threadIdx.x + kProjThreads * u;
      const int xk = i / kTok, xt = i % kTok;  // coalesced along l
      xr[u] = (e0 + xk < a.embed && l0 + xt < a.len) ? x[int64_t{e0 + xk} * a.len + l0 + xt] : 0.f;
    }
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      const int i = threadIdx.x + kProjThreads * u;
      const int wk = i % kProjK, wf = i / kProjK;  // 16 consecutive e of one W row
      wr[u] =
          (e0 + wk < a.embed && j0 + wf < feats) ? a.w[int64_t{j0 + wf} * a.embed + e0 + wk] : 0.f;
    }
  };
  constexpr bool kPrefetch = kRows < 4;
  float acc[kRows][4] = {};
  if (kPrefetch) load_tile(0);
  for (int e0 = 0; e0 < a.embed; e0 += kProjK) {
    if (!kPrefetch) load_tile(e0);
#pragma unroll
    for (int u = 0; u < kRows; ++u) {
      const int i = threadIdx.x + kProjThreads * u;
      xs[i / kTok][i % kTok] = xr[u];
    }
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      const int i = threadIdx.x + kProjThreads * u;
      ws[i % kProjK][i / kProjK] = wr[u];
    }
    __syncthreads();
    if (kPrefetch && e0 + kProjK < a.embed) load_tile(e0 + kProjK);
#pragma unroll
    for (int k = 0; k < kProjK; ++k) {
      float xv[kRows], wv[4];
#pragma unroll
      for (int r = 0; r < kRows; ++r) xv[r] = xs[k][ty + 16 * r];
#pragma unroll
      for (int i = 0; i < 4; ++i) wv[i] = ws[k][tx + 16 * i];
#pragma unroll
      for (int r = 0; r < kRows; ++r)
#pragma unroll
        for (int i = 0; i < 4; ++i) acc[r][i] = fmaf(xv[r], wv[i], acc[r][i]);
    }
    __syncthreads();
  }
#pragma unroll
  for (int r = 0; r < kRows; ++r)
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int l = l0 + ty + 16 * r, j = j0 + tx + 16 * i;
      if (l < a.len && j < feats) store_qkv(a, n, l, j, acc[r][i]);
    }
}

// ---- 2'. Generic attention (any head_dim), fp32: one warp per (bh, query row) ----

constexpr int kGenWarps = 8;

using cores::warp_sum;  // butterfly over the 32 lanes: every lane gets the total

// grid ceil(N*heads*L / 8), 256 threads; o as in flash_attention_kernel.
__global__ void __launch_bounds__(32 * kGenWarps) generic_attention_kernel(
    const float* q, const float* k, const float* v, float* o, int len, int heads, int head_dim,
    int embed, int64_t rows) {
  const int64_t row = int64_t{blockIdx.x} * kGenWarps + threadIdx.x / 32;
  if (row >= rows) return;
  const int lane = threadIdx.x & 31;
  const int64_t bh = row / len;
  const int64_t head = bh * len * head_dim;
  const float* qr = q + row * head_dim;
  const int n = static_cast<int>(bh / heads), h = static_cast<int>(bh % heads);
  float* dst = o + (int64_t{n} * len + (row - bh * len)) * embed + int64_t{h} * head_dim;
  for (int d0 = 0; d0 < head_dim; d0 += 32) {  // output dims d0 + lane
    const int d = d0 + lane;
    float m = -INFINITY, l = 0.f, acc = 0.f;
    for (int j = 0; j < len; ++j) {
      const float* kr = k + head + int64_t{j} * head_dim;
      float part = 0.f;
      for (int e = lane; e < head_dim; e += 32) part = fmaf(qr[e], kr[e], part);
      const float s = warp_sum(part);
      const float mn = fmaxf(m, s), alpha = expf(m - mn), p = expf(s - mn);
      m = mn;
      l = fmaf(l, alpha, p);
      const float vd = d < head_dim ? v[head + int64_t{j} * head_dim + d] : 0.f;
      acc = fmaf(acc, alpha, p * vd);
    }
    if (d < head_dim) dst[d] = acc / l;
  }
}

// ---- host ----

class VisionAttention final : public Implementation {
 public:
  ~VisionAttention() override {
    for (float* b : {q_, k_big_, k_small_, v_big_, v_small_, o_, part_o_})
      KB_CUDA_WARN(cudaFree(b));
    KB_CUDA_WARN(cudaFree(part_ml_));
  }

  Status setup(const ProblemInstance& p, cudaStream_t stream) override {
    x_ = input_index(p, "x");
    in_w_ = param_index(p, "attn.in_proj_weight");
    in_b_ = param_index(p, "attn.in_proj_bias");
    out_w_ = param_index(p, "attn.out_proj.weight");
    out_b_ = param_index(p, "attn.out_proj.bias");
    norm_w_ = param_index(p, "norm.weight");
    norm_b_ = param_index(p, "norm.bias");
    eps_ = static_cast<float>(p.number("norm", "eps"));
    const Shape& t = p.shape_of("tokens");  // (L, N, E)
    len_ = t[0], batch_ = t[1], embed_ = t[2];
    heads_ = p.int_attr("attn", "num_heads");
    if (heads_ <= 0 || embed_ % heads_ != 0)
      return Status::invalid_argument("L3_031 custom: E must be divisible by num_heads");
    head_dim_ = embed_ / heads_;
    // head_dim < 32 runs the flash kernel too, its q, k, v zero-padded to 32 dims (zeros add
    // nothing to q.k, and v's zero dims give O columns the epilogue skips); only head_dim > 32
    // takes the generic kernel.
    fast_ = head_dim_ <= kHd;
    hd_stride_ = fast_ ? kHd : head_dim_;
    if (len_ * batch_ * embed_ * 3 > INT32_MAX || batch_ * heads_ > 65535 || batch_ > 65535)
      return Status::failed_precondition("L3_031 custom: sizes exceed the index ranges");
    KB_ASSIGN_OR_RETURN(sms_, cuda::sm_count());
    KB_TRY(plan_epilogue());
    KB_CUDA_TRY(cudaFuncSetAttribute(flash_attention_kernel,
                                     cudaFuncAttributeMaxDynamicSharedMemorySize, kFlashSmem));
    plan_splits();
    const size_t bytes = static_cast<size_t>(len_ * batch_ * heads_ * hd_stride_) * sizeof(float);
    padded_bytes_ = hd_stride_ != head_dim_ ? bytes : 0;
    for (float** b : {&q_, &k_big_, &k_small_, &v_big_, &v_small_, &o_})
      KB_CUDA_TRY(cudaMalloc(b, bytes > 0 ? bytes : sizeof(float)));
    if (splits_ > 1) {
      KB_CUDA_TRY(cudaMalloc(&part_o_, static_cast<size_t>(splits_) * bytes));
      KB_CUDA_TRY(cudaMalloc(
          &part_ml_, static_cast<size_t>(splits_ * batch_ * heads_ * len_) * sizeof(float2)));
    }
    // Nothing writes the pad dims of q, k, v (head_dim < 32): zero them once, here.
    if (padded_bytes_ > 0) {
      for (float* b : {q_, k_big_, k_small_, v_big_, v_small_})
        KB_CUDA_TRY(cudaMemsetAsync(b, 0, padded_bytes_, stream));
      KB_CUDA_TRY(cudaStreamSynchronize(stream));
    }
    return Status::ok();
  }

  Status run(const ImplArgs& args, cudaStream_t stream) override {
    if (len_ == 0 || batch_ == 0 || embed_ == 0) return Status::ok();
    KB_TRY(project(args, stream));
    KB_TRY(attend(stream));
    const EpilogueArgs e{o_,
                         args.inputs[x_].data,
                         args.params[out_w_].data,
                         args.params[out_b_].data,
                         args.params[norm_w_].data,
                         args.params[norm_b_].data,
                         args.output.data,
                         static_cast<int>(len_),
                         static_cast<int>(embed_),
                         static_cast<int>(head_dim_),
                         static_cast<int>(hd_stride_),
                         eps_};
    const unsigned n = static_cast<unsigned>(batch_);
    if (epi_small_) {
      const dim3 grid(static_cast<unsigned>((len_ + kEpiSmallTok - 1) / kEpiSmallTok), n);
      out_proj_layernorm_small_kernel<<<grid, kEpiThreads, epi_smem_, stream>>>(e);
    } else {
      const dim3 grid(static_cast<unsigned>((len_ + kEpiTok - 1) / kEpiTok), n);
      out_proj_layernorm_kernel<<<grid, kEpiThreads, epi_smem_, stream>>>(e);
    }
    KB_CUDA_TRY(cudaGetLastError());
    return Status::ok();
  }

 private:
  // The 8-token epilogue where 32-token CTAs would not fill the SMs once (and W fits in shared
  // memory beside the tile).
  Status plan_epilogue() {
    const int embed = static_cast<int>(embed_);
    const int64_t grid32 = batch_ * ((len_ + kEpiTok - 1) / kEpiTok);
    epi_small_ = grid32 < sms_ && embed % 4 == 0 && epilogue_small_smem_bytes(embed) <= 227 * 1024;
    epi_smem_ = epi_small_ ? epilogue_small_smem_bytes(embed) : epilogue_smem_bytes(embed);
    if (epi_smem_ > 227 * 1024)
      return Status::failed_precondition("L3_031 custom: E too large for the epilogue tile");
    KB_CUDA_TRY(cudaFuncSetAttribute(
        epi_small_ ? out_proj_layernorm_small_kernel : out_proj_layernorm_kernel,
        cudaFuncAttributeMaxDynamicSharedMemorySize, epi_smem_));
    return Status::ok();
  }

  // Flash grid under one wave: split the keys so that about one CTA per SM runs (each split >= 1
  // tile of 64 keys), then attention_combine_kernel folds the splits.
  void plan_splits() {
    const int64_t tiles = (len_ + kBKV - 1) / kBKV;
    const int64_t grid = batch_ * heads_ * ((len_ + kBQ - 1) / kBQ);
    splits_ = 1;  // one split takes every tile (len_ < 2^31 keys: tiles fits an int)
    tiles_per_split_ = static_cast<int>(std::max<int64_t>(tiles, 1));
    if (!fast_ || tiles <= 1 || grid >= sms_) return;
    const int64_t want = std::min(tiles, (sms_ + grid - 1) / grid);
    tiles_per_split_ = static_cast<int>((tiles + want - 1) / want);
    splits_ = static_cast<int>((tiles + tiles_per_split_ - 1) / tiles_per_split_);
  }

  // Projection token tile: 64 unless that grid is under one wave, then the largest of 32, 16
  // that fills it (16 if none does).
  int proj_rows() const {
    const int64_t feat_tiles = (3 * embed_ + kProjFeat - 1) / kProjFeat;
    for (int rows : {4, 2})
      if (batch_ * feat_tiles * ((len_ + 16 * rows - 1) / (16 * rows)) >= sms_) return rows;
    return 1;
  }

  Status project(const ImplArgs& args, cudaStream_t stream) {
    const QkvArgs q{args.inputs[x_].data,
                    args.params[in_w_].data,
                    args.params[in_b_].data,
                    q_,
                    k_big_,
                    k_small_,
                    v_big_,
                    v_small_,
                    static_cast<int>(len_),
                    static_cast<int>(embed_),
                    static_cast<int>(heads_),
                    static_cast<int>(head_dim_),
                    static_cast<int>(hd_stride_),
                    static_cast<float>(std::sqrt(1.0 / static_cast<double>(head_dim_))),
                    fast_};
    const int rows = proj_rows();
    const dim3 grid(static_cast<unsigned>((len_ + 16 * rows - 1) / (16 * rows)),
                    static_cast<unsigned>((3 * embed_ + kProjFeat - 1) / kProjFeat),
                    static_cast<unsigned>(batch_));
    if (rows == 4) {
      qkv_projection_kernel<4><<<grid, kProjThreads, 0, stream>>>(q);
    } else if (rows == 2) {
      qkv_projection_kernel<2><<<grid, kProjThreads, 0, stream>>>(q);
    } else {
      qkv_projection_kernel<1><<<grid, kProjThreads, 0, stream>>>(q);
    }
    KB_CUDA_TRY(cudaGetLastError());
    return Status::ok();
  }

  Status attend(cudaStream_t stream) {
    const int len = static_cast<int>(len_), heads = static_cast<int>(heads_);
    const int embed = static_cast<int>(embed_);
    if (fast_) {
      // O's rows hold heads * 32 columns (the pad columns of a head_dim < 32 are zeros).
      const FlashArgs f{q_,  k_big_, k_small_,    v_big_,           v_small_, o_,
                        len, heads,  heads * kHd, tiles_per_split_, part_o_,  part_ml_};
      const dim3 grid(static_cast<unsigned>((len_ + kBQ - 1) / kBQ),
                      static_cast<unsigned>(batch_ * heads_), static_cast<unsigned>(splits_));
      flash_attention_kernel<<<grid, kFlashThreads, kFlashSmem, stream>>>(f);
      if (splits_ > 1) {
        KB_CUDA_TRY(cudaGetLastError());
        const int64_t rows = batch_ * heads_ * len_;
        const unsigned blocks = static_cast<unsigned>((rows * kHd + 255) / 256);
        attention_combine_kernel<<<blocks, 256, 0, stream>>>(f, splits_, rows);
      }
    } else {
      const int64_t rows = batch_ * heads_ * len_;
      const unsigned blocks = static_cast<unsigned>((rows + kGenWarps - 1) / kGenWarps);
      generic_attention_kernel<<<blocks, 32 * kGenWarps, 0, stream>>>(
          q_, k_big_, v_big_, o_, len, heads, static_cast<int>(head_dim_), embed, rows);
    }
    KB_CUDA_TRY(cudaGetLastError());
    return Status::ok();
  }

  size_t x_ = 0, in_w_ = 0, in_b_ = 0, out_w_ = 0, out_b_ = 0, norm_w_ = 0, norm_b_ = 0;
  float eps_ = 0;
  int64_t len_ = 0, batch_ = 0, embed_ = 0, heads_ = 1, head_dim_ = 0, hd_stride_ = 0;
  bool fast_ = false;
  bool epi_small_ = false;   // out_proj_layernorm_small_kernel
  size_t padded_bytes_ = 0;  // > 0: head_dim < 32, the pad dims of q, k, v zeroed in setup
  int epi_smem_ = 0, sms_ = 0;
  int splits_ = 1, tiles_per_split_ = 1;  // flash key splits (1: no partials), set by plan_splits
  float* part_o_ = nullptr;               // (splits, N*heads, L, 32) when splits_ > 1
  float2* part_ml_ = nullptr;             // (splits, N*heads, L)
  // owned workspaces (freed by the destructor): q, k, v head-major (N*heads, L, hd_stride);
  // o (N, L, heads * hd_stride)
  float *q_ = nullptr, *k_big_ = nullptr, *k_small_ = nullptr, *v_big_ = nullptr,
        *v_small_ = nullptr, *o_ = nullptr;
};

}  // namespace kb::custom::L3_031

KB_REGISTER_IMPLEMENTATION(L3_031, custom, kb::custom::L3_031::VisionAttention)
