// ConvTranspose3d(C -> C, k 3, stride 2, padding 1, dilation 1, groups 1, output_padding 0) with
// C = kC = 32, every output parity class of a box from ONE shared input patch, in
// error-compensated TF32 (3xTF32) on mma.sync m16n8k8. Used by the custom variant of L1_073; any
// other layer runs L1_073's per-tap gather core (parity_gather3d.cuh) instead.
//
// Math, per axis (L inputs, 2L - 1 outputs): o + 1 = 2q + r. r = 1 (even o) takes tap 1 from
// input q; r = 0 (odd o) takes tap 0 from input q and tap 2 from input q - 1. So class
// (r_d, r_h, r_w) has 1..8 taps, the 8 classes together the 27 taps, and every output is
//   y[n, co, 2q + r - 1] = sum_{tap of class r, ci} x[n, ci, q - j(tap)] * w[ci, co, tap].
// A box of q positions (kBoxD x kBoxH x kBoxW = 2 x 2 x 32 = 128) reads the input patch
// [q0 - 1, q0 + box) per axis (3 x 3 x 33 = 297 positions, all 32 channels): pixel b of the box
// and a tap of input offset j read patch position b + 1 - j (a constant per tap), so all 27
// tap-GEMMs (M 128, N 32, K 32) of the box run from the one patch, and the box's 8 classes write
// the 2 x 4 x 64 outputs [2 q0 - 1, 2 q0 + 2 box - 1) per axis (the CTA fills whole output lines;
// L2 merges the two w phases of a sector, both written by this CTA within one box).
//
// CTA (persistent, one per SM, 8 warps): the 27 x 32 x 32 raw weights stay in shared memory for
// the whole kernel (110.6 KB, B-fragment order written per call by prep_weights_kernel), the
// patch is double-buffered (2 x 40 KB raw fp32, [ci][position] rows of kPatchStride floats, box i
// + 1's patch streams in by 4-byte zero-filling cp.async while box i computes). Warp w owns
// pixels 32 (w % 4) .. + 31 (two m16 tiles, 8 consecutive w per row group) and class group w / 4:
// {0, 1, 7} (8 + 4 + 1 = 13 taps) or {2, 3, 4, 5, 6} (4 + 2 + 4 + 2 + 2 = 14 taps), one class
// at a time with 2 x 4 x 4 accumulators, stored straight to y at the class's end. Operands are
// split at the fragment load (big = tf32_rna(v), small = tf32_rna(v - big));
// part = a_s b_b + a_b b_s + a_b b_b over one tap's 4 k8 steps, from zero, then acc += part by
// FADD: the MMA accumulator truncates toward zero against the running sum (mma.cuh), so a class
// kept there for all its taps (up to 96 MMAs) was 2.7-4x the tolerance under the robustness
// trials' scaled inputs (x 1000) where the fp32 reference is at 0.4-0.6x; promoted per tap (12
// MMAs per period) 0.48-0.79x, for 32 FADD per tap and 224 registers (176), no spills: 1.888 ->
// 1.962 ms at L1_073's full preset (session 14, docs/kernels.md). Per pair of w taps: 2.01-2.03
// ms and 0.75-0.99x (212 registers): not taken.
//
// Thread safety: stateless kernels; one AllClassesConvTranspose3d per thread at a time.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cores/tf32x3/mma.cuh"

