// L2_021's conv on Hopper's warpgroup MMA (sm_90a, tf32x3/wgmma.cuh), for 3x3 unit convs with
// C_in <= 8 and C_out <= 32 (the full preset: 8 -> 32 channels, 254 x 254 outputs), in two passes
// of one kernel: the statistics pass (per-row sums of the sigmoid output, nothing stored), the
// coefficient fold (group_norm_pipeline/pipeline.cuh), then the store pass, which recomputes the
// conv and writes the normalized output once. Recomputing costs a second conv on the tensor
// cores (~0.3 ms of tensor time at the full preset; the statistics pass measured 0.63 ms,
// latency-bound; 0.53 with the fast sigmoid); storing the pre-norm tensor and reading it back cost
// a 2.1 GB DRAM round trip
// (~0.5 ms) on top of the stores (session 17's normalize pass).
//
// GEMM view. C_out is 32 at most, so one m64 of output channels would leave half of M idle.
// Instead M = 2 output rows x 32 channels: a warpgroup's rows oh, oh + 1 read the 4 input rows
// oh .. oh + 3, and for input row i (0..3) and kernel column kw the A operand is
//   A[(r, co)][ci] = w[co][ci][i - r][kw]   (zero where i - r is outside 0..2 or co >= C_out),
// 12 (i, kw) taps of K = 8 input channels, 3 product terms each (a_small b_big, a_big b_small,
// a_big b_big): 36 m64n128k8 wgmmas per warpgroup and tile, 75% of the rows useful (the taps of
// input rows 0 and 3 serve one output row). B = the input patch's row i shifted by kw: the patch
// sits in shared memory as plain K-major core matrices [part][ci / 4][pixel][ci % 4], so a shift
// is a descriptor start address (as in conv3x3_wgmma/conv3x3_wgmma.cuh).
//
// Item: 2 output rows x 128 output columns x all channels, one warpgroup's (one m64n128
// accumulator, 64 per thread). Thread t of the warpgroup, warp w = t / 32, lane l:
// acc[4 j + 2 h + e] is M row 16 w + l / 4 + 8 h, i.e. output row w / 2 of the item and channel
// 16 (w % 2) + l / 4 + 8 h, column 8 j + 2 (l % 4) + e. A CTA (one per SM) is 4 independent
// warpgroups over the split weights (48 KB, staged once), each with its own patch (4 x 130
// pixels x 8 channels, big and small: 32.5 KB) and named barrier, taking every 4 gridDim-th item:
// while one warpgroup runs its epilogue, the others' wgmmas keep the tensor pipe busy (two CTAs
// of two warpgroups sharing a 6-row patch in lockstep ran 1.77 ms, these 1.55: docs/kernels.md).
// Per item: load the patch into registers (loaded before the previous epilogue, they were
// hoisted into it by the compiler and spilled), barrier, split and store it, barrier, issue the
// wgmmas, wait, epilogue.
//
// Epilogues (g = sigmoid((conv + conv.bias + bias) * scale)):
//  - statistics: per (sample, output row, column tile, channel) the sums of g and g^2 over the
//    tile's columns, to partials[((n H' + oh) tiles_w + tw) C_out + co]: each of the channel's 4
//    lanes sums its 32 values about the pilot (lane 4 (l / 4)'s first value) in fp32, the lanes
//    combine by shuffles, and the raw sums are formed in double (sum g = s1 + n p, sum g^2 = s2 +
//    2 p s1 + n p^2), as the mma.sync path's TensorEpilogue does. Here g is
//    `statistics_activation` (one FMA and two MUFU instructions, within ~2^-21.7 of the true
//    sigmoid relatively for g >= 0.01 and ~2e-8 absolutely below, without bias: a dense sweep of
//    t on an H100, session 52) rather than `activation` (the reference's rounding: expf and the
//    rounded division, ~20 instructions a value; the kernel's sm_90a code, which holds the
//    64-value epilogue twice, shrank from 6,496 to 3,744 instructions). A group here holds at
//    least kMinGroupChannels channels of >= 96 columns (RowsConv::fits), whose mean and
//    variance average the per-value differences (tools/sigmoid_stats_error.py bounds them);
//  - store: out = fmaf(g, scale[n][co], shift[n][co]) (the fold's coefficients), g by
//    `store_activation` (2^x by ex2.approx, the rounded division kept; activation.cuh says what
//    bounds its error), staged in the warpgroup's patch buffer and stored a (channel, row) at a
//    time (stage_index): from the fragment directly, each warp store wrote 8 sectors in 8 lines
//    (that pass: 1.23 ms under ncu; staged: 0.91 ms). The copy-out walks the staging with each
//    thread's column fixed and one add per channel step (staging.h), and a warpgroup's items
//    advance by carries (item_walk.h): 474 M
//    -> 297 M warp instructions, that pass 0.90 -> 0.73 ms under ncu, the whole 1.544 -> 1.383 ms
//    (session 27). Session 53 (H100, ncu and `kb bench L2_021 --time-cap 1.5 --seed 7`,
//    /work/.device/3 and 6): the fast sigmoids took the statistics pass from 623 to 532 us (289 M
//    -> 198 M warp instructions) and the store pass from 799 to 724 us; the whole 1.44 -> 1.27 ms.
//
// Accuracy: 3xTF32 (~fp32 per product, tf32x3/mma.cuh); each output's chain of 36 wgmmas is
// summed in the tensor core, which truncates per k8 step (tf32x3_tile.cuh's note): a chain as
// long as one promoted stage of the conv3x3 core (27), not the C_in / 8 x 27 of a deep conv.
// Robustness trials (H200, session 24 call 6, N 2 x 8 -> 32 channels, 9 x 69, against the golden
// model; custom / reference as a multiple of the tolerance): shift 0.143x / 0.171x, centered
// 0.014x / 0.013x, random_affine 0.012x / 0.006x, scale 1.615x / 0.457x (`marginal`, as the
// mma.sync path's 1.35x: the truncating sums at the magnitude of the cancelling products).
//
// Thread safety: stateless device code; a RowsConv is used by one thread at a time.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "common/cuda/cuda_check.h"
#include "common/cuda/device_query.h"
#include "common/status.h"
#include "kernels/L2_021_conv2d_add_scale_sigmoid_groupnorm/activation.cuh"
#include "kernels/L2_021_conv2d_add_scale_sigmoid_groupnorm/item_walk.h"
#include "kernels/L2_021_conv2d_add_scale_sigmoid_groupnorm/staging.h"
#include "kernels/cores/conv3x3_patch/patch_loads.cuh"
#include "kernels/cores/tf32x3/mma.cuh"
#include "kernels/cores/tf32x3/wgmma.cuh"

