// A transposed convolution of rank 1 to 3 (groups 1, stride <= 2, <= 3 taps per axis and phase)
// as implicit GEMMs per output phase class over a shared-memory input patch, in
// error-compensated TF32 (3xTF32) on mma.sync m16n8k8. Used by the custom variant of L1_070
// (L1_073 keeps the per-tap gather core, parity_gather3d.cuh, which measured faster for its 1-8
// taps per class); layers it cannot take run the generic gather of ../conv_transpose_gather.
// The math, the tiles and every index map: patch_plan3d.cuh.
//
// Per call: split_weights_kernel splits w into TF32 big + small, in B-fragment order.
// patch_gemm3d_kernel: persistent, one CTA per SM (8 warps, 2 stages of patch + weights, up to
// 208 KB); CTA b walks tiles b, b + grid, ... and each tile's chunks of 8 input channels as one
// flat list of items, double-buffered: while item i computes, item i + 1's weights stream in by
// cp.async and its raw patch (4 positions x 8 channels per thread) sits in registers, to be split
// and stored into the free stage after the MMAs. Per item and tap a warp does 8 + kNT LDS.128 and
// 3 x 4 x kNT MMAs (small terms first, then big x big); no split or gather in the MMA loop.
// Accumulation promoted per tap (one k8 step; kernels/cores/tf32x3/mma.cuh, mma3_k8_promoted): each
// tap's 3 MMAs of a tile start from zero and the partial sum goes into the fp32 accumulator by FADD
// (round to nearest), since a long sum kept in the MMA accumulator truncates toward zero every
// MMA: K = 1,296 (486 MMAs) made L1_070's error 14-20x the fp32 reference's on the robustness
// trials' shifted / scaled inputs (H200: scale 11.5x the tolerance vs 0.79x); promoted, a scratch
// RZ model gives 0.3-0.5x the fp32-FMA error. Cost: 4 kNT FADD per m16 tile and tap (48 per warp
// and tap beside 36 MMAs at kNT 3) and 4 kNT registers of partial sums (ptxas: kNT 3 198 -> 220
// registers, kNT 4 212 -> 228, no spills; period 1 because a longer one keeps a second 16 kNT
// accumulator live, past the 255-register limit at kNT 4).
// At a tile's end the accumulators go straight to y (positions outside the output not stored).
// Layers of few tiles (at most half the SMs) split each tile's chunks (and then its taps) over up
// to SMs / tiles CTAs, each storing its partial sums to a workspace that
// kernels/cores/split_sum.cuh adds into y in split order (deterministic).
//
// Thread safety: stateless kernels; one ParityConvTranspose3d per thread at a time.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "common/cuda/cuda_check.h"
#include "common/cuda/device_query.h"
#include "common/problem_spec.h"
#include "common/status.h"
#include "kernels/cores/conv_transpose3d_tf32x3/patch_plan3d.cuh"
#include "kernels/cores/conv_transpose_gather/gather.cuh"
#include "kernels/cores/conv_transpose_gather/plane_gather.cuh"
#include "kernels/cores/split_sum.cuh"
#include "kernels/cores/tf32x3/mma.cuh"
#include "kernels/implementation.h"

