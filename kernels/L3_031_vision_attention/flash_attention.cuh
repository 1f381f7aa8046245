// L3_031's attention for head_dim 32 (smaller head dims zero-padded to 32): the flash kernel
// (3xTF32 mma.sync, online softmax in fp32) and, where its grid is under one wave and the keys are
// split over gridDim.z, attention_combine_kernel, which folds the splits' partials in order. The
// design, cost and accuracy are in custom.cu's header; the launches are custom.cu's.
//   q: (N*heads, L, 32) pre-scaled by 1/sqrt(hd); k, v: (N*heads, L, 32) split into TF32 big +
//   small; o: (N, L, E) with head h's dims at h * 32.
//
// Thread safety: stateless device code.
#pragma once

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "kernels/cores/tf32x3/mma.cuh"

namespace kb::custom::L3_031 {

using ::kb::tf32x3::cp_async_16;
using ::kb::tf32x3::cp_async_commit;
using ::kb::tf32x3::cp_async_wait;
using ::kb::tf32x3::mma_tf32;
using ::kb::tf32x3::split_tf32;
using ::kb::tf32x3::SplitTf32;

// ---- 2. Flash attention, head_dim 32, 3xTF32 ----

constexpr int kHd = 32;
constexpr int kFlashWarps = 8, kFlashThreads = 32 * kFlashWarps;
constexpr int kBQ = 16 * kFlashWarps;  // 128 query rows per CTA, 16 per warp
constexpr int kBKV = 64;               // keys per K/V tile
constexpr int kKStride = 40;           // floats per K row: float2 fragment loads conflict-free
constexpr int kVStride = 36;           // floats per V row: scalar (2t, g) loads conflict-free
constexpr int kKTile = kBKV * kKStride, kVTile = kBKV * kVStride;
constexpr int kStageFloats = 2 * kKTile + 2 * kVTile;  // k_big, k_small, v_big, v_small
constexpr int kQFragWords = kFlashWarps * 4 * 32 * 8;  // split Q fragments, per lane and k8 step
constexpr int kFlashSmem = (2 * kStageFloats + kQFragWords) * 4;  // 77,824 B K/V + 32,768 B Q
constexpr float kLog2e = 1.4426950408889634f;
static_assert(kHd == 32 && kBKV == 64, "fragment loops below assume 4 k8 steps of d, 8 of keys");
static_assert(kBKV * kHd / 4 == 2 * kFlashThreads, "each thread copies 2 chunks per array");
static_assert(kKStride % 16 == 8 && kVStride % 16 == 4 && kKStride % 4 == 0 && kVStride % 4 == 0,
              "padding for conflict-free fragment loads; rows stay 16-byte aligned");
static_assert(2 * kFlashSmem <= 227 * 1024, "two CTAs per SM");

struct FlashArgs {
  const float* q;                                  // (N*heads, L, 32), scaled
  const float *k_big, *k_small, *v_big, *v_small;  // (N*heads, L, 32)
  float* o;               // (N, L, embed): heads concatenated per token, 32 columns each
  int len, heads, embed;  // embed: O's row stride, heads * 32
  // Split over keys (gridDim.z splits of tiles_per_split 64-key tiles; 1 split: o directly).
  // With more than one, each split writes its unnormalized partials for attention_combine_kernel.
  int tiles_per_split;
  float* part_o;    // (splits, N*heads, L, 32): sum_j exp(s_j - m) v_j over the split's keys
  float2* part_ml;  // (splits, N*heads, L): (m, l), the split's max score and sum_j exp(s_j - m)
};

// Copies keys [key0, key0 + 64) of head row base `head` (= bh * L) into the stage (zero rows past
// L).
__device__ __forceinline__ void load_kv_tile(const FlashArgs& a, int64_t head, int key0,
                                             uint32_t stage) {
#pragma unroll
  for (int j = 0; j < 2; ++j) {
    const int c = threadIdx.x + kFlashThreads * j;
    const int row = c >> 3, col = (c & 7) * 4;
    const bool ok = key0 + row < a.len;
    const int64_t g = ok ? (head + key0 + row) * kHd + col : 0;
    const uint32_t ko = (row * kKStride + col) * 4, vo = (2 * kKTile + row * kVStride + col) * 4;
    cp_async_16(stage + ko, a.k_big + g, ok);
    cp_async_16(stage + ko + kKTile * 4, a.k_small + g, ok);
    cp_async_16(stage + vo, a.v_big + g, ok);
    cp_async_16(stage + vo + kVTile * 4, a.v_small + g, ok);
  }
}

// s[nt] = Q K^T for keys 8 nt + (2t, 2t+1) of the tile (rows g, g + 8 of the warp); qf: this
// lane's split Q fragments (k8 step ks: big at 2 ks, small at 2 ks + 1, stride 32 uint4).
__device__ __forceinline__ void qk_tile(const float* st, int g, int t, const uint4* qf,
                                        float (&s)[8][4]) {
#pragma unroll
  for (int nt = 0; nt < 8; ++nt)
#pragma unroll
    for (int e = 0; e < 4; ++e) s[nt][e] = 0.f;
#pragma unroll
  for (int ks = 0; ks < 4; ++ks) {
    const uint4 qbv = qf[2 * ks * 32], qsv = qf[(2 * ks + 1) * 32];
    const uint32_t qb[4] = {qbv.x, qbv.y, qbv.z, qbv.w}, qs[4] = {qsv.x, qsv.y, qsv.z, qsv.w};
#pragma unroll
    for (int nt = 0; nt < 8; ++nt) {  // small products first; 8 independent chains
      const int idx = (nt * 8 + g) * kKStride + ks * 8 + 2 * t;
      const float2 b = *reinterpret_cast<const float2*>(st + idx);
      const float2 sm = *reinterpret_cast<const float2*>(st + kKTile + idx);
      mma_tf32(s[nt], qs, __float_as_uint(b.x), __float_as_uint(b.y));
      mma_tf32(s[nt], qb, __float_as_uint(sm.x), __float_as_uint(sm.y));
      mma_tf32(s[nt], qb, __float_as_uint(b.x), __float_as_uint(b.y));
    }
  }
}

// ot = P V for the tile; P's A fragment of key step j is (s[j][0], s[j][2], s[j][1], s[j][3]).
__device__ __forceinline__ void pv_tile(const float* st, int g, int t, const float (&p)[8][4],
                                        float (&ot)[4][4]) {
  const float* vb = st + 2 * kKTile;
  const float* vs = vb + kVTile;
#pragma unroll
  for (int dn = 0; dn < 4; ++dn)
#pragma unroll
    for (int e = 0; e < 4; ++e) ot[dn][e] = 0.f;
#pragma unroll
  for (int j = 0; j < 8; ++j) {
    uint32_t ab[4], as[4];
    const float pa[4] = {p[j][0], p[j][2], p[j][1], p[j][3]};
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const SplitTf32 x = split_tf32(pa[e]);
      ab[e] = x.big, as[e] = x.small;
    }
#pragma unroll
    for (int dn = 0; dn < 4; ++dn) {  // small products first; 4 independent chains
      const int i0 = (j * 8 + 2 * t) * kVStride + dn * 8 + g, i1 = i0 + kVStride;
      const uint32_t b0 = __float_as_uint(vb[i0]), b1 = __float_as_uint(vb[i1]);
      mma_tf32(ot[dn], as, b0, b1);
      mma_tf32(ot[dn], ab, __float_as_uint(vs[i0]), __float_as_uint(vs[i1]));
      mma_tf32(ot[dn], ab, b0, b1);
    }
  }
}

