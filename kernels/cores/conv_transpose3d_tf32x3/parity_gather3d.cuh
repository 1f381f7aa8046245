// A transposed convolution of rank 1 to 3 (groups 1) as one implicit GEMM per output phase class,
// in error-compensated TF32 (3xTF32) on mma.sync m16n8k8, gathering its A operand per tap. Used by
// the custom variant of L1_073, where it measured faster (2.12 ms) than the patch kernel of
// parity_gemm3d.cuh (2.68 ms; that one took L1_070 from 14.2 to 9.8 ms): L1_073's classes have
// only 1-8 taps, too few to amortize a patch per chunk. Layers it cannot take run the generic
// gather of ../conv_transpose_gather.
//
// Math, per axis (stride s, padding p, dilation d, kernel K; unit axes for rank < 3): write
// o + p = q*s + r (phase r < s). Tap t with t*d = j*s + r lands on phase r at input i = q - j.
// A class c = (r_d, r_h, r_w) has the taps T_c = T_d(r_d) x T_h(r_h) x T_w(r_w) (0 to 27 here):
//   y[n, co, o] = sum_{tap in T_c, ci} x[n, ci, q - j(tap)] * w[ci, co, t(tap)]
// So, per class, A (M x K): m = (n, q_d, q_h, q_w) over every q that reaches the output in some
// phase, k = (tap, ci); B_c (K x C_out) packed per call (weights are call inputs), zero past C_in
// and C_out. Inputs outside x are zero-filled copies; (q, r) outside the output is not stored.
//
// Tiles: CTA 512 (m) x kN (n = 8 kNT: 24 or 32 channels) x 16 (k = 16 channels of one tap), 8
// warps along m (warp tile 64 x kN), 3-stage cp.async pipeline (kernels/cores/tf32x3/mainloop.cuh
// with this file's loader and mma_stage): A by 4-byte gathers (thread tid
// owns pixels tid and tid + 256, 16 channels each), B by 16-byte rows. Shared rows are padded
// (stride = 8 mod 32 banks) so that the scalar fragment loads are conflict-free. Operands are
// split after the shared load: big = tf32_rna(v), small = tf32_rna(v - big), acc += a_s b_b +
// a_b b_s + a_b b_b (the L1_003 scheme, error ~fp32 level). Accumulators go straight to y.
//
// Thread safety: stateless kernels; one ParityConvTranspose3d per thread at a time.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "common/cuda/cuda_check.h"
#include "common/problem_spec.h"
#include "common/status.h"
#include "kernels/cores/conv_transpose_gather/gather.cuh"
#include "kernels/cores/tf32x3/mainloop.cuh"
#include "kernels/cores/tf32x3/mma.cuh"
#include "kernels/implementation.h"