namespace kb::custom::L2_021::rows {

namespace wgmma = ::kb::tf32x3::wgmma;

constexpr int kGroups = 4;  // independent warpgroups per CTA, one CTA per SM
constexpr int kThreads = kGroups * kGroupThreads;
constexpr int kM = 64;  // 2 output rows x 32 channels
constexpr int kCi = 8;  // K: C_in <= 8, one k8 step per tap
constexpr int kQuads = kCi / 4;
constexpr int kInRows = kTileRows + 2;  // its input rows
constexpr int kTaps = kInRows * 3;
constexpr int kPatchCols = kTileCols + 2;           // 130
constexpr int kPatchPixels = kInRows * kPatchCols;  // 520
constexpr int kPatchPitch = (kPatchPixels + 7) / 8 * 8;
constexpr int kPatchSlots = (kPatchPixels + kGroupThreads - 1) / kGroupThreads;  // 5
constexpr int kWTapFloats = 2 * kQuads * kM * 4;            // big + small of one tap: 1,024
constexpr int kWFloats = kTaps * kWTapFloats;               // 12,288 (48 KB)
constexpr int kPatchFloats = 2 * kQuads * kPatchPitch * 4;  // 8,320 per warpgroup (32.5 KB)
constexpr int kSmemBytes = (kWFloats + kGroups * kPatchFloats) * 4;
constexpr int kAccs = 64;  // one m64n128 fragment
// Channels a GroupNorm group must hold for this path (the statistics' approximate sigmoids
// average over >= 3 x 96 values; the spec's 8 groups of 16 < C_out <= 32 channels hold 3 or 4).
constexpr int64_t kMinGroupChannels = 3;
static_assert(kSmemBytes <= 227 * 1024, "one CTA per SM");

// Float index of weight (tap, part, ci, m) in shared memory: [tap][part][ci / 4][m][ci % 4].
__host__ __device__ constexpr int weight_index(int tap, int part, int ci, int m) {
  return (((tap * 2 + part) * kQuads + ci / 4) * kM + m) * 4 + ci % 4;
}
// Sizes validated by the host (RowsConv::setup): every plane and the tile count fit int.
struct Args {
  const float* x;       // (N, C_in, H, W)
  const float* w;       // (C_out, C_in, 3, 3)
  const float* b_conv;  // (C_out)
  const float* bias;    // (C_out)
  const float* scale;   // (C_out)
  double2* partials;    // statistics pass: [N][H' tiles_w][C_out] (sum g, sum g^2)
  const float2* coef;   // store pass: [N][C_out] (scale, shift)
  float* out;           // store pass: (N, C_out, H', W')
  int c_in, c_out, h, w_in, ho, wo;
  int batch, tiles_h, tiles_w;  // items: (n, row pair, column tile)
  ItemWalk step;  // a warpgroup's item stride, gridDim.x kGroups of the launch, decomposed
  bool pairs;     // store pass: W' even and `out` 8-byte aligned (8-byte stores)
};

// The split weights in shared memory, zero outside each tap's rows (see the GEMM view).
__device__ __forceinline__ void stage_weights(const Args& a, float* weights) {
  for (int e = static_cast<int>(threadIdx.x); e < kTaps * kM * kCi; e += kThreads) {
    const int tap = e / (kM * kCi), m = e / kCi % kM, ci = e % kCi;
    const int i = tap / 3, kw = tap % 3, co = m % kChannels, kh = i - m / kChannels;
    const bool used = kh >= 0 && kh < 3 && co < a.c_out && ci < a.c_in;
    const float v = used ? __ldg(a.w + ((co * a.c_in + ci) * 3 + kh) * 3 + kw) : 0.0f;
    const ::kb::tf32x3::SplitTf32 s = ::kb::tf32x3::split_tf32(v);
    weights[weight_index(tap, 0, ci, m)] = __uint_as_float(s.big);
    weights[weight_index(tap, 1, ci, m)] = __uint_as_float(s.small);
  }
}

struct Tile {
  int n, r0, c0, tw;
};
__device__ __forceinline__ Tile tile_of(const ItemWalk& item) {
  return {item.n, item.th * kTileRows, item.tw * kTileCols, item.tw};
}

using PatchRegs = float[kPatchSlots][kCi];

// The item's patch (rows r0 .. r0 + 3, columns c0 .. c0 + 129, 8 channels) in thread wt's
// registers (wt: the thread in its warpgroup), then split into the warpgroup's planes.
__device__ __forceinline__ void load_patch(const Args& a, const Tile& t, int wt, PatchRegs& raw) {
  conv3x3_patch::load_patch<kPatchCols, kPatchPixels, kGroupThreads>(
      a.x, t.n, a.c_in, 0, a.h, a.w_in, t.r0, t.c0, static_cast<unsigned>(wt), raw);
}
__device__ __forceinline__ void store_patch(float* patch, int wt, const PatchRegs& raw) {
  conv3x3_patch::store_patch_planes<kPatchPixels, kPatchPitch, kGroupThreads>(
      patch, static_cast<unsigned>(wt), raw);
}

// Warpgroup `group`'s barrier (named barrier 1 + group; 0 is __syncthreads').
__device__ __forceinline__ void group_barrier(int group) {
  asm volatile("bar.sync %0, %1;" ::"r"(1 + group), "n"(kGroupThreads) : "memory");
}

// A value the compiler cannot see through, so that the descriptors derived from it are rebuilt
// per item (one add each) rather than hoisted out of the item loop as 48 live 64-bit values.
// Added against spills that turned out to come from elsewhere (ptxas -v reported the same 108
// bytes with and without it; the patch loads hoisted into the epilogue were the cause); its own
// effect is unmeasured, and it stays because the measured build (session 24, call 6) has it.
__device__ __forceinline__ uint64_t opaque(uint64_t v) {
  asm volatile("mov.b64 %0, %0;" : "+l"(v));
  return v;
}

// Warpgroup `group`'s 36 wgmmas of a tile (its output rows 2 group, 2 group + 1). A descriptor's
// start address is its low 14 bits (bytes >> 4, no carry out: shared memory < 256 KB), so each
// tap's is the operand base's plus a constant.
__device__ __forceinline__ void mma_tile(const float* weights, const float* patch,
                                         float (&acc)[kAccs]) {
  constexpr uint32_t kCoreRows = 8 * 16;              // 8 rows (M rows or pixels) x 16 B
  constexpr uint32_t kWQuadBytes = kM * 16;           // next 4 input channels of the weights
  constexpr uint32_t kPQuadBytes = kPatchPitch * 16;  // next 4 input channels of the patch
  constexpr int kPSmallFloats = kQuads * kPatchPitch * 4;
  const uint64_t w0 = opaque(wgmma::plain_descriptor(weights, kWQuadBytes, kCoreRows));
  const uint64_t p0 = opaque(wgmma::plain_descriptor(patch, kPQuadBytes, kCoreRows));
#pragma unroll
  for (int tap = 0; tap < kTaps; ++tap) {
    const int i = tap / 3, kw = tap % 3;
    const uint64_t ab = w0 + weight_index(tap, 0, 0, 0) / 4;  // floats / 4 = 16-byte units
    const uint64_t as = w0 + weight_index(tap, 1, 0, 0) / 4;
    const uint64_t bb = p0 + (i * kPatchCols + kw);  // one pixel = 16 bytes
    const uint64_t bs = bb + kPSmallFloats / 4;
    wgmma::mma_m64n128k8(acc, as, bb, tap != 0);
    wgmma::mma_m64n128k8(acc, ab, bs);
    wgmma::mma_m64n128k8(acc, ab, bb);
  }
}

// This thread's two channels' epilogue constants (h = 0, 1: channel co0 + 8 h).
struct Channels {
  int co0;
  SigmoidExponent exponent[2];  // both passes' sigmoid argument (activation.cuh)
};

// The statistics pass's epilogue for output row oh of tile t (see the header); kFull: all 128
// columns in range (no masks).
template <bool kFull>
__device__ __forceinline__ void row_sums(const Args& a, const Tile& t, int oh, const Channels& ch,
                                         const float (&acc)[kAccs]) {
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const int cols = kFull ? kTileCols : min(kTileCols, a.wo - t.c0), col0 = 2 * (lane % 4);
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const float pilot =
        __shfl_sync(0xffffffffu, statistics_activation(acc[2 * h], ch.exponent[h]), lane & ~3);
    float s1 = 0.0f, s2 = 0.0f;
#pragma unroll
    for (int j = 0; j < kTileCols / 8; ++j)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const float v = statistics_activation(acc[4 * j + 2 * h + e], ch.exponent[h]);
        const float d = kFull || 8 * j + col0 + e < cols ? v - pilot : 0.0f;
        s1 += d;
        s2 = fmaf(d, d, s2);
      }
#pragma unroll
    for (int m = 1; m < 4; m <<= 1) {  // the channel's 4 lanes (lane bits 0-1)
      s1 += __shfl_xor_sync(0xffffffffu, s1, m);
      s2 += __shfl_xor_sync(0xffffffffu, s2, m);
    }
    const int co = ch.co0 + 8 * h;
    if (lane % 4 == 0 && co < a.c_out) {
      const double p = pilot, d1 = s1, n = cols;
      a.partials[((int64_t{t.n} * a.ho + oh) * a.tiles_w + t.tw) * a.c_out + co] =
          make_double2(fma(n, p, d1), fma(n * p, p, fma(2.0 * p, d1, double{s2})));
    }
  }
}