namespace kb::custom::ct3d_all {

using ::kb::tf32x3::cp_async_16;
using ::kb::tf32x3::cp_async_4;
using ::kb::tf32x3::cp_async_commit;
using ::kb::tf32x3::cp_async_wait;
using ::kb::tf32x3::mma3_k8;
using ::kb::tf32x3::mma_tf32;
using ::kb::tf32x3::split_tf32;
using ::kb::tf32x3::split_tf32_frag;
using ::kb::tf32x3::SplitTf32;

constexpr int kC = 32;  // C_in = C_out the fast path takes
constexpr int kTaps1 = 3;
constexpr int kTaps = kTaps1 * kTaps1 * kTaps1;  // 27
constexpr int kK8 = kC / 8;                      // k8 MMA steps per tap
constexpr int kNT = kC / 8;                      // n8 tiles (all output channels)
constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kBoxD = 2, kBoxH = 2, kBoxW = 32;
constexpr int kBox = kBoxD * kBoxH * kBoxW;  // 128 q positions
constexpr int kPatchD = kBoxD + 1, kPatchH = kBoxH + 1, kPatchW = kBoxW + 1;
constexpr int kPatch = kPatchD * kPatchH * kPatchW;  // 297 positions
constexpr int kPatchStride = 312;                    // floats per channel row, 24 mod 32
constexpr int kPatchFloats = kC * kPatchStride;
constexpr int kPixelGroups = 4;                            // warps along the box pixels
constexpr int kClassGroups = kWarps / kPixelGroups;        // 2
constexpr int kMT = kBox / kPixelGroups / 16;              // m16 tiles per warp: 2
constexpr int kWeightFloats = kTaps * kK8 * kNT * 32 * 2;  // [tap][k8][nt][lane][b0, b1]
constexpr int kSmemBytes = (kWeightFloats + 2 * kPatchFloats) * 4;
static_assert(kPatchStride >= kPatch && kPatchStride % 32 == 24,
              "A fragment loads t * stride + g hit 32 distinct banks");
static_assert(kBoxW % 16 == 0 && kBoxW >= 16, "an m16 tile lies within one box row");
static_assert(kMT * 16 * kPixelGroups == kBox && kClassGroups == 2, "warp layout");
static_assert(kWeightFloats % 4 == 0 && kPatchFloats % 4 == 0, "16-byte aligned regions");
static_assert(kSmemBytes <= 227 * 1024, "fits one SM's shared memory");

struct Params {
  const float* x;   // (N, kC, L_d, L_h, L_w)
  const float* wf;  // prep_weights_kernel's output, kWeightFloats
  float* y;         // (N, kC, 2 L_d - 1, 2 L_h - 1, 2 L_w - 1)
  int batch, in[3], out[3];
  int boxes[3];  // boxes per axis
  int boxes_total;
};

// wf[tap][k8][nt][lane][e] = w[ci, co, tap] with ci = 8 k8 + lane % 4 + 4 e, co = 8 nt + lane / 4
// (the raw m16n8k8 B fragment b_e of lane; w is (C_in, C_out, 3, 3, 3)).
__global__ void __launch_bounds__(kThreads)
    prep_weights_kernel(const float* __restrict__ w, float* __restrict__ wf) {
  const int f = static_cast<int>(blockIdx.x) * kThreads + static_cast<int>(threadIdx.x);
  if (f >= kWeightFloats) return;
  const int e = f % 2, lane = f / 2 % 32, nt = f / 64 % kNT, k8 = f / (64 * kNT) % kK8;
  const int tap = f / (64 * kNT * kK8);
  const int ci = 8 * k8 + lane % 4 + 4 * e, co = 8 * nt + lane / 4;
  wf[f] = w[(ci * kC + co) * kTaps + tap];
}

// Box b (w fastest): image n and the first q per axis.
struct Box {
  int n, q0[3];
};
__device__ __forceinline__ Box box_of(const Params& p, int b) {
  Box x;
  x.q0[2] = b % p.boxes[2] * kBoxW;
  b /= p.boxes[2];
  x.q0[1] = b % p.boxes[1] * kBoxH;
  b /= p.boxes[1];
  x.q0[0] = b % p.boxes[0] * kBoxD;
  x.n = b / p.boxes[0];
  return x;
}

// patch[ci][(pd * kPatchH + ph) * kPatchW + pw] = x[n, ci, q0 - 1 + (pd, ph, pw)], 0 outside x.
__device__ __forceinline__ void load_patch(const Params& p, const Box& bx, uint32_t patch) {
  const int64_t plane = int64_t{p.in[0]} * p.in[1] * p.in[2];
  const float* image = p.x + int64_t{bx.n} * kC * plane;
  for (int e = static_cast<int>(threadIdx.x); e < kC * kPatch; e += kThreads) {
    const int ci = e / kPatch, pos = e % kPatch;
    const int pw = pos % kPatchW, ph = pos / kPatchW % kPatchH, pd = pos / (kPatchW * kPatchH);
    const int id = bx.q0[0] - 1 + pd, ih = bx.q0[1] - 1 + ph, iw = bx.q0[2] - 1 + pw;
    const bool inside = static_cast<unsigned>(id) < static_cast<unsigned>(p.in[0]) &&
                        static_cast<unsigned>(ih) < static_cast<unsigned>(p.in[1]) &&
                        static_cast<unsigned>(iw) < static_cast<unsigned>(p.in[2]);
    const float* src =
        inside ? image + ci * plane + (int64_t{id} * p.in[1] + ih) * p.in[2] + iw : p.x;
    cp_async_4(patch + 4u * (ci * kPatchStride + pos), src, inside);
  }
}

// Per axis and phase r: taps (kernel index t, patch offset 1 - j).
__host__ __device__ constexpr int axis_taps(int r) {
  return r == 1 ? 1 : 2;
}
__host__ __device__ constexpr int axis_t(int r, int i) {
  return r == 1 ? 1 : (i == 0 ? 0 : 2);
}
__host__ __device__ constexpr int axis_off(int r, int i) {
  return r == 1 ? 1 : (i == 0 ? 1 : 0);
}

using Acc = float[kMT][kNT][4];

// The lane's rows: pixel m = 32 pg + 16 mt + 8 h + g of the box.
struct Rows {
  int pos[kMT][2];    // patch position of the pixel (tap offset 0)
  int bq[kMT][2][3];  // box coordinates (d, h, w)
};

// One class of the box: acc = its taps' 3xTF32 GEMM, then stored to y.
template <int kCls>
__device__ __forceinline__ void run_class(const Params& p, const Box& bx, const float* patch,
                                          const float* wsm, const Rows& rows, int lane) {
  constexpr int rd = kCls >> 2 & 1, rh = kCls >> 1 & 1, rw = kCls & 1;
  const int tq = lane % 4;
  Acc acc;
  tf32x3::zero_accumulators(acc);
#pragma unroll 1  // bounds the live registers: 2 taps x 4 k8 steps unrolled at most
  for (int id = 0; id < axis_taps(rd); ++id)
#pragma unroll 1
    for (int ih = 0; ih < axis_taps(rh); ++ih)
#pragma unroll
      for (int iw = 0; iw < axis_taps(rw); ++iw) {
        const int tap = (axis_t(rd, id) * kTaps1 + axis_t(rh, ih)) * kTaps1 + axis_t(rw, iw);
        const int off =
            (axis_off(rd, id) * kPatchH + axis_off(rh, ih)) * kPatchW + axis_off(rw, iw);
        const float* a_tap = patch + tq * kPatchStride + off;
        const float* b_tap = wsm + tap * (kK8 * kNT * 64) + 2 * lane;
        Acc part;  // the tap's sum, promoted into acc at its end
#pragma unroll
        for (int k8 = 0; k8 < kK8; ++k8) {
          uint32_t b_big[kNT][2], b_small[kNT][2];
#pragma unroll
          for (int nt = 0; nt < kNT; ++nt) {
            const float2 v = *reinterpret_cast<const float2*>(b_tap + (k8 * kNT + nt) * 64);
            const SplitTf32 s0 = split_tf32(v.x), s1 = split_tf32(v.y);
            b_big[nt][0] = s0.big, b_small[nt][0] = s0.small;
            b_big[nt][1] = s1.big, b_small[nt][1] = s1.small;
          }
          const float* a_k = a_tap + 8 * k8 * kPatchStride;
#pragma unroll
          for (int mt = 0; mt < kMT; ++mt) {
            // a0 (row g, k t), a1 (g + 8, t), a2 (g, t + 4), a3 (g + 8, t + 4)
            const float src[4] = {a_k[rows.pos[mt][0]], a_k[rows.pos[mt][1]],
                                  a_k[4 * kPatchStride + rows.pos[mt][0]],
                                  a_k[4 * kPatchStride + rows.pos[mt][1]]};
            uint32_t a_big[4], a_small[4];
            split_tf32_frag(src, a_big, a_small);
            if (k8 == 0)  // small terms first
              mma3_k8<kNT, true>(part[mt], a_big, a_small, b_big, b_small);
            else
              mma3_k8(part[mt], a_big, a_small, b_big, b_small);
          }
        }
#pragma unroll
        for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
          for (int nt = 0; nt < kNT; ++nt)
#pragma unroll
            for (int e = 0; e < 4; ++e) acc[mt][nt][e] += part[mt][nt][e];
      }

  // c0 (row g, n 2t), c1 (g, 2t + 1), c2 (g + 8, 2t), c3 (g + 8, 2t + 1).
  const int64_t plane = int64_t{p.out[0]} * p.out[1] * p.out[2];
  float* image = p.y + int64_t{bx.n} * kC * plane;
  constexpr int r[3] = {rd, rh, rw};
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      bool inside = true;
      int64_t at = 0;
#pragma unroll
      for (int a = 0; a < 3; ++a) {
        const int o = 2 * (bx.q0[a] + rows.bq[mt][h][a]) + r[a] - 1;
        inside = inside && static_cast<unsigned>(o) < static_cast<unsigned>(p.out[a]);
        at = at * p.out[a] + o;
      }
      if (!inside) continue;
#pragma unroll
      for (int nt = 0; nt < kNT; ++nt)
#pragma unroll
        for (int e = 0; e < 2; ++e)
          image[(8 * nt + 2 * tq + e) * plane + at] = acc[mt][nt][2 * h + e];
    }
}

