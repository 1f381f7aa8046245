// A 2-D transposed convolution (groups 1, at most 2 taps per axis and phase) as implicit GEMMs
// with error-compensated TF32 (3xTF32) on mma.sync m16n8k8, with a fused epilogue supplied by
// the caller. Used by the custom variants of L2_091 and L2_093.
//
// Owns: the host planner (plan_parity_gemm: geometry -> ParityPlan, or why not), the weight pack
// kernel, the GEMM kernel template and the epilogue helpers. The math and the index maps are in
// parity_plan.cuh. Launch and fallbacks live in each custom.cu.
//
// Kernel: one CTA per (128 pixels of the q grid, 128 output channels, phase class), 3-stage
// cp.async pipeline (kernels/cores/tf32x3/mainloop.cuh, with this file's loader and mma_stage)
// over k-tiles of 8 input channels x 4 taps (A: 4-byte copies gathered from x
// with zero fill at the borders; B: 16-byte copies of the packed weights), 8 warps of 64 x 32,
// 2 CTAs per SM (96 KB shared, 128 registers). Operands split in registers after the shared
// load: big = tf32_rna(v), small = tf32_rna(v - big); acc += a_s b_b + a_b b_s + a_b b_b (the
// L1_003 scheme; error ~fp32 level). After the main loop the accumulators go to a shared C tile
// [channel][pixel]; Epilogue::operator()(p, tile, smem, rows) turns it into outputs, usually
// through store_tile (a warp per channel row, lanes along the pixels).
//
// Thread safety: stateless.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "common/status.h"
#include "kernels/cores/conv_transpose2d_tf32x3/parity_plan.cuh"
#include "kernels/cores/conv_transpose_gather/gather.cuh"
#include "kernels/cores/tf32x3/mainloop.cuh"
#include "kernels/cores/tf32x3/mma.cuh"