static_assert(kTileRows * kChannels * kTileCols <= kPatchFloats, "the staging fits the patch");

// Writes this thread's normalized values of output row r (of the item's 2) into `stage`.
__device__ __forceinline__ void stage_row(float* stage, int r, const Channels& ch,
                                          const float2 (&coef)[2], const float (&acc)[kAccs]) {
  const int col0 = 2 * (static_cast<int>(threadIdx.x) % 4);
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int co = ch.co0 + 8 * h;
#pragma unroll
    for (int j = 0; j < kTileCols / 8; ++j) {
      float v[2];
#pragma unroll
      for (int e = 0; e < 2; ++e)
        v[e] = fmaf(store_activation(acc[4 * j + 2 * h + e], ch.exponent[h]), coef[h].x, coef[h].y);
      *reinterpret_cast<float2*>(stage + stage_index(r, co, 8 * j + col0)) =
          make_float2(v[0], v[1]);
    }
  }
}

// Grid: persistent, one CTA per SM; block kThreads; dynamic shared memory kSmemBytes. Each
// warpgroup takes items blockIdx.x kGroups + group, then every gridDim.x kGroups-th, on its own
// patch and barrier. kStore: the store pass, else the statistics pass.
template <bool kStore>
__global__ void __launch_bounds__(kThreads, 1) rows_kernel(const Args a) {
#if KB_WGMMA_ENABLED
  extern __shared__ __align__(16) float smem[];
  float* weights = smem;
  const int group = static_cast<int>(threadIdx.x) / kGroupThreads;
  const int wt = static_cast<int>(threadIdx.x) % kGroupThreads;
  float* patch = smem + kWFloats + group * kPatchFloats;
  const int warp = wt / 32, lane = wt % 32;
  stage_weights(a, weights);
  wgmma::fence_operand_stores();
  __syncthreads();
  Channels ch;
  ch.co0 = 16 * (warp % 2) + lane / 4;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int co = ch.co0 + 8 * h, c = co < a.c_out ? co : 0;
    ch.exponent[h] = sigmoid_exponent(a.b_conv[c], a.bias[c], a.scale[c]);
  }
  ItemWalk item =
      ItemWalk::at(static_cast<int>(blockIdx.x) * kGroups + group, a.tiles_h, a.tiles_w);
  PatchRegs raw;
  float acc[kAccs];
  for (; item.n < a.batch; item.advance(a.step, a.tiles_h, a.tiles_w)) {
    const Tile t = tile_of(item);
    load_patch(a, t, wt, raw);
    group_barrier(group);  // the previous item's wgmmas (all 4 warps waited) read the patch no more
    store_patch(patch, wt, raw);
    wgmma::fence_operand_stores();
    group_barrier(group);
    wgmma::fence();
    mma_tile(weights, patch, acc);
    wgmma::commit_group();
    float2 coef[2] = {};  // the store pass's (scale, shift) of the thread's channels, read early
    if constexpr (kStore) {
#pragma unroll
      for (int h = 0; h < 2; ++h)
        if (ch.co0 + 8 * h < a.c_out) coef[h] = a.coef[int64_t{t.n} * a.c_out + ch.co0 + 8 * h];
    }
    wgmma::wait_group<0>(acc);
    const int oh = t.r0 + warp / 2;
    const bool full = t.c0 + kTileCols <= a.wo;
    if constexpr (kStore) {
      group_barrier(group);  // every warp's wait passed: the wgmmas read the patch no more
      stage_row(patch, warp / 2, ch, coef, acc);
      group_barrier(group);
      store_staged(a.out, a.c_out, a.ho, a.wo, a.pairs, t.n, t.r0, t.c0, wt, patch);
    } else if (oh < a.ho) {  // warp-uniform
      if (full) {
        row_sums<true>(a, t, oh, ch, acc);
      } else {
        row_sums<false>(a, t, oh, ch, acc);
      }
    }
  }