// Grid: persistent, gridDim.x <= boxes_total; block kThreads; dynamic shared kSmemBytes.
__global__ void __launch_bounds__(kThreads, 1) all_classes3d_kernel(const Params p) {
  extern __shared__ __align__(16) float smem[];
  const int lane = static_cast<int>(threadIdx.x) % 32, warp = static_cast<int>(threadIdx.x) / 32;
  const int pg = warp % kPixelGroups, cg = warp / kPixelGroups;
  const uint32_t smem_base = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  const uint32_t patch_base = smem_base + 4u * kWeightFloats;
  const int first = static_cast<int>(blockIdx.x), step = static_cast<int>(gridDim.x);

  Rows rows;
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int m = pg * kMT * 16 + 16 * mt + 8 * h + lane / 4;
      const int bw = m % kBoxW, bh = m / kBoxW % kBoxH, bd = m / (kBoxW * kBoxH);
      rows.bq[mt][h][0] = bd, rows.bq[mt][h][1] = bh, rows.bq[mt][h][2] = bw;
      rows.pos[mt][h] = (bd * kPatchH + bh) * kPatchW + bw;
    }

  for (int q = static_cast<int>(threadIdx.x); q < kWeightFloats / 4; q += kThreads)
    cp_async_16(smem_base + 16u * q, p.wf + 4 * q);
  Box cur = box_of(p, first);
  load_patch(p, cur, patch_base);
  cp_async_commit();  // group: weights + box 0's patch

  int stage = 0;
  for (int b = first; b < p.boxes_total; b += step) {
    const bool has_next = b + step < p.boxes_total;
    const Box next = has_next ? box_of(p, b + step) : cur;
    // stage ^ 1 was last read for box b - step, before the barrier that ended it.
    if (has_next) load_patch(p, next, patch_base + 4u * (stage ^ 1) * kPatchFloats);
    cp_async_commit();
    cp_async_wait<1>();  // this thread's copies of box b's patch (and the weights) landed
    __syncthreads();     // ... everyone's
    const float* patch = smem + kWeightFloats + stage * kPatchFloats;
    if (cg == 0) {
      run_class<0>(p, cur, patch, smem, rows, lane);
      run_class<1>(p, cur, patch, smem, rows, lane);
      run_class<7>(p, cur, patch, smem, rows, lane);
    } else {
      run_class<2>(p, cur, patch, smem, rows, lane);
      run_class<3>(p, cur, patch, smem, rows, lane);
      run_class<4>(p, cur, patch, smem, rows, lane);
      run_class<5>(p, cur, patch, smem, rows, lane);
      run_class<6>(p, cur, patch, smem, rows, lane);
    }
    __syncthreads();  // the patch of this stage may be overwritten now
    stage ^= 1;
    cur = next;
  }
  cp_async_wait<0>();
}

}  // namespace kb::custom::ct3d_all