namespace kb::custom::ct3d_gather {

constexpr int kAxes = 3;
constexpr int kMaxStride = 2;  // phases per axis the tables hold
constexpr int kMaxJ = 3;       // taps per axis and phase
constexpr int kMaxClasses = kMaxStride * kMaxStride * kMaxStride;
constexpr int kMaxClassTaps = kMaxJ * kMaxJ * kMaxJ;
constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kWarpM = 64;                           // m rows per warp
constexpr int kMT = kWarpM / 16;                     // m16 tiles per warp
constexpr int kTileM = kWarps * kWarpM;              // 512
constexpr int kPixelsPerThread = kTileM / kThreads;  // 2
constexpr int kBK = 16;                              // channels (k) per stage, one tap
constexpr int kStages = 3;
constexpr int kStrideA = kTileM + 8;  // shared A row [k][m], 520 = 8 mod 32
static_assert(kTileM % kThreads == 0, "whole pixels per thread");
static_assert(kBK % 8 == 0, "k8 MMA steps");
static_assert(kStrideA % 32 == 8, "A fragment loads t*stride + g hit 32 distinct banks");

// B row stride [k][n]: a multiple of 4 (16-byte copies), 8 or 24 mod 32 (conflict-free).
constexpr int b_stride(int n) {
  return n % 32 == 8 || n % 32 == 24 ? n : n + 8;
}
template <int kNT>
struct Tiles {
  static constexpr int kN = 8 * kNT;
  static constexpr int kStrideB = b_stride(kN);
  static constexpr int kStageFloats = kBK * kStrideA + kBK * kStrideB;
  static constexpr int kSmemBytes = kStages * kStageFloats * 4;
  static constexpr int kBVectors = kBK * kN / 4;  // 16-byte B copies per stage
  static_assert(kStrideB % 4 == 0 && (kStrideB % 32 == 8 || kStrideB % 32 == 24), "B banks");
  static_assert(kBVectors <= kThreads, "one B copy per thread at most");
  static_assert(2 * kSmemBytes <= 227 * 1024, "two CTAs per SM");
};

// ---- the plan (host-built, passed by value) ----

struct Axis {
  int stride = 1, pad = 0, in = 1, out = 1;
  int q_lo = 0, q_count = 1;      // q in [q_lo, q_lo + q_count) reaches the output
  int taps[kMaxStride] = {};      // taps of phase r
  int j[kMaxStride][kMaxJ] = {};  // input offset of tap i of phase r
  int t[kMaxStride][kMaxJ] = {};  // kernel index of tap i of phase r
};

struct Plan {
  Axis ax[kAxes];  // d, h, w
  int batch = 0, c_in = 0, c_out = 0, k[kAxes] = {1, 1, 1};
  int classes = 1, chunks = 1, n_tiles = 1, n_pad = 8;
  int64_t m_total = 0, m_tiles = 0;
  int64_t b_offset[kMaxClasses] = {};  // packed B of class c: [tap][chunks * kBK][n_pad]
  int64_t b_floats = 0;
  __host__ __device__ int k_pad() const { return chunks * kBK; }
  __host__ __device__ int64_t in_plane() const { return int64_t{ax[0].in} * ax[1].in * ax[2].in; }
  __host__ __device__ int64_t out_plane() const {
    return int64_t{ax[0].out} * ax[1].out * ax[2].out;
  }
  __host__ __device__ int phase(int cls, int a) const {  // class = (r_d, r_h, r_w), w fastest
    if (a == 2) return cls % ax[2].stride;
    if (a == 1) return cls / ax[2].stride % ax[1].stride;
    return cls / (ax[2].stride * ax[1].stride);
  }
  __host__ __device__ int class_taps(int cls) const {
    return ax[0].taps[phase(cls, 0)] * ax[1].taps[phase(cls, 1)] * ax[2].taps[phase(cls, 2)];
  }
  // Tap ti of class cls, split per axis: i[a] indexes Axis::j / Axis::t of the class's phase.
  __host__ __device__ void tap_of(int cls, int ti, int (&i)[kAxes]) const {
    const int nw = ax[2].taps[phase(cls, 2)], nh = ax[1].taps[phase(cls, 1)];
    i[2] = ti % nw, i[1] = ti / nw % nh, i[0] = ti / (nw * nh);
  }
};

inline Status not_taken(const std::string& why) {
  return Status::failed_precondition("ct3d parity GEMM: " + why);
}

inline Result<Axis> plan_axis(const gather::ConvTransposeGeometry& g, int a) {
  const int64_t s = g.stride[a], p = g.padding[a], d = g.dilation[a], k = g.kernel[a];
  if (s > kMaxStride) return not_taken("stride above 2");
  constexpr int64_t kLimit = int64_t{1} << 20;
  if (g.in[a] >= kLimit || g.out[a] >= kLimit || p >= kLimit || k * d >= kLimit)
    return not_taken("large sizes");
  Axis ax;
  ax.stride = static_cast<int>(s), ax.pad = static_cast<int>(p);
  ax.in = static_cast<int>(g.in[a]), ax.out = static_cast<int>(g.out[a]);
  ax.q_lo = static_cast<int>(p / s);
  ax.q_count = static_cast<int>((g.out[a] - 1 + p) / s - p / s + 1);
  for (int64_t t = 0; t < k; ++t) {
    const int r = static_cast<int>(t * d % s);
    if (ax.taps[r] == kMaxJ) return not_taken("more than 3 taps per axis and phase");
    ax.j[r][ax.taps[r]] = static_cast<int>(t * d / s);
    ax.t[r][ax.taps[r]++] = static_cast<int>(t);
  }
  return ax;
}

inline Result<Plan> plan_parity_gemm(const gather::ConvTransposeGeometry& g, int n_width) {
  if (g.groups != 1) return not_taken("groups != 1");
  Plan p;
  for (int a = 0; a < kAxes; ++a) {
    Result<Axis> ax = plan_axis(g, a);
    if (!ax.is_ok()) return ax.status();
    p.ax[a] = ax.value();
    p.k[a] = static_cast<int>(g.kernel[a]);
    p.classes *= p.ax[a].stride;
  }
  constexpr int64_t kIntMax = 0x7fffffff;
  if (g.in_channels >= (1 << 20) || g.out_channels >= (1 << 20) || g.batch >= kIntMax)
    return not_taken("too many channels");
  p.batch = static_cast<int>(g.batch);
  p.c_in = static_cast<int>(g.in_channels), p.c_out = static_cast<int>(g.out_channels);
  p.chunks = (p.c_in + kBK - 1) / kBK;
  p.n_tiles = (p.c_out + n_width - 1) / n_width;
  p.n_pad = p.n_tiles * n_width;
  p.m_total = g.batch * p.ax[0].q_count * p.ax[1].q_count * p.ax[2].q_count;
  p.m_tiles = (p.m_total + kTileM - 1) / kTileM;
  if (p.m_total >= kIntMax - kTileM || p.m_tiles * p.n_tiles * p.classes >= kIntMax)
    return not_taken("too many tiles");
  for (int c = 0; c < p.classes; ++c) {
    p.b_offset[c] = p.b_floats;
    p.b_floats += int64_t{p.class_taps(c)} * p.k_pad() * p.n_pad;
  }
  return p;
}

// ---- device primitives (as L1_003's tf32x3_gemm.cuh) ----

// 3xTF32 and cp.async primitives: kernels/cores/tf32x3/mma.cuh.
using ::kb::tf32x3::cp_async_16;
using ::kb::tf32x3::cp_async_4;
using ::kb::tf32x3::mma3_k8;
using ::kb::tf32x3::mma_tf32;
using ::kb::tf32x3::split_tf32;
using ::kb::tf32x3::split_tf32_frag;
using ::kb::tf32x3::SplitTf32;
using ::kb::tf32x3::tf32_rna_bits;

// ---- weight pack: b[cls][tap][ci < k_pad][n < n_pad] = w[ci, n, t_d, t_h, t_w] or 0 ----

template <int kBlock>
__global__ void __launch_bounds__(kBlock)
    pack_weights_kernel(const float* __restrict__ w, float* __restrict__ b, const Plan p) {
  const int64_t per_tap = int64_t{p.k_pad()} * p.n_pad;
  const int64_t total = int64_t{p.classes} * kMaxClassTaps * per_tap;
  for (int64_t e = int64_t{blockIdx.x} * kBlock + threadIdx.x; e < total;
       e += int64_t{gridDim.x} * kBlock) {
    const int n = static_cast<int>(e % p.n_pad), ci = static_cast<int>(e / p.n_pad % p.k_pad());
    const int ti = static_cast<int>(e / per_tap % kMaxClassTaps);
    const int cls = static_cast<int>(e / (per_tap * kMaxClassTaps));
    if (ti >= p.class_taps(cls)) continue;
    int i[kAxes];
    p.tap_of(cls, ti, i);
    int64_t src = ci < p.c_in && n < p.c_out ? int64_t{ci} * p.c_out + n : -1;
    for (int a = 0; a < kAxes && src >= 0; ++a)
      src = src * p.k[a] + p.ax[a].t[p.phase(cls, a)][i[a]];
    b[p.b_offset[cls] + ti * per_tap + int64_t{ci} * p.n_pad + n] = src < 0 ? 0.0f : w[src];
  }
}

// ---- the GEMM kernel ----

struct GemmParams {
  Plan plan;
  const float* x;  // (N, C_in, D, H, W)
  const float* b;  // packed weights
  float* y;        // (N, C_out, D_out, H_out, W_out)
};

struct TileIds {
  int cls, n0, m0;
};
__device__ __forceinline__ TileIds tile_ids(const Plan& p, int kN) {
  const int64_t block = blockIdx.x;
  const int64_t rest = block / p.classes;
  return {static_cast<int>(block % p.classes), static_cast<int>(rest % p.n_tiles) * kN,
          static_cast<int>(rest / p.n_tiles) * kTileM};
}

// Pixel m of the class grid: (n, q_d, q_h, q_w) in absolute q units.
struct Pixel {
  int n, q[kAxes];
};
__host__ __device__ inline Pixel pixel_of(const Plan& p, int m) {  // m < 2^31 - kTileM
  Pixel px;
  for (int a = kAxes - 1; a >= 0; --a) {
    px.q[a] = p.ax[a].q_lo + static_cast<int>(m % p.ax[a].q_count);
    m /= p.ax[a].q_count;
  }
  px.n = static_cast<int>(m);
  return px;
}

// A copy state of one of the thread's pixels.
struct ASource {
  const float* image;  // x at (n, 0, 0, 0, 0)
  int q[kAxes];
  bool ok;  // the pixel is in M
};

// One stage: k-tile kt = (tap kt / chunks, channels 16 (kt % chunks) ..).
template <int kNT>
__device__ __forceinline__ void load_stage(const GemmParams& g, const TileIds& t,
                                           const ASource (&src)[kPixelsPerThread], int kt,
                                           uint32_t stage) {
  using T = Tiles<kNT>;
  const Plan& p = g.plan;
  const int ti = kt / p.chunks, c0 = kt % p.chunks * kBK;
  int i[kAxes];
  p.tap_of(t.cls, ti, i);
  int j[kAxes];
  for (int a = 0; a < kAxes; ++a) j[a] = p.ax[a].j[p.phase(t.cls, a)][i[a]];
  const int64_t plane = p.in_plane();
#pragma unroll
  for (int u = 0; u < kPixelsPerThread; ++u) {
    const int i0 = src[u].q[0] - j[0], i1 = src[u].q[1] - j[1], i2 = src[u].q[2] - j[2];
    const bool inside = src[u].ok && i0 >= 0 && i0 < p.ax[0].in && i1 >= 0 && i1 < p.ax[1].in &&
                        i2 >= 0 && i2 < p.ax[2].in;
    const float* base =
        inside ? src[u].image + (int64_t{i0} * p.ax[1].in + i1) * p.ax[2].in + i2 + c0 * plane
               : g.x;
    const uint32_t dst = stage + (threadIdx.x + u * kThreads) * 4;
#pragma unroll
    for (int c = 0; c < kBK; ++c) {
      const bool ok = inside && c0 + c < p.c_in;
      cp_async_4(dst + c * kStrideA * 4, ok ? base + c * plane : g.x, ok);
    }
  }
  if (threadIdx.x < T::kBVectors) {
    const int row = threadIdx.x / (T::kN / 4), col = threadIdx.x % (T::kN / 4) * 4;
    const float* bsrc =
        g.b + p.b_offset[t.cls] + (int64_t{ti} * p.k_pad() + c0 + row) * p.n_pad + t.n0 + col;
    cp_async_16(stage + (kBK * kStrideA + row * T::kStrideB + col) * 4, bsrc);
  }
}

// acc += the 3xTF32 product of one stage. Fragments (g = lane / 4, t = lane % 4): a0 (m g, k t),
// a1 (g + 8, t), a2 (g, t + 4), a3 (g + 8, t + 4); b0 (k t, n g), b1 (k t + 4, n g).
template <int kNT>
__device__ __forceinline__ void mma_stage(const float* stage, int warp, int lane,
                                          float (&acc)[kMT][kNT][4]) {
  using T = Tiles<kNT>;
  const int g = lane / 4, tq = lane % 4;
  const float* as = stage + tq * kStrideA + warp * kWarpM + g;
  const float* bs = stage + kBK * kStrideA + tq * T::kStrideB + g;
#pragma unroll
  for (int s = 0; s < kBK / 8; ++s) {
    uint32_t b_big[kNT][2], b_small[kNT][2];
#pragma unroll
    for (int nt = 0; nt < kNT; ++nt)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const SplitTf32 v = split_tf32(bs[(8 * s + 4 * h) * T::kStrideB + 8 * nt]);
        b_big[nt][h] = v.big, b_small[nt][h] = v.small;
      }
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt) {
      const float* a = as + 8 * s * kStrideA + 16 * mt;
      const float src[4] = {a[0], a[8], a[4 * kStrideA], a[4 * kStrideA + 8]};
      uint32_t a_big[4], a_small[4];
      split_tf32_frag(src, a_big, a_small);
      mma3_k8(acc[mt], a_big, a_small, b_big, b_small);  // small terms first
    }
  }
}