#else
  (void)a;
  __trap();
#endif
}

// The plan: setup() once (whether the path takes the conv, the tiles, the grid), then per call
// run_statistics(), the caller's coefficient fold, run_store().
class RowsConv {
 public:
  struct Sizes {
    int64_t n, c_in, c_out, h, w;  // a 3x3 unit conv: H' = h - 2, W' = w - 2
    int64_t group_channels;        // GroupNorm's channels a group
  };

  // Whether this conv takes the path: its groups hold at least kMinGroupChannels channels (its
  // sigmoids are approximate: activation.cuh), the shape fits its item (C_in <= 8, C_out <= 32),
  // over half of M is real channels (C_out > 16; at 16 the mma.sync path was faster: N 16, C_in 3,
  // 100 x 70, 0.066 against 0.035 ms), the rows fill 3/4 of a 128-column tile (W' >= 96), the
  // sizes fit int, and (setup) the loaded code is the sm_90a build. H200, session 24, measured
  // on the build before the staged stores: equal to the mma.sync path at N 7, 32 channels,
  // 129 x 95 and at N 1, 254 x 254; the shipped build is faster at the full preset
  // (docs/kernels.md).
  static bool fits(const Sizes& z) {
    const int64_t limit = int64_t{1} << 30;
    return z.group_channels >= kMinGroupChannels && z.c_in >= 1 && z.c_in <= kCi && z.c_out > 16 &&
           z.c_out <= kChannels && z.w - 2 >= 96 && z.h >= 3 && z.n >= 1 &&
           z.n * z.c_in * z.h * z.w < limit && z.n * z.c_out * (z.h - 2) * (z.w - 2) < (limit << 1);
  }