namespace kb::custom::parity_gemm {

constexpr int kStages = 3;
constexpr int kStageFloats = 2 * kBK * kTile;                            // A then B
constexpr int kSmemBytes = kStages * kStageFloats * 4;                   // 98,304
constexpr int kEpilogueFloats = kStages * kStageFloats - kTile * kTile;  // after the C tile
static_assert(kSmemBytes * 2 <= 227 * 1024, "two CTAs per SM");

// ---- host planning ----

inline Status not_taken(const std::string& why) {
  return Status::failed_precondition("parity GEMM: " + why);
}

// Axis a (0: h, 1: w of the 2-D layer) of g, or why the fast path cannot take it.
inline Result<AxisPlan> plan_axis(const gather::ConvTransposeGeometry& g, int a) {
  const int s3 = gather::kSpatial - 2 + a;
  const int64_t s = g.stride[s3], p = g.padding[s3], d = g.dilation[s3], k = g.kernel[s3];
  if (s > kMaxStride) return not_taken("stride above 4");
  if ((k - 1) * d / s + 1 > kTaps) return not_taken("more than 2 taps per phase");
  const int64_t q_lo = p / s, q_hi = (g.out[s3] - 1 + p) / s;
  constexpr int64_t kLimit = int64_t{1} << 24;
  if (g.in[s3] >= kLimit || g.out[s3] >= kLimit || p >= kLimit) return not_taken("large sizes");
  AxisPlan ap;
  ap.stride = static_cast<int>(s), ap.pad = static_cast<int>(p);
  ap.in = static_cast<int>(g.in[s3]), ap.out = static_cast<int>(g.out[s3]);
  ap.q_lo = static_cast<int>(q_lo), ap.q_count = static_cast<int>(q_hi - q_lo + 1);
  for (int r = 0; r < kMaxStride; ++r)
    for (int j = 0; j < kTaps; ++j) {
      const int64_t td = int64_t{j} * s + r;  // t * d of the tap landing on (r, j)
      ap.tap[r][j] = r < s && td % d == 0 && td / d < k ? static_cast<int>(td / d) : -1;
    }
  return ap;
}

// The plan for g, or failed_precondition saying why the fast path does not apply. Epilogues
// that need all channels of a pixel in one CTA pass max_c_out = kTile.
inline Result<ParityPlan> plan_parity_gemm(const gather::ConvTransposeGeometry& g,
                                           int64_t max_c_out) {
  if (g.rank != 2) return not_taken("not a 2-D layer");
  if (g.groups != 1) return not_taken("groups != 1");
  if (g.out_channels > max_c_out) return not_taken("too many channels for one tile");
  Result<AxisPlan> h = plan_axis(g, 0), w = plan_axis(g, 1);
  if (!h.is_ok()) return h.status();
  if (!w.is_ok()) return w.status();
  ParityPlan p;
  p.h = h.value(), p.w = w.value();
  const int64_t m_total = g.batch * p.h.q_count * p.w.q_count;
  constexpr int64_t kIntMax = 0x7fffffff;
  if (g.in_channels * p.in_plane() >= kIntMax || g.out_channels >= kIntMax / kTile ||
      m_total >= kIntMax - kTile || g.in_channels >= kIntMax / kBK)
    return not_taken("sizes need 64-bit indexing");
  p.batch = static_cast<int>(g.batch), p.c_in = static_cast<int>(g.in_channels);
  p.c_out = static_cast<int>(g.out_channels);
  p.k_h = static_cast<int>(g.kernel[1]), p.k_w = static_cast<int>(g.kernel[2]);
  p.classes = p.h.stride * p.w.stride;
  p.k_tiles = (p.c_in + kChannelsPerStage - 1) / kChannelsPerStage;
  p.n_tiles = (p.c_out + kTile - 1) / kTile;
  p.m_total = static_cast<int>(m_total);
  p.m_tiles = (p.m_total + kTile - 1) / kTile;
  if (p.blocks() >= kIntMax) return not_taken("too many tiles");
  return p;
}

inline size_t packed_weight_floats(const ParityPlan& p) {
  return static_cast<size_t>(p.classes) * p.k_pad() * p.n_pad();
}

// ---- device primitives (from L1_003's tf32x3_gemm.cuh) ----

// 3xTF32 and cp.async primitives: kernels/cores/tf32x3/mma.cuh.
using ::kb::tf32x3::cp_async_16;
using ::kb::tf32x3::cp_async_4;
using ::kb::tf32x3::mma3_k8;
using ::kb::tf32x3::mma3_k8_promoted;
using ::kb::tf32x3::mma_tf32;
using ::kb::tf32x3::split_tf32;
using ::kb::tf32x3::split_tf32_frag;
using ::kb::tf32x3::SplitTf32;
using ::kb::tf32x3::tf32_rna_bits;

// ---- weight pack: b[cls][k][n] (see packed_weight_source) ----

// A template so that both including files may instantiate it without a duplicate host stub.
template <int kBlock>
__global__ void __launch_bounds__(kBlock)
    pack_weights_kernel(const float* __restrict__ w, float* __restrict__ b, const ParityPlan p) {
  const int64_t total = int64_t{p.classes} * p.k_pad() * p.n_pad();
  for (int64_t e = int64_t{blockIdx.x} * kBlock + threadIdx.x; e < total;
       e += int64_t{gridDim.x} * kBlock) {
    const int n = static_cast<int>(e % p.n_pad());
    const int64_t rest = e / p.n_pad();
    const int64_t src = packed_weight_source(p, static_cast<int>(rest / p.k_pad()),
                                             static_cast<int>(rest % p.k_pad()), n);
    b[e] = src < 0 ? 0.0f : w[src];
  }
}

// ---- GEMM kernel ----

struct GemmParams {
  ParityPlan plan;
  const float* x;  // (N, C_in, H, W)
  const float* b;  // packed weights (classes, k_pad, n_pad)
  float* y;        // (N, C_out, H_out, W_out)
};

// One thread's copies of a stage: A from its pixel (4-byte, zero-filled), B 16-byte rows. The
// pointer form of a_copy_source: copy j reads a[j % 2] + (j / 2) * H * W.
struct StageLoader {
  const float* a[kTaps];  // x at (n, first channel of the current k-tile, ih, iw) of offset jh
  uint32_t a_ok;          // bit jh: (ih, iw) inside x and the pixel in M
  int c_left;             // C_in - first channel of the current k-tile
  const float* b;  // packed B at (cls, k = b_copy_row(tid, 0) of the current k-tile, n0 + col)
  int a_smem, b_smem;
};

__device__ __forceinline__ StageLoader make_loader(const GemmParams& p, const Tile& t) {
  const int tid = threadIdx.x;
  const ASource s = a_source(p.plan, t, tid);
  const int64_t b_row = int64_t{t.cls} * p.plan.k_pad() + b_copy_row(tid, 0);
  return {{p.x + s.image + s.off[0], p.x + s.image + s.off[1]},
          s.ok,
          p.plan.c_in,
          p.b + b_row * p.plan.n_pad() + t.n0 + b_copy_col(tid),
          a_copy_smem(tid, 0),
          b_smem_index(b_copy_row(tid, 0), b_copy_col(tid))};
}

// The A half of a stage (A sits first in every stage, wide or narrow): the copies, then (after
// the B copies, to keep the issue order) the move of the cursor to the next k-tile. plane = H W.
__device__ __forceinline__ void copy_a_stage(const GemmParams& p, const StageLoader& l,
                                             int64_t plane, uint32_t stage) {
#pragma unroll
  for (int j = 0; j < kACopies; ++j) {
    const bool ok = ((l.a_ok >> (j % 2)) & 1u) && j / 2 < l.c_left;
    cp_async_4(stage + a_copy_fast(l.a_smem, j) * 4, ok ? l.a[j % 2] + (j / 2) * plane : p.x, ok);
  }
}
__device__ __forceinline__ void advance_a(StageLoader& l, int64_t plane) {
#pragma unroll
  for (int jh = 0; jh < kTaps; ++jh) l.a[jh] += kChannelsPerStage * plane;
  l.c_left -= kChannelsPerStage;
}

__device__ __forceinline__ void load_stage(const GemmParams& p, StageLoader& l, uint32_t stage) {
  const int64_t plane = p.plan.in_plane();
  copy_a_stage(p, l, plane, stage);
#pragma unroll
  for (int j = 0; j < kBCopies; ++j)
    cp_async_16(stage + (kBK * kTile + l.b_smem + 8 * j * kTile) * 4, l.b + 8 * j * p.plan.n_pad());
  advance_a(l, plane);
  l.b += int64_t{kBK} * p.plan.n_pad();
}

// The A fragments of m-tiles 2 v and 2 v + 1 at k8 step s from the stage (two float4 loads at
// a_frag_fast), each split into big and small TF32 and passed to mma(mm, a_big, a_small), mm = 0,
// 1: a0 (row g, k t), a1 (g + 8, t), a2 (g, t + 4), a3 (g + 8, t + 4). The wide tile's mainloop
// and narrow_gemm.cuh's share it.
template <class Mma>
__device__ __forceinline__ void for_a_frag_pair(const float* stage, int a_base, int s, int v,
                                                const Mma& mma) {
  const float4 k0 = *reinterpret_cast<const float4*>(stage + a_frag_fast(a_base, s, 0, v));
  const float4 k1 = *reinterpret_cast<const float4*>(stage + a_frag_fast(a_base, s, 1, v));
  const float lo[4] = {k0.x, k0.y, k0.z, k0.w}, hi[4] = {k1.x, k1.y, k1.z, k1.w};
#pragma unroll
  for (int mm = 0; mm < 2; ++mm) {
    const float src[4] = {lo[2 * mm], lo[2 * mm + 1], hi[2 * mm], hi[2 * mm + 1]};
    uint32_t a_big[4], a_small[4];
    split_tf32_frag(src, a_big, a_small);
    mma(mm, a_big, a_small);
  }
}

// acc += the 3xTF32 product of one stage; A split one m-tile pair (one float4 per k) at a time.
// kPromoted: each k8 step's three MMAs sum in a fresh accumulator added to acc by FADD
// (tf32x3::mma3_k8_promoted), for epilogues that need fp32-level absolute accuracy of sums whose
// terms are much larger than the result (see Epilogue::kPromoted below).
template <bool kPromoted>
__device__ __forceinline__ void mma_stage(const float* stage, int a_base, int b_base,
                                          float (&acc)[4][4][4]) {
#pragma unroll 1  // unrolled, ptxas hoists the next step's loads past the register budget
  for (int s = 0; s < kBK / 8; ++s) {
    uint32_t b_big[4][2], b_small[4][2];
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      tf32x3::split_tf32_b_quad(*reinterpret_cast<const float4*>(stage + b_frag_fast(b_base, s, i)),
                                i, b_big, b_small);
    }
#pragma unroll
    for (int v = 0; v < 2; ++v) {
      for_a_frag_pair(
          stage, a_base, s, v, [&](int mm, const uint32_t(&a_big)[4], const uint32_t(&a_small)[4]) {
            if constexpr (kPromoted)  // one n8 tile at a time, unchained: the fastest of 4 forms
              mma3_k8_promoted<4, 1, false>(acc[2 * v + mm], a_big, a_small, b_big, b_small);
            else
              mma3_k8(acc[2 * v + mm], a_big, a_small, b_big, b_small);  // small terms first
          });
    }
  }
}