namespace kb::custom::ct3d {

using ::kb::tf32x3::cp_async_16;
using ::kb::tf32x3::cp_async_commit;
using ::kb::tf32x3::cp_async_wait;
using ::kb::tf32x3::mma3_k8_promoted;
using ::kb::tf32x3::split_tf32;
using ::kb::tf32x3::SplitTf32;

// ---- per-call weight split: w_split[f] = part of w[weight_source(f).index], 0 past C_in/C_out
// ----

template <int kBlock>
__global__ void __launch_bounds__(kBlock)
    split_weights_kernel(const float* __restrict__ w, float* __restrict__ w_split, const Plan p) {
  for (int64_t f = int64_t{blockIdx.x} * kBlock + threadIdx.x; f < p.w_floats;
       f += int64_t{gridDim.x} * kBlock) {
    const WeightSource s = weight_source(p, f);
    const SplitTf32 v = split_tf32(s.index < 0 ? 0.0f : w[s.index]);
    w_split[f] = __uint_as_float(s.part == 0 ? v.big : v.small);
  }
}

// ---- the GEMM kernel ----

struct GemmParams {
  Plan plan;
  const float* x;        // (N, C_in, D, H, W)
  const float* w_split;  // from split_weights_kernel
  float* y;              // (N, C_out, D_out, H_out, W_out)
  // Split over input channels and taps: `splits` units per tile, unit s summing chunks
  // [c span, c span + span) with c = s / tap_splits, and taps [t tap_span, t tap_span +
  // tap_span) of its class with t = s % tap_splits (none past the class's taps); with splits > 1
  // unit s stores its partial sums to partial + s * |y| (y's layout) and split_sum_kernel adds
  // them into y in order.
  int splits = 1, span = 1, tap_splits = 1, tap_span = kMaxClassTaps;
  float* partial = nullptr;
};

using PatchRegs = float[kSlots][kChunk];  // this thread's patch positions x the chunk's channels

// raw[s][c] = x[n, 8 chunk + c, patch origin + patch_coord(tid + 256 s)], 0 outside x / C_in.
__device__ __forceinline__ void load_patch(const GemmParams& g, const Tile& t, int chunk,
                                           const uint32_t (&slot)[kSlots], PatchRegs& raw) {
  const Plan& p = g.plan;
  const int ci0 = chunk * kChunk;
  const int64_t plane = p.in_plane();
  const float* image = g.x + (int64_t{t.n} * p.c_in + ci0) * plane;
#pragma unroll
  for (int s = 0; s < kSlots; ++s) {
    bool inside = slot[s] != kNoCoord;
    int at = 0;
#pragma unroll
    for (int a = 0; a < kAxes; ++a) {
      const int i = t.q0[a] - (p.ax[a].span - 1) + coord_of(slot[s], a);
      inside = inside && static_cast<unsigned>(i) < static_cast<unsigned>(p.ax[a].in);
      at = at * p.ax[a].in + i;
    }
    at = inside ? at : 0;  // a valid address even where the load is skipped
#pragma unroll
    for (int c = 0; c < kChunk; ++c)
      raw[s][c] = inside && ci0 + c < p.c_in ? __ldg(image + at + c * plane) : 0.0f;
  }
}

// Splits the registers into plane c: float4 (big[c], small[c], big[c + 4], small[c + 4]).
__device__ __forceinline__ void store_patch(float* patch, int plane_quads,
                                            const uint32_t (&slot)[kSlots], const PatchRegs& raw) {
#pragma unroll
  for (int s = 0; s < kSlots; ++s) {
    if (slot[s] == kNoCoord) continue;
    const int pos = threadIdx.x + s * kThreads;
#pragma unroll
    for (int c = 0; c < kPlanes; ++c) {
      const SplitTf32 lo = split_tf32(raw[s][c]), hi = split_tf32(raw[s][c + kPlanes]);
      *reinterpret_cast<float4*>(patch + 4 * (c * plane_quads + pos)) =
          make_float4(__uint_as_float(lo.big), __uint_as_float(lo.small), __uint_as_float(hi.big),
                      __uint_as_float(hi.small));
    }
  }
}

// The taps [begin, end) of a tile's class that a unit with tap split `ts` sums.
struct TapRange {
  int begin, end;
};
__device__ __forceinline__ TapRange tap_range(const GemmParams& g, int cls, int ts) {
  const int taps = g.plan.class_taps(cls);
  return {min(taps, ts * g.tap_span), min(taps, (ts + 1) * g.tap_span)};
}

// One item's weights: taps r of the contiguous block (class, n-group, chunk) of w_split.
__device__ __forceinline__ void load_weights(const GemmParams& g, uint32_t weights, const Tile& t,
                                             int chunk, TapRange r) {
  const Plan& p = g.plan;
  const int tap_floats = p.n_tiles * kFragFloats;
  const int floats = (r.end - r.begin) * tap_floats;
  const float* src = g.w_split + p.w_offset[t.cls] +
                     (int64_t{t.ng} * p.chunks + chunk) * p.w_block_floats(t.cls) +
                     r.begin * tap_floats;
  for (int q = threadIdx.x; q < floats / 4; q += kThreads)
    cp_async_16(weights + 16 * q, src + 4 * q);
}

__device__ __forceinline__ uint4 lds128(const float* at) {
  return *reinterpret_cast<const uint4*>(at);
}

template <int kNT>
using Acc = float[kMT][kNT][4];

// acc += the 3xTF32 product of one item. a_at[mt][h]: the lane's float offset of its pixel
// 16 mt + 8 h + g (plane t, tap offset 0) in the patch; weights: the item's block + 4 lane.
template <int kNT>
__device__ __forceinline__ void mma_item(const GemmParams& g, int cls, TapRange r,
                                         const float* patch, const float* weights,
                                         const int (&a_at)[kMT][2], Acc<kNT>& acc) {
#pragma unroll 2  // lets ptxas issue the next tap's LDS.128 under this tap's MMAs (212 registers)
  for (int ti = r.begin; ti < r.end; ++ti) {
    const float* tap_patch = patch + 4 * g.plan.tap_off[cls][ti];
    const float* tap_weights = weights + (ti - r.begin) * kNT * kFragFloats;
    uint32_t a_big[kMT][4], a_small[kMT][4], b_big[kNT][2], b_small[kNT][2];
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
      for (int h = 0; h < 2; ++h) {  // pixel g + 8 h: (a_h, a_{h+2}) = channels (t, t + 4)
        const uint4 v = lds128(tap_patch + a_at[mt][h]);
        a_big[mt][h] = v.x, a_small[mt][h] = v.y, a_big[mt][h + 2] = v.z, a_small[mt][h + 2] = v.w;
      }
#pragma unroll
    for (int nt = 0; nt < kNT; ++nt) {
      const uint4 v = lds128(tap_weights + nt * kFragFloats);
      b_big[nt][0] = v.x, b_big[nt][1] = v.y, b_small[nt][0] = v.z, b_small[nt][1] = v.w;
    }
#pragma unroll
    for (int mt = 0; mt < kMT;
         ++mt)  // promoted per tap (= one k8 step): see kernels/cores/tf32x3/mma.cuh
      mma3_k8_promoted<kNT>(acc[mt], a_big[mt], a_small[mt], b_big, b_small);
  }
}

// y[n, co, o] of the lane's pixels (c0, c1: pixel g, channels 2t, 2t + 1; c2, c3: pixel g + 8),
// then acc = 0. px[mt][h]: box coordinates of pixel 16 mt + 8 h + g of the warp.
template <int kNT>
__device__ __forceinline__ void store_tile(const GemmParams& g, const Tile& t, int split,
                                           const uint32_t (&px)[kMT][2], int lane, Acc<kNT>& acc) {
  const Plan& p = g.plan;
  const int64_t plane = p.out_plane();
  float* out = g.splits == 1 ? g.y : g.partial + split * (int64_t{p.batch} * p.c_out * plane);
  float* image = out + int64_t{t.n} * p.c_out * plane;
  const int co0 = t.ng * kNT * 8 + 2 * (lane % 4);
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      bool inside = px[mt][h] != kNoCoord;
      int at = 0;
#pragma unroll
      for (int a = 0; a < kAxes; ++a) {
        const Axis& ax = p.ax[a];
        const int o = (t.q0[a] + coord_of(px[mt][h], a)) * ax.stride + p.phase(t.cls, a) - ax.pad;
        inside = inside && static_cast<unsigned>(o) < static_cast<unsigned>(ax.out);
        at = at * ax.out + o;
      }
      if (!inside) continue;
#pragma unroll
      for (int nt = 0; nt < kNT; ++nt)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const int co = co0 + 8 * nt + e;
          if (co < p.c_out) image[co * plane + at] = acc[mt][nt][2 * h + e];
        }
    }
  tf32x3::zero_accumulators(acc);
}