// Online softmax over one tile for rows g (r = 0) and g + 8 (r = 1): s becomes p = exp(s - m),
// returns the rescale factors of the old state in alpha.
__device__ __forceinline__ void softmax_tile(float (&s)[8][4], float (&m)[2], float (&l)[2],
                                             float (&alpha)[2]) {
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    float mx = m[r];
#pragma unroll
    for (int nt = 0; nt < 8; ++nt) mx = fmaxf(mx, fmaxf(s[nt][2 * r], s[nt][2 * r + 1]));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
    const float ms = mx * kLog2e;          // finite: every tile has a valid key
    alpha[r] = exp2f(m[r] * kLog2e - ms);  // 0 on the first tile (m = -inf)
    m[r] = mx;
    float sum = 0.f;
#pragma unroll
    for (int nt = 0; nt < 8; ++nt)
#pragma unroll
      for (int e = 2 * r; e < 2 * r + 2; ++e) {
        s[nt][e] = exp2f(fmaf(s[nt][e], kLog2e, -ms));  // masked -inf -> 0
        sum += s[nt][e];
      }
    l[r] = fmaf(l[r], alpha[r], sum);  // this thread's columns; the quad is summed at the end
  }
}

// grid (ceil(L / 128), N*heads, splits); o[n, l, h*32 + d] = softmax(q k^T) v for head bh =
// n*heads + h (splits 1), else the partials of split blockIdx.z.
__global__ void __launch_bounds__(kFlashThreads, 2) flash_attention_kernel(const FlashArgs a) {
  extern __shared__ __align__(16) float smem[];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, t = lane & 3;
  const int bh = blockIdx.y;
  const int64_t head = int64_t{bh} * a.len;
  const int row0 = blockIdx.x * kBQ + warp * 16 + g;  // rows row0 and row0 + 8

  // Q A fragments (k permuted: a0/a2 = d 8ks + 2t, 2t + 1), split once and parked in shared
  // memory (registers are the limit at 2 CTAs/SM); each lane reads back only its own slots.
  uint4* qf = reinterpret_cast<uint4*>(smem + 2 * kStageFloats) + warp * 8 * 32 + lane;
#pragma unroll
  for (int ks = 0; ks < 4; ++ks) {
    uint32_t qb[4], qs[4];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const int row = row0 + 8 * r;
      const float2 v =
          row < a.len ? *reinterpret_cast<const float2*>(a.q + (head + row) * kHd + ks * 8 + 2 * t)
                      : make_float2(0.f, 0.f);
      tf32x3::split_tf32_a_pair(v, r, qb, qs);
    }
    qf[2 * ks * 32] = make_uint4(qb[0], qb[1], qb[2], qb[3]);
    qf[(2 * ks + 1) * 32] = make_uint4(qs[0], qs[1], qs[2], qs[3]);
  }

  const uint32_t base = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  const int tile0 = blockIdx.z * a.tiles_per_split;  // the host gives every split >= 1 tile
  const int tiles = min((a.len + kBKV - 1) / kBKV, tile0 + a.tiles_per_split);
  load_kv_tile(a, head, tile0 * kBKV, base + (tile0 & 1) * kStageFloats * 4);
  cp_async_commit();
  float o[4][4] = {}, m[2] = {-INFINITY, -INFINITY}, l[2] = {0.f, 0.f};
  for (int it = tile0; it < tiles; ++it) {
    if (it + 1 < tiles) {
      load_kv_tile(a, head, (it + 1) * kBKV, base + ((it + 1) & 1) * kStageFloats * 4);
      cp_async_commit();
      cp_async_wait<1>();
    } else {
      cp_async_wait<0>();
    }
    __syncthreads();
    const float* st = smem + (it & 1) * kStageFloats;
    float s[8][4];
    qk_tile(st, g, t, qf, s);
    const int key0 = it * kBKV;
    if (key0 + kBKV > a.len) {
#pragma unroll
      for (int nt = 0; nt < 8; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e)
          if (key0 + nt * 8 + 2 * t + (e & 1) >= a.len) s[nt][e] = -INFINITY;
    }
    float alpha[2];
    softmax_tile(s, m, l, alpha);
    float ot[4][4];
    pv_tile(st, g, t, s, ot);
#pragma unroll
    for (int dn = 0; dn < 4; ++dn)
#pragma unroll
      for (int e = 0; e < 4; ++e) o[dn][e] = fmaf(o[dn][e], alpha[e >> 1], ot[dn][e]);
    __syncthreads();  // the next iteration's copy overwrites this stage
  }

  const int n = bh / a.heads, h = bh - n * a.heads;
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    float sum = l[r];
    sum += __shfl_xor_sync(0xffffffffu, sum, 1);
    sum += __shfl_xor_sync(0xffffffffu, sum, 2);
    const int row = row0 + 8 * r;
    if (row >= a.len) continue;
    if (gridDim.z > 1) {
      const int64_t prow = (int64_t{blockIdx.z} * gridDim.y + bh) * a.len + row;
      float* dst = a.part_o + prow * kHd + 2 * t;
#pragma unroll
      for (int dn = 0; dn < 4; ++dn)
        *reinterpret_cast<float2*>(dst + dn * 8) = make_float2(o[dn][2 * r], o[dn][2 * r + 1]);
      if (t == 0) a.part_ml[prow] = make_float2(m[r], sum);
      continue;
    }
    float* dst = a.o + (int64_t{n} * a.len + row) * a.embed + h * kHd + 2 * t;