// The accumulators into the C tile (channel-major): two float4 per (n-tile, column half).
__device__ __forceinline__ void stash_tile(float* c_tile, int warp_m, int warp_n, int lane,
                                           const float (&acc)[4][4][4]) {
#pragma unroll
  for (int nt = 0; nt < 4; ++nt)
#pragma unroll
    for (int e1 = 0; e1 < 2; ++e1)
#pragma unroll
      for (int v = 0; v < 2; ++v) {
        const int at = c_smem_index(acc_col(warp_n, lane, nt, e1), acc_row(warp_m, lane, 2 * v, 0));
        *reinterpret_cast<float4*>(c_tile + at) =
            make_float4(acc[2 * v][nt][e1], acc[2 * v][nt][2 + e1], acc[2 * v + 1][nt][e1],
                        acc[2 * v + 1][nt][2 + e1]);
      }
}

// The output pixels a lane stores: m = lane + 32 i of the tile (the same for every warp).
struct OutputRows {
  int64_t pixel[4];  // y index of (n, 0, oh, ow)
  uint32_t ok;       // bit i: in M and inside the output for this phase class
};
__host__ __device__ inline OutputRows output_rows(const ParityPlan& p, const Tile& t, int lane) {
  OutputRows r{{0, 0, 0, 0}, 0u};
  for (int i = 0; i < 4; ++i) {
    const int m = t.m0 + lane + 32 * i;
    if (m >= p.m_total) continue;
    const Pixel px = pixel_of(p, m);
    const int oh = px.qh * p.h.stride + t.rh - p.h.pad, ow = px.qw * p.w.stride + t.rw - p.w.pad;
    if (oh < 0 || oh >= p.h.out || ow < 0 || ow >= p.w.out) continue;
    r.pixel[i] = int64_t{px.n} * p.c_out * p.out_plane() + int64_t{oh} * p.w.out + ow;
    r.ok |= 1u << i;
  }
  return r;
}

