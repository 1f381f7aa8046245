// The narrow-channel form of the parity GEMM (parity_gemm.cuh) for layers with few output
// channels: CTA tile 128 pixels x kN channels, kN = 8, 16, 32 or 64 >= C_out, still all channels
// of a pixel in one CTA (L2_091's softmax runs in the epilogue). The wide kernel's 128-channel
// tile spends 128 / C_out of its MMAs on zero-padded channels (14x at C_out 9): N 96, C_in 33,
// C_out 9, 9 x 39 took 132.7 us there against 114 us for all of PyTorch.
//
// Owns: the narrow tile shapes (Narrow<kN>), the packed-B pair layout and its pack kernel, the
// narrow stage loader, MMA stage and C-tile stash, the kernel and its launch. Shares with the wide
// kernel: the plan (one n tile: plan_parity_gemm with max_c_out = kN), the A side (loader, shared
// layout, fragments: kernels of 128 pixels and 256 threads), the C-tile layout (c_smem_index, so
// an epilogue reads both the same way) and the epilogue concept.
//
// Tiles: 8 warps = 2 (m, 64 pixels each, the wide A fragments) x kWarpsN (n, 8 kWarpNTiles
// channels each) x kSplitK (each takes kSteps of the stage's 4 k8 steps): kN 64: 2 x 4 x 1,
// n-tiles 2; 32: 2 x 4 x 1; 16: 2 x 2 x 2; 8: 2 x 1 x 4. With split K every split writes its own
// C tile and the kernel sums them into the first before the epilogue. A stays the wide 16 KB per
// stage; B is 32 x kN: 61 KB for 3 stages at kN 32, so 3 CTAs per SM (80 registers; kN 64: 2).
// B in shared memory, per stage [16 k-pairs][kN n][2]: element (k, n) at
//   (k / 2) 2 kN + 2 (n ^ swz(k / 2)) + k % 2,
// so a lane's fragment (b0, b1) = physical k (8 s + 2 t, + 1) of column n is one LDS.64; swz
// keeps column pairs together, so 16-byte copies land whole. Packed B in global memory holds the
// same [cls][k-pair][kN][2] order (without the swizzle), written by pack_pairs_kernel.
//
// Thread safety: stateless.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "common/status.h"
#include "kernels/cores/conv_transpose2d_tf32x3/parity_gemm.cuh"
#include "kernels/cores/tf32x3/mainloop.cuh"
#include "kernels/cores/tf32x3/mma.cuh"