// y index of (n, 0, o) for pixel m of class cls, or -1 when outside M or the output.
__host__ __device__ inline int64_t output_pixel(const Plan& p, int cls, int m) {
  if (m >= p.m_total) return -1;
  const Pixel px = pixel_of(p, m);
  int64_t at = 0;
  for (int a = 0; a < kAxes; ++a) {
    const int o = px.q[a] * p.ax[a].stride + p.phase(cls, a) - p.ax[a].pad;
    if (o < 0 || o >= p.ax[a].out) return -1;
    at = at * p.ax[a].out + o;
  }
  return int64_t{px.n} * p.c_out * p.out_plane() + at;
}

// c0 (m g, n 2t), c1 (g, 2t + 1), c2 (g + 8, 2t), c3 (g + 8, 2t + 1).
template <int kNT>
__device__ __forceinline__ void store_acc(const GemmParams& g, const TileIds& t, int warp, int lane,
                                          const float (&acc)[kMT][kNT][4]) {
  const int64_t plane = g.plan.out_plane();
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int m = t.m0 + warp * kWarpM + 16 * mt + 8 * h + lane / 4;
      const int64_t at = output_pixel(g.plan, t.cls, m);
      if (at < 0) continue;
#pragma unroll
      for (int nt = 0; nt < kNT; ++nt)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const int co = t.n0 + 8 * nt + 2 * (lane % 4) + e;
          if (co < g.plan.c_out) g.y[at + co * plane] = acc[mt][nt][2 * h + e];
        }
    }
}