  // Sizes must fit() (checked again here); false in *taken when the sm_90a code is not loaded.
  Status setup(const Sizes& z, bool* taken) {
    *taken = false;
    if (!fits(z)) return Status::ok();
    bool loaded = false;
    KB_CUDA_TRY(wgmma::loaded_here(&loaded));
    if (!loaded) return Status::ok();
    sizes_ = z;
    tiles_h_ = static_cast<int>((z.h - 2 + kTileRows - 1) / kTileRows);
    tiles_w_ = static_cast<int>((z.w - 2 + kTileCols - 1) / kTileCols);
    const int64_t tiles = z.n * tiles_h_ * tiles_w_;
    if (tiles > 0x7fffffff) return Status::ok();
    for (auto kernel : {&rows_kernel<false>, &rows_kernel<true>})
      KB_CUDA_TRY(
          cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes));
    KB_ASSIGN_OR_RETURN(const int sms, cuda::sm_count());
    grid_ = static_cast<unsigned>(std::min<int64_t>((tiles + kGroups - 1) / kGroups, sms));
    *taken = true;
    return Status::ok();
  }

  // Statistics slots per sample and C_out: partials hold N x parts() x C_out double2.
  int64_t parts() const { return (sizes_.h - 2) * tiles_w_; }

  // The two passes on `stream`; a's sizes are filled here, its tensors by the caller.
  Status run_statistics(Args a, cudaStream_t stream) const { return launch<false>(a, stream); }
  Status run_store(Args a, cudaStream_t stream) const { return launch<true>(a, stream); }

 private:
  template <bool kStore>
  Status launch(Args a, cudaStream_t stream) const {
    a.c_in = static_cast<int>(sizes_.c_in), a.c_out = static_cast<int>(sizes_.c_out);
    a.h = static_cast<int>(sizes_.h), a.w_in = static_cast<int>(sizes_.w);
    a.ho = a.h - 2, a.wo = a.w_in - 2;
    a.batch = static_cast<int>(sizes_.n), a.tiles_h = tiles_h_, a.tiles_w = tiles_w_;
    a.step = ItemWalk::at(static_cast<int>(grid_) * kGroups, tiles_h_, tiles_w_);
    a.pairs = a.wo % 2 == 0 && reinterpret_cast<uintptr_t>(a.out) % 8 == 0;
    rows_kernel<kStore><<<grid_, kThreads, kSmemBytes, stream>>>(a);
    KB_CUDA_TRY(cudaGetLastError());
    return Status::ok();
  }

  Sizes sizes_{};
  int tiles_h_ = 0, tiles_w_ = 0;
  unsigned grid_ = 0;
};

}  // namespace kb::custom::L2_021::rows