// y[n, co, oh, ow] = f(co, C(co - n0, m), m) for the tile's valid channels and pixels.
template <class F>
__device__ __forceinline__ void store_tile(const GemmParams& p, const Tile& t, const float* c_tile,
                                           const OutputRows& rows, F f) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int count = min(kTile, p.plan.c_out - t.n0);
  for (int cl = warp; cl < count; cl += kThreads / 32) {
    float* plane = p.y + int64_t{t.n0 + cl} * p.plan.out_plane();
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int m = lane + 32 * i;
      if ((rows.ok >> i) & 1u) plane[rows.pixel[i]] = f(t.n0 + cl, c_tile[c_smem_index(cl, m)], m);
    }
  }
}

// Epilogue::kPromoted (optional, default false): promote the accumulation per k8 step. The MMA
// accumulator truncates toward zero, so K = 256 kept there put L2_093's error under the
// robustness trials' scaled inputs (x 1000) at 1.2-1.7x the tolerance on seeds 5, 10-13 (the
// reference 0.1-0.4x; `fragile` at seed 5); promoted, 0.06-0.68x over seeds 5-13. Cost (H200,
// L2_093's full preset, session 22): 2.76 -> 3.06 ms with one n8 tile per promotion (16 bytes
// of spills at the 128-register cap of 2 CTAs per SM); 2 tiles chained 3.56, 4 tiles 3.16, the
// small terms alone in a fresh accumulator 3.07 (and only 3x less truncation).
template <class Epilogue>
constexpr bool promoted() {
  if constexpr (requires { Epilogue::kPromoted; })
    return Epilogue::kPromoted;
  else
    return false;
}