template <int kNT>
__global__ void __launch_bounds__(kThreads, 2) parity_gemm3d_kernel(const GemmParams g) {
  using T = Tiles<kNT>;
  extern __shared__ __align__(128) float smem[];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const Plan& p = g.plan;
  const TileIds t = tile_ids(p, T::kN);
  ASource src[kPixelsPerThread];
#pragma unroll
  for (int u = 0; u < kPixelsPerThread; ++u) {
    const int m = t.m0 + static_cast<int>(threadIdx.x) + u * kThreads;
    const Pixel px = pixel_of(p, m);
    src[u] = {
        g.x + int64_t{px.n} * p.c_in * p.in_plane(), {px.q[0], px.q[1], px.q[2]}, m < p.m_total};
  }
  float acc[kMT][kNT][4];
  tf32x3::mainloop<kStages, T::kStageFloats>(
      smem, p.class_taps(t.cls) * p.chunks, acc,
      [&](uint32_t stage, int kt) { load_stage<kNT>(g, t, src, kt, stage); },
      [&](const float* stage, float(&c)[kMT][kNT][4]) { mma_stage<kNT>(stage, warp, lane, c); });
  store_acc<kNT>(g, t, warp, lane, acc);
}

// ---- the custom variant ----

// Runs conv_transpose node `node` (input x_name, weight w_name) as the parity GEMM when the plan
// applies, else as the generic gather. Channel tiles of 24 when C_out <= 24, else of 32.
class ParityConvTranspose3d : public Implementation {
 public:
  ParityConvTranspose3d(const char* node, const char* x_name, const char* w_name)
      : node_(node), x_name_(x_name), w_name_(w_name) {}
  ~ParityConvTranspose3d() override {
    if (packed_ != nullptr) cudaFree(packed_);
  }