#pragma unroll
    for (int dn = 0; dn < 4; ++dn)
      *reinterpret_cast<float2*>(dst + dn * 8) =
          make_float2(o[dn][2 * r] / sum, o[dn][2 * r + 1] / sum);
  }
}

// grid ceil(N*heads*L*32 / 256), 256 threads: thread = (query row of head bh, dim d). Folds the
// splits in order: o = sum_s exp(m_s - M) O_s / sum_s exp(m_s - M) l_s, M = max_s m_s (every
// split has a key, so m_s is finite).
__global__ void __launch_bounds__(256)
    attention_combine_kernel(const FlashArgs a, int splits, int64_t rows) {
  const int64_t i = int64_t{blockIdx.x} * 256 + threadIdx.x;
  if (i >= rows * kHd) return;
  const int64_t prow = i / kHd;  // bh * L + row
  const int d = static_cast<int>(i - prow * kHd);
  const int64_t split_rows = rows;
  float mx = -INFINITY;
  for (int s = 0; s < splits; ++s) mx = fmaxf(mx, a.part_ml[s * split_rows + prow].x);
  const float ms = mx * kLog2e;
  float num = 0.f, den = 0.f;
  for (int s = 0; s < splits; ++s) {
    const float2 ml = a.part_ml[s * split_rows + prow];
    const float w = exp2f(fmaf(ml.x, kLog2e, -ms));
    num = fmaf(w, a.part_o[(s * split_rows + prow) * kHd + d], num);
    den = fmaf(w, ml.y, den);
  }
  const int64_t bh = prow / a.len;
  const int row = static_cast<int>(prow - bh * a.len);
  const int n = static_cast<int>(bh / a.heads), h = static_cast<int>(bh % a.heads);
  a.o[(int64_t{n} * a.len + row) * a.embed + h * kHd + d] = num / den;
}

}  // namespace kb::custom::L3_031