namespace kb::custom::parity_gemm {

template <int kN>
struct Narrow {
  static_assert(kN == 8 || kN == 16 || kN == 32 || kN == 64, "narrow channel tiles");
  static constexpr int kWarpsN = std::min(kN / 8, 4);
  static constexpr int kWarpNTiles = kN / 8 / kWarpsN;               // n8 tiles per warp
  static constexpr int kSplitK = kThreads / 32 / kWarpsM / kWarpsN;  // warps sharing a stage's k
  static constexpr int kSteps = kBK / 8 / kSplitK;                   // k8 steps per warp, stage
  static constexpr int kStageFloats = kBK * kTile + kBK * kN;        // A then B
  static constexpr int kSmemBytes = kStages * kStageFloats * 4;
  static constexpr int kCTileFloats = kN * kTile;
  static constexpr int kEpilogueFloats = kStages * kStageFloats - kCTileFloats;
  static constexpr int kBChunks = kBK * kN / 4;  // 16-byte copies of B per stage
  static constexpr int kBCopies = (kBChunks + kThreads - 1) / kThreads;
  static constexpr int kMinBlocks = kN >= 64 ? 2 : 3;  // 64 spills in 80 registers
  static_assert(kWarpsM * kWarpsN * kSplitK * 32 == kThreads && kSteps * kSplitK * 8 == kBK,
                "the warps cover the CTA tile and the stage's k once");
  static_assert(kSplitK * kCTileFloats <= kStages * kStageFloats, "split C tiles fit");
  static_assert(kBChunks % kThreads == 0 || kThreads % kBChunks == 0, "B copies tile the CTA");
  static_assert(kMinBlocks * kSmemBytes <= 227 * 1024, "kMinBlocks CTAs per SM");
};

// ---- B: shared layout, fragments, copies (checked below) ----

template <int kN>
__host__ __device__ constexpr int narrow_b_swizzle(int kp) {
  return kN >= 16 ? 4 * (kp & 3) : 4 * ((kp >> 1) & 1);  // lane-in-quad t = kp % 4
}
template <int kN>
__host__ __device__ constexpr int narrow_b_smem_index(int k, int n) {
  return (k >> 1) * 2 * kN + 2 * (n ^ narrow_b_swizzle<kN>(k >> 1)) + (k & 1);
}
// Lane (g, t)'s (b0, b1) of k8 step s, n-tile nt of warp warp_n: column 8 (warp's first tile
// + nt) + g; step s adds 4 k-pairs, which keeps the swizzle.
template <int kN>
__host__ __device__ constexpr int narrow_b_frag_index(int warp_n, int lane, int s, int nt) {
  return narrow_b_smem_index<kN>(8 * s + 2 * (lane & 3),
                                 8 * (warp_n * Narrow<kN>::kWarpNTiles + nt) + (lane >> 2));
}
__host__ __device__ constexpr int narrow_b_frag_fast(int base, int kN, int s) {
  return base + 8 * s * kN;
}
// Copy j of thread tid: chunk c = tid + 256 j = (k-pair c / (kN / 2), columns 2 (c % (kN / 2))
// + 0, 1); in global memory chunk c is simply 4 c floats into the k-tile.
template <int kN>
__host__ __device__ constexpr int narrow_b_copy_smem(int tid, int j) {
  const int c = tid + kThreads * j;
  return narrow_b_smem_index<kN>(2 * (c / (kN / 2)), 2 * (c % (kN / 2)));
}

template <int kN>
constexpr bool narrow_maps_ok() {
  using T = Narrow<kN>;
  for (int wn = 0; wn < T::kWarpsN; ++wn)
    for (int s = 0; s < kBK / 8; ++s)
      for (int nt = 0; nt < T::kWarpNTiles; ++nt)
        for (int half = 0; half < 2; ++half) {  // LDS.64: each half-warp on 16 distinct bank pairs
          unsigned seen = 0;
          for (int l = 16 * half; l < 16 * half + 16; ++l) {
            const int at = narrow_b_frag_index<kN>(wn, l, s, nt);
            if (at % 2 != 0 ||
                narrow_b_frag_fast(narrow_b_frag_index<kN>(wn, l, 0, nt), kN, s) != at)
              return false;
            seen |= 1u << (at / 2 % 16);
          }
          if (seen != 0xffffu) return false;
        }
  for (int tid = 0; tid < kThreads; ++tid)  // copies: whole chunks, each element exactly once
    for (int j = 0; j < T::kBCopies && tid + kThreads * j < T::kBChunks; ++j) {
      const int c = tid + kThreads * j, k = 2 * (c / (kN / 2)), n = 2 * (c % (kN / 2));
      const int at = narrow_b_copy_smem<kN>(tid, j);
      if (at % 4 != 0 || narrow_b_smem_index<kN>(k + 1, n) != at + 1 ||
          narrow_b_smem_index<kN>(k, n + 1) != at + 2 ||
          narrow_b_smem_index<kN>(k + 1, n + 1) != at + 3 ||
          at != narrow_b_copy_smem<kN>(tid, 0) + 4 * kThreads * j)
        return false;
    }
  return true;
}
static_assert(narrow_maps_ok<8>() && narrow_maps_ok<16>() && narrow_maps_ok<32>() &&
                  narrow_maps_ok<64>(),
              "narrow B fragments conflict-free, copies whole and matching their fast forms");

// ---- packed B: [cls][k-pair][kN][2], zero past C_in, C_out and missing taps ----

template <int kN>
size_t narrow_packed_floats(const ParityPlan& p) {
  return static_cast<size_t>(p.classes) * p.k_pad() * kN;
}

template <int kN>
__global__ void __launch_bounds__(256)
    pack_pairs_kernel(const float* __restrict__ w, float* __restrict__ b, const ParityPlan p) {
  const int64_t total = int64_t{p.classes} * p.k_pad() * kN, pairs = p.k_pad() / 2;
  for (int64_t e = int64_t{blockIdx.x} * 256 + threadIdx.x; e < total;
       e += int64_t{gridDim.x} * 256) {
    const int n = static_cast<int>(e / 2 % kN);
    const int64_t row = e / 2 / kN;  // cls * pairs + k-pair
    const int k = static_cast<int>(row % pairs * 2 + e % 2);
    const int64_t src = packed_weight_source(p, static_cast<int>(row / pairs), k, n);
    b[e] = src < 0 ? 0.0f : w[src];
  }
}

// ---- kernel ----

// The wide loader's A part, B pointers of the pair layout: l.b at chunk tid of the class's first
// k-tile (threads past the chunks copy nothing).
template <int kN>
__device__ __forceinline__ StageLoader make_narrow_loader(const GemmParams& p, const Tile& t) {
  StageLoader l = make_loader(p, t);
  l.b = p.b + int64_t{t.cls} * p.plan.k_pad() * kN + 4 * threadIdx.x;
  l.b_smem = narrow_b_copy_smem<kN>(threadIdx.x, 0);
  return l;
}

template <int kN>
__device__ __forceinline__ void load_narrow_stage(const GemmParams& p, StageLoader& l,
                                                  uint32_t stage) {
  using T = Narrow<kN>;
  const int64_t plane = p.plan.in_plane();
  copy_a_stage(p, l, plane, stage);
#pragma unroll
  for (int j = 0; j < T::kBCopies; ++j)
    if (T::kBChunks >= kThreads || threadIdx.x < T::kBChunks)
      cp_async_16(stage + (kBK * kTile + l.b_smem + 4 * kThreads * j) * 4, l.b + 4 * kThreads * j);
  advance_a(l, plane);
  l.b += kBK * kN;
}

// acc += this warp's k8 steps [first_step, + kSteps) of the stage (a_base as the wide kernel's).
template <int kN>
__device__ __forceinline__ void narrow_mma_stage(const float* stage, int a_base,
                                                 const int (&b_base)[Narrow<kN>::kWarpNTiles],
                                                 int first_step,
                                                 float (&acc)[4][Narrow<kN>::kWarpNTiles][4]) {
  constexpr int kNT = Narrow<kN>::kWarpNTiles;
  // Two n-tiles per warp (kN 64) spill when unrolled (as the wide kernel's 4): one step at a time.
  constexpr int kUnroll = kNT > 1 ? 1 : Narrow<kN>::kSteps;
#pragma unroll kUnroll
  for (int j = 0; j < Narrow<kN>::kSteps; ++j) {
    const int s = first_step + j;
    uint32_t b_big[kNT][2], b_small[kNT][2];
#pragma unroll
    for (int nt = 0; nt < kNT; ++nt) {
      const float2 v =
          *reinterpret_cast<const float2*>(stage + narrow_b_frag_fast(b_base[nt], kN, s));
      const SplitTf32 x0 = split_tf32(v.x), x1 = split_tf32(v.y);
      b_big[nt][0] = x0.big, b_small[nt][0] = x0.small;
      b_big[nt][1] = x1.big, b_small[nt][1] = x1.small;
    }
#pragma unroll
    for (int v = 0; v < 2; ++v) {
      for_a_frag_pair(stage, a_base, s, v,
                      [&](int mm, const uint32_t(&a_big)[4], const uint32_t(&a_small)[4]) {
                        mma3_k8(acc[2 * v + mm], a_big, a_small, b_big, b_small);
                      });
    }
  }
}

// The accumulators into a C tile (c_smem_index layout, kN rows): accumulator e = 2 h + e1 of
// (m-tile mt, n-tile nt) is row acc_row(warp_m, lane, mt, h), column 8 (warp's tile + nt) +
// 2 t + e1 (the plain m16n8 layout: narrow B columns are not permuted).
template <int kN>
__device__ __forceinline__ void narrow_stash(float* c_tile, int warp_m, int warp_n, int lane,
                                             const float (&acc)[4][Narrow<kN>::kWarpNTiles][4]) {
#pragma unroll
  for (int nt = 0; nt < Narrow<kN>::kWarpNTiles; ++nt)
#pragma unroll
    for (int e1 = 0; e1 < 2; ++e1)
#pragma unroll
      for (int v = 0; v < 2; ++v) {
        const int col = 8 * (warp_n * Narrow<kN>::kWarpNTiles + nt) + 2 * (lane & 3) + e1;
        *reinterpret_cast<float4*>(c_tile + c_smem_index(col, acc_row(warp_m, lane, 2 * v, 0))) =
            make_float4(acc[2 * v][nt][e1], acc[2 * v][nt][2 + e1], acc[2 * v + 1][nt][e1],
                        acc[2 * v + 1][nt][2 + e1]);
      }
}

// C tile 0 += C tiles 1 .. kSplitK - 1 (after a barrier; the caller syncs after).
template <int kN>
__device__ __forceinline__ void reduce_split_tiles(float* smem) {
  using T = Narrow<kN>;
  for (int i = 4 * threadIdx.x; i < T::kCTileFloats; i += 4 * kThreads) {
    float4 sum = *reinterpret_cast<const float4*>(smem + i);
#pragma unroll
    for (int w = 1; w < T::kSplitK; ++w) {
      const float4 v = *reinterpret_cast<const float4*>(smem + w * T::kCTileFloats + i);
      sum.x += v.x, sum.y += v.y, sum.z += v.z, sum.w += v.w;
    }
    *reinterpret_cast<float4*>(smem + i) = sum;
  }
}

// As parity_gemm_kernel; the epilogue sees one C tile of kN channel rows (C_out <= kN, n0 = 0)
// and Narrow<kN>::kEpilogueFloats of scratch after it.
template <int kN, class Epilogue>
__global__ void __launch_bounds__(kThreads, Narrow<kN>::kMinBlocks)
    narrow_gemm_kernel(const GemmParams p, const Epilogue epilogue) {
  using T = Narrow<kN>;
  extern __shared__ __align__(128) float smem[];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int warp_m = warp % kWarpsM, warp_n = warp / kWarpsM % T::kWarpsN;
  const int warp_k = warp / (kWarpsM * T::kWarpsN);
  const Tile tile = tile_of(p.plan, blockIdx.x);
  StageLoader loader = make_narrow_loader<kN>(p, tile);
  const int a_base = a_frag_index(warp_m, lane, 0, 0, 0);
  int b_base[T::kWarpNTiles];
#pragma unroll
  for (int nt = 0; nt < T::kWarpNTiles; ++nt)
    b_base[nt] = kBK * kTile + narrow_b_frag_index<kN>(warp_n, lane, 0, nt);
  float acc[4][T::kWarpNTiles][4];
  tf32x3::mainloop<kStages, T::kStageFloats>(
      smem, p.plan.k_tiles, acc,
      [&](uint32_t stage, int) { load_narrow_stage<kN>(p, loader, stage); },
      [&](const float* stage, float(&c)[4][T::kWarpNTiles][4]) {
        narrow_mma_stage<kN>(stage, a_base, b_base, warp_k * T::kSteps, c);
      });
  __syncthreads();  // every warp is done with the stages: they become the C tiles
  narrow_stash<kN>(smem + warp_k * T::kCTileFloats, warp_m, warp_n, lane, acc);
  __syncthreads();
  if constexpr (T::kSplitK > 1) {
    reduce_split_tiles<kN>(smem);
    __syncthreads();
  }
  epilogue(p, tile, smem, output_rows(p.plan, tile, lane));
}

// Packs w and launches the narrow GEMM; p.plan from plan_parity_gemm(g, kN) (one n tile).
template <int kN, class Epilogue>
Status launch_narrow_gemm(const GemmParams& p, const float* w, float* packed,
                          const Epilogue& epilogue, cudaStream_t stream) {
  if (p.plan.n_tiles != 1 || p.plan.c_out > kN)
    return Status::invalid_argument("narrow parity GEMM: C_out above the channel tile");
  const int64_t pack_blocks = std::min<int64_t>(
      (static_cast<int64_t>(narrow_packed_floats<kN>(p.plan)) + 255) / 256, int64_t{1} << 16);
  pack_pairs_kernel<kN><<<static_cast<unsigned>(pack_blocks), 256, 0, stream>>>(w, packed, p.plan);
  KB_CUDA_TRY(cudaGetLastError());
  GemmParams q = p;
  q.b = packed;
  narrow_gemm_kernel<kN, Epilogue>
      <<<static_cast<unsigned>(p.plan.blocks()), kThreads, Narrow<kN>::kSmemBytes, stream>>>(
          q, epilogue);
  KB_CUDA_TRY(cudaGetLastError());
  return Status::ok();
}

template <int kN, class Epilogue>
Status prepare_narrow_gemm() {
  KB_CUDA_TRY(cudaFuncSetAttribute(narrow_gemm_kernel<kN, Epilogue>,
                                   cudaFuncAttributeMaxDynamicSharedMemorySize,
                                   Narrow<kN>::kSmemBytes));
  KB_CUDA_TRY(cudaFuncSetAttribute(narrow_gemm_kernel<kN, Epilogue>,
                                   cudaFuncAttributePreferredSharedMemoryCarveout,
                                   cudaSharedmemCarveoutMaxShared));
  return Status::ok();
}

}  // namespace kb::custom::parity_gemm