  Status setup(const ProblemInstance& p, cudaStream_t /*stream*/) override {
    Result<gather::ConvTransposeGeometry> g = gather::read_conv_transpose(p, node_);
    if (!g.is_ok()) return g.status();
    geometry_ = g.value();
    x_ = input_index(p, x_name_);
    w_ = param_index(p, w_name_);
    fast_ = false;
    if (gather::generic_is_faster(geometry_)) return Status::ok();  // the gather is faster here
    narrow_ = geometry_.out_channels <= Tiles<3>::kN;
    Result<Plan> plan = plan_parity_gemm(geometry_, narrow_ ? Tiles<3>::kN : Tiles<4>::kN);
    fast_ = plan.is_ok();
    if (!fast_) return Status::ok();
    plan_ = plan.value();
    KB_CUDA_TRY(cudaMalloc(
        &packed_, static_cast<size_t>(std::max<int64_t>(plan_.b_floats, 4)) * sizeof(float)));
    return narrow_ ? allow<3>() : allow<4>();
  }

  Status run(const ImplArgs& args, cudaStream_t stream) override {
    const float* x = args.inputs[x_].data;
    const float* w = args.params[w_].data;
    if (!fast_) return gather::launch_generic(x, w, args.output.data, geometry_, stream);
    const int64_t pack_total = int64_t{plan_.classes} * kMaxClassTaps * plan_.k_pad() * plan_.n_pad;
    const int64_t pack_blocks = std::min<int64_t>((pack_total + 255) / 256, int64_t{1} << 16);
    pack_weights_kernel<256>
        <<<static_cast<unsigned>(pack_blocks), 256, 0, stream>>>(w, packed_, plan_);
    KB_CUDA_TRY(cudaGetLastError());
    const GemmParams gp{plan_, x, packed_, args.output.data};
    return narrow_ ? launch<3>(gp, stream) : launch<4>(gp, stream);
  }