template <class Epilogue>
__global__ void __launch_bounds__(kThreads, 2)
    parity_gemm_kernel(const GemmParams p, const Epilogue epilogue) {
  extern __shared__ __align__(128) float smem[];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int warp_m = warp % kWarpsM, warp_n = warp / kWarpsM;
  const Tile tile = tile_of(p.plan, blockIdx.x);
  StageLoader loader = make_loader(p, tile);
  const int a_base = a_frag_index(warp_m, lane, 0, 0, 0);
  const int b_base = kBK * kTile + b_frag_index(warp_n, lane, 0, 0);
  float acc[4][4][4];
  tf32x3::mainloop<kStages, kStageFloats>(
      smem, p.plan.k_tiles, acc, [&](uint32_t stage, int) { load_stage(p, loader, stage); },
      [&](const float* stage, float(&c)[4][4][4]) {
        mma_stage<promoted<Epilogue>()>(stage, a_base, b_base, c);
      });
  __syncthreads();  // every warp is done with the stages: they become the C tile
  stash_tile(smem, warp_m, warp_n, lane, acc);
  __syncthreads();
  epilogue(p, tile, smem, output_rows(p.plan, tile, lane));
}

// Packs w and launches the GEMM with `epilogue` on `stream`.
template <class Epilogue>
Status launch_parity_gemm(const GemmParams& p, const float* w, float* packed,
                          const Epilogue& epilogue, cudaStream_t stream) {
  const int64_t pack_blocks = std::min<int64_t>(
      (static_cast<int64_t>(packed_weight_floats(p.plan)) + 255) / 256, int64_t{1} << 16);
  pack_weights_kernel<256>
      <<<static_cast<unsigned>(pack_blocks), 256, 0, stream>>>(w, packed, p.plan);
  KB_CUDA_TRY(cudaGetLastError());
  GemmParams q = p;
  q.b = packed;
  parity_gemm_kernel<Epilogue>
      <<<static_cast<unsigned>(p.plan.blocks()), kThreads, kSmemBytes, stream>>>(q, epilogue);
  KB_CUDA_TRY(cudaGetLastError());
  return Status::ok();
}

template <class Epilogue>
Status prepare_parity_gemm() {
  KB_CUDA_TRY(cudaFuncSetAttribute(parity_gemm_kernel<Epilogue>,
                                   cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes));
  KB_CUDA_TRY(cudaFuncSetAttribute(parity_gemm_kernel<Epilogue>,
                                   cudaFuncAttributePreferredSharedMemoryCarveout,
                                   cudaSharedmemCarveoutMaxShared));
  return Status::ok();
}

}  // namespace kb::custom::parity_gemm