// Grid: persistent, gridDim.x <= tiles_total x splits; block kThreads; dynamic shared
// plan.smem_bytes. Unit u = (tile u / splits, split u % splits).
template <int kNT>
__global__ void __launch_bounds__(kThreads, 1) patch_gemm3d_kernel(const GemmParams g) {
  extern __shared__ __align__(16) float smem[];
  const Plan& p = g.plan;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int first = static_cast<int>(blockIdx.x), step = static_cast<int>(gridDim.x);
  const int units = p.tiles_total * g.splits;
  const int items = (units - first + step - 1) / step * g.span;  // (unit, chunk) pairs
  const uint32_t smem_base = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  const int w_at = 4 * kPlanes * p.plane_quads;  // weights after the patch in a stage
  const auto patch_of = [&](int stage) { return smem + stage * p.stage_floats; };
  const auto weights_at = [&](int stage) {
    return smem_base + 4u * (stage * p.stage_floats + w_at);
  };

  uint32_t slot[kSlots];
#pragma unroll
  for (int s = 0; s < kSlots; ++s)
    slot[s] = patch_coord(p, static_cast<int>(threadIdx.x) + s * kThreads);
  uint32_t px[kMT][2];
  int a_at[kMT][2];
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int m = warp * kMT * 16 + mt * 16 + h * 8 + lane / 4;
      px[mt][h] = pixel_coord(p, m);
      a_at[mt][h] = 4 * ((lane % 4) * p.plane_quads + pixel_position(p, m));
    }

  Tile cur = tile_of(p, first / g.splits);
  int split = first % g.splits, chunk = split / g.tap_splits * g.span;
  TapRange taps = tap_range(g, cur.cls, split % g.tap_splits);
  PatchRegs raw;
  load_weights(g, weights_at(0), cur, chunk, taps);
  cp_async_commit();
  load_patch(g, cur, chunk, slot, raw);
  store_patch(patch_of(0), p.plane_quads, slot, raw);
  cp_async_wait<0>();
  __syncthreads();

  Acc<kNT> acc;
  tf32x3::zero_accumulators(acc);

  int unit = first;  // item i = (unit, chunk)
  for (int i = 0; i < items; ++i) {
    const int stage = i & 1;
    const bool tile_done = chunk + 1 == (split / g.tap_splits + 1) * g.span;
    const bool has_next = i + 1 < items;
    const int next_unit = tile_done ? unit + step : unit;
    const int next_split = next_unit % g.splits;
    const int next_chunk = tile_done ? next_split / g.tap_splits * g.span : chunk + 1;
    const Tile next = tile_done && has_next ? tile_of(p, next_unit / g.splits) : cur;
    const TapRange next_taps =
        tile_done && has_next ? tap_range(g, next.cls, next_split % g.tap_splits) : taps;
    if (has_next) {  // stage ^ 1 was last read in item i - 1, before the barrier that ended it
      load_weights(g, weights_at(stage ^ 1), next, next_chunk, next_taps);
      load_patch(g, next, next_chunk, slot, raw);
    }
    cp_async_commit();
    mma_item<kNT>(g, cur.cls, taps, patch_of(stage), patch_of(stage) + w_at + 4 * lane, a_at, acc);
    if (tile_done) store_tile<kNT>(g, cur, split, px, lane, acc);
    if (has_next) store_patch(patch_of(stage ^ 1), p.plane_quads, slot, raw);
    cp_async_wait<0>();
    __syncthreads();
    unit = next_unit;
    split = next_split;
    chunk = next_chunk;
    cur = next;
    taps = next_taps;
  }
}