 private:
  template <int kNT>
  Status allow() {
    KB_CUDA_TRY(cudaFuncSetAttribute(parity_gemm3d_kernel<kNT>,
                                     cudaFuncAttributeMaxDynamicSharedMemorySize,
                                     Tiles<kNT>::kSmemBytes));
    KB_CUDA_TRY(cudaFuncSetAttribute(parity_gemm3d_kernel<kNT>,
                                     cudaFuncAttributePreferredSharedMemoryCarveout,
                                     cudaSharedmemCarveoutMaxShared));
    return Status::ok();
  }
  template <int kNT>
  Status launch(const GemmParams& gp, cudaStream_t stream) {
    const int64_t blocks = plan_.m_tiles * plan_.n_tiles * plan_.classes;
    parity_gemm3d_kernel<kNT>
        <<<static_cast<unsigned>(blocks), kThreads, Tiles<kNT>::kSmemBytes, stream>>>(gp);
    KB_CUDA_TRY(cudaGetLastError());
    return Status::ok();
  }

  const char* node_;
  const char* x_name_;
  const char* w_name_;
  gather::ConvTransposeGeometry geometry_;
  size_t x_ = 0, w_ = 0;
  bool fast_ = false, narrow_ = false;
  Plan plan_;
  float* packed_ = nullptr;
};

}  // namespace kb::custom::ct3d_gather