// ---- the custom variant ----

// Runs conv_transpose node `node` (input x_name, weight w_name) as the split gather on layers of
// few outputs with long sums that the generic gather would take (split_gather.cuh), else as the
// plane gather when it applies (stride-1 3 x 3 x 3 layers of <= 8 output channels), else as the
// patch GEMM when the plan applies, else as the generic gather. Channel groups of 24 when C_out
// <= 24, else of 32.
class ParityConvTranspose3d : public Implementation {
 public:
  // Whether layers of <= 8 output channels run the plane gather (plane_gather.cuh). On since
  // session 35: its second form (register blocks, cp.async double buffer) measured 1.25-5.6x
  // faster than the paths it replaces (the generic gather, the patch GEMM) at 16 of 17 layers
  // tried and as fast at the 17th (N 2, 5 -> 3, 3 x 5 x 7: 12 us, launch-bound); L1_070's sweeps
  // of seeds 77 and 2031 went from 0.63x and 0.62x to met (H100; docs/kernels.md, session 35);
  // session 36 took it 1.1-1.3x further where its layers are largest or single-sample.
  // Off restores those paths.
  static constexpr bool kRoutePlaneGather = true;

  ParityConvTranspose3d(const char* node, const char* x_name, const char* w_name)
      : node_{node, x_name, w_name} {}
  ~ParityConvTranspose3d() override {
    KB_CUDA_WARN(cudaFree(w_split_));
    KB_CUDA_WARN(cudaFree(partial_));
  }

  Status setup(const ProblemInstance& p, cudaStream_t /*stream*/) override {
    KB_TRY(node_.bind(p));
    fast_ = plane_ = false;
    KB_ASSIGN_OR_RETURN(sms_, cuda::sm_count());
    // One output channel of few outputs with long sums, a layer for the generic gather: its split
    // form, ahead of the plane gather (run() takes launch_generic, which picks it, while fast_ and
    // plane_ are false). Session 41, H100 (split_gather.cuh): N 1, 45 -> 1, 3 x 79 x 11 22 -> 20 us
    // (reference 17; 18 at 16 lanes, session 42); at 3 channels the plane gather stayed faster
    // (N 2, 35 -> 3: 27 against 34).
    if (node_.geometry.out_per_group() == 1 && gather::split_reduction_lanes(node_.geometry) > 0 &&
        gather::generic_is_faster(node_.geometry))
      return Status::ok();
    // Few output channels: the plane gather (run() takes it while plane_ is set).
    if constexpr (kRoutePlaneGather) {
      if (Result<gather::PlaneGatherPlan> plane = gather::plan_plane_gather(node_.geometry, sms_);
          plane.is_ok()) {
        plane_plan_ = plane.value();
        plane_ = true;
        return gather::prepare_plane_gather(plane_plan_);
      }
    }
    narrow_ = node_.geometry.out_channels <= 8 * kNarrowTiles;
    const double waste =
        gather::tile_waste(node_.geometry, 8 * (narrow_ ? kNarrowTiles : kWideTiles), kChunk);
    // The generic gather is faster (run() takes it while fast_ is false).
    if (gather::generic_is_faster(node_.geometry, waste)) return Status::ok();
    Result<Plan> plan = plan_patch_gemm(node_.geometry, narrow_ ? kNarrowTiles : kWideTiles);
    fast_ = plan.is_ok();
    if (!fast_) return Status::ok();
    plan_ = plan.value();
    KB_ASSIGN_OR_RETURN(const int smem_optin,
                        cuda::device_attribute(cudaDevAttrMaxSharedMemoryPerBlockOptin));
    fast_ = plan_.smem_bytes <= smem_optin;
    if (!fast_) return Status::ok();
    KB_CUDA_TRY(cudaMalloc(&w_split_, static_cast<size_t>(plan_.w_floats) * sizeof(float)));
    plan_splits();
    if (splits_ > 1) {
      KB_CUDA_TRY(cudaMalloc(&partial_, sizeof(float) * static_cast<size_t>(splits_) *
                                            static_cast<size_t>(node_.geometry.output_numel())));
    }
    return narrow_ ? allow<kNarrowTiles>(smem_optin) : allow<kWideTiles>(smem_optin);
  }

  Status run(const ImplArgs& args, cudaStream_t stream) override {
    const float* x = node_.input(args);
    const float* w = node_.weight(args);
    if (plane_) return gather::launch_plane_gather(x, w, args.output.data, plane_plan_, stream);
    if (!fast_) return gather::launch_generic(x, w, args.output.data, node_.geometry, stream);
    constexpr int kBlock = 256;
    const int64_t blocks = std::min<int64_t>((plan_.w_floats + kBlock - 1) / kBlock, 1 << 16);
    split_weights_kernel<kBlock>
        <<<static_cast<unsigned>(blocks), kBlock, 0, stream>>>(w, w_split_, plan_);
    KB_CUDA_TRY(cudaGetLastError());
    GemmParams gp{plan_, x, w_split_, args.output.data};
    gp.splits = splits_, gp.span = span_, gp.tap_splits = tap_splits_, gp.tap_span = tap_span_;
    gp.partial = partial_;
    KB_TRY(narrow_ ? launch<kNarrowTiles>(gp, stream) : launch<kWideTiles>(gp, stream));
    if (splits_ == 1) return Status::ok();
    return split_sum::launch_split_sum(partial_, args.output.data, node_.geometry.output_numel(),
                                       splits_, stream);
  }

 private:
  static constexpr int kNarrowTiles = 3, kWideTiles = 4;  // n8 tiles per channel group

  // Units per tile where the tiles fill at most half of the SMs: the chunks split by the largest
  // divisor d of their count with tiles x d <= SMs (N 2, C_in 48, C_out 24, 12^3: 16 tiles of 6
  // chunks took 100 us on 16 CTAs against the reference's 42, session 22), then, while that
  // still fills at most half, the taps in runs of >= kMinTapSpan (N 2, C_in 48, 5 x 7 x 9: 24
  // units of 27 taps, 25 us in ncu).
  static constexpr int kMinTapSpan = 3;
  void plan_splits() {
    const int tiles = plan_.tiles_total, chunks = plan_.chunks;
    int d = 1;
    if (2 * tiles <= sms_)
      for (int c = 2; c <= chunks; ++c)
        if (chunks % c == 0 && int64_t{tiles} * c <= sms_) d = c;
    int max_taps = 1;
    for (int c = 0; c < plan_.classes; ++c) max_taps = std::max(max_taps, plan_.class_taps(c));
    int ts = 1;
    if (2 * tiles * d <= sms_)
      ts = std::clamp(sms_ / (tiles * d), 1, (max_taps + kMinTapSpan - 1) / kMinTapSpan);
    tap_span_ = (max_taps + ts - 1) / ts;
    tap_splits_ = (max_taps + tap_span_ - 1) / tap_span_;
    span_ = chunks / d;
    splits_ = d * tap_splits_;
  }

  // The device's limit, not this plan's: the kernel template is shared by every problem whose
  // custom.cu includes this header, and a later setup must not lower an earlier plan's limit.
  template <int kNT>
  Status allow(int smem_bytes) {
    KB_CUDA_TRY(cudaFuncSetAttribute(patch_gemm3d_kernel<kNT>,
                                     cudaFuncAttributeMaxDynamicSharedMemorySize, smem_bytes));
    return Status::ok();
  }
  template <int kNT>
  Status launch(const GemmParams& gp, cudaStream_t stream) {
    const int grid =
        static_cast<int>(std::min<int64_t>(int64_t{plan_.tiles_total} * splits_, sms_));
    patch_gemm3d_kernel<kNT><<<grid, kThreads, plan_.smem_bytes, stream>>>(gp);
    KB_CUDA_TRY(cudaGetLastError());
    return Status::ok();
  }

  gather::ConvTransposeNode node_;
  bool fast_ = false, narrow_ = false, plane_ = false;
  gather::PlaneGatherPlan plane_plan_;
  int sms_ = 1;
  int splits_ = 1;  // units per tile (plan_splits): chunk splits x tap splits
  int span_ = 1, tap_splits_ = 1, tap_span_ = kMaxClassTaps;  // chunks per unit; tap splits
  Plan plan_;
  float* w_split_ = nullptr;
  float* partial_ = nullptr;  // (splits, |y|) where splits_ > 1
};

}  // namespace kb::custom::ct3d
