// The conv2d core: 2-D convolution (groups 1, any stride, padding, dilation, sizes) with a
// pluggable epilogue (epilogue.cuh), shared by the custom variants of L2_001, L2_017 and L2_031.
//   y[n][co][oh][ow] = sum_{ci,kh,kw} w[co][ci][kh][kw] * x[n][ci][oh*sh-ph+kh*dh][ow*sw-pw+kw*dw]
//   x: (N, C_in, H, W) fp32 NCHW; w: (C_out, C_in, KH, KW) OIHW; y: (N, C_out, Ho, Wo).
// Owns: Conv2dTf32x3 (geometry, tap table, the choice of kernel, launch), the choice's rules and
// their measurements, the statistics layout (StatsTiles) and the wgmma kernel's epilogue
// (WgmmaStore). The kernels: tensor_tile.cuh (3xTF32 on mma.sync), flat_fma.cuh, narrow_fma.cuh,
// few_channels.cuh; their shared arguments and gather: conv_args.cuh.
// Choice (Conv2dTf32x3::setup), first that applies:
//  1. the flat tile: <= 128 channels on a grid of >= 1/4 the SMs, not the few-channel kernel's 2
//     or 4 channels a thread; planes of <= 512 pixels up to 448 M multiply-adds, past that where
//     the 3xTF32 tile's or the wgmma kernel's tiles would be far emptier or their grid far smaller
//     (flat_tile_of; no tile statistics: stats_tiles() has no slots, the caller forms them from
//     y);
//  2. the few-channel kernel: <= 16 channels over >= 8,192 pixels, or thin planes of up to 64
//     channels (few_channels_group);
//  3. the narrow kernel: small layers, and long K over grids too small for the tile
//     (narrow_is_faster; session 9 sweep: L2_001 0.63x -> 1.38x, L2_017 0.84x -> 1.17x, L2_031
//     0.78x -> 1.24x the reference at their worst shapes; session 36: 12-tile layers);
//  4. the wgmma kernel (conv3x3_wgmma/conv3x3_wgmma.cuh): 3x3, stride 1, from 80 output columns,
//     where the user's unit carries sm_90a code and the driver loaded it (takes_wgmma), through
//     WgmmaStore, statistics included (StatsTiles says where each kernel puts them), in its
//     promoted form where the epilogue asks for it (kPromotedSums);
//  5. the 3xTF32 tile (tensor_tile.cuh).
// Every kernel but the flat tile keeps its tiles within one image, so an epilogue may reduce per
// (n, co) plane (kStats).
// Thread safety: stateless device code; a Conv2dTf32x3 is used by one thread at a time.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "common/cuda/cuda_check.h"
#include "common/cuda/device_query.h"
#include "common/problem_spec.h"
#include "common/status.h"
#include "kernels/cores/conv2d_tf32x3/conv_args.cuh"
#include "kernels/cores/conv2d_tf32x3/epilogue.cuh"
#include "kernels/cores/conv2d_tf32x3/few_channels.cuh"
#include "kernels/cores/conv2d_tf32x3/flat_fma.cuh"
#include "kernels/cores/conv2d_tf32x3/narrow_fma.cuh"
#include "kernels/cores/conv2d_tf32x3/tensor_tile.cuh"
#include "kernels/cores/conv3x3_wgmma/conv3x3_wgmma.cuh"
#include "kernels/cores/tf32x3/wgmma.cuh"

namespace kb::custom::conv2d_tf32x3 {

// ---- the wgmma path's epilogue (3x3, stride 1, wide images: conv3x3_wgmma.cuh) ----

namespace cw = ::kb::custom::conv3x3_wgmma;

// y[n][co][oh][ow] = epi(conv) for the tile's outputs in range, and with Epi::kStats the tile's
// (mean, M2) per channel into stats[n][co][slot] (StatsTiles: 4 x 128-pixel tiles). A thread's two
// adjacent columns are one 8-byte store when Wo is even. Statistics as store_tile forms them: a
// thread's values of a channel (2 rows x 32 columns) about a pilot, Chan merges over the 4 lanes
// of the channel in tile(), then over the two warpgroups (rows 0-1, 2-3) in after_barrier().
template <class Epi, bool kPromoted>
struct WgmmaStore {
  using G = cw::Geometry<kPromoted>;
  static constexpr int kRows = G::kRowsPerGroup;  // a warpgroup's rows
  Epi epi;
  float* y;       // (N, C_out, Ho, Wo)
  float2* stats;  // (N, C_out, slots); kStats only
  int ho, wo, slots;

  __device__ __forceinline__ void tile(const cw::WgmmaArgs& p, const cw::TileCoord& tc,
                                       const float (&acc)[G::kAccs], float* red) const {
    const int tid = static_cast<int>(threadIdx.x), group = tid / 128, lane = tid % 32;
    const int g = lane >> 2, t = lane & 3, warp = (tid / 32) % 4;
    const bool pairs = wo % 2 == 0;
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int co_l = 16 * warp + 8 * half + g, co = tc.ct * cw::kTileCo + co_l;
      float cnt = 0.0f, pilot = 0.0f, s = 0.0f, q = 0.0f;  // sums of v - pilot, (v - pilot)^2
      if (co < p.c_out) {
        const typename Epi::Row r = epi.row(co);
#pragma unroll
        for (int rr = 0; rr < kRows; ++rr) {
          const int oh = tc.r0 + kRows * group + rr;
          if (oh >= ho) continue;
          float* y_row = y + ((int64_t{tc.n} * p.c_out + co) * ho + oh) * wo;
#pragma unroll
          for (int j = 0; j < cw::kTileCols / 8; ++j) {
            const int ow = tc.c0 + 8 * j + 2 * t, e = cw::kRowAccs * rr + 4 * j + 2 * half;
            const float v0 = epi(r, acc[e]), v1 = epi(r, acc[e + 1]);
            if (pairs && ow + 1 < wo) {
              *reinterpret_cast<float2*>(y_row + ow) = make_float2(v0, v1);
            } else {
              if (ow < wo) y_row[ow] = v0;
              if (ow + 1 < wo) y_row[ow + 1] = v1;
            }
            if constexpr (Epi::kStats) {
              if (cnt == 0.0f && ow < wo) pilot = v0;  // the thread's first value in range
              if (ow < wo) accumulate(v0 - pilot, cnt, s, q);
              if (ow + 1 < wo) accumulate(v1 - pilot, cnt, s, q);
            }
          }
        }
      }
      if constexpr (Epi::kStats) {
        const float mean_d = cnt > 0.0f ? s / cnt : 0.0f;
        const float2 m = merge_over_quad(
            cnt, make_float2(pilot + mean_d, fmaxf(fmaf(-s, mean_d, q), 0.0f)));  // the channel's
        if (t == 0) {
          red[(group * cw::kTileCo + co_l) * 2] = m.x;
          red[(group * cw::kTileCo + co_l) * 2 + 1] = m.y;
        }
      }
    }
  }
  // stats[n][co][slot]: the two warpgroups' (mean, M2) merged, rows 0-1 first.
  __device__ __forceinline__ void after_barrier(const cw::WgmmaArgs& p, const cw::TileCoord& tc,
                                                const float* red) const {
    if constexpr (Epi::kStats) {
      const int co_l = static_cast<int>(threadIdx.x), co = tc.ct * cw::kTileCo + co_l;
      if (co_l >= cw::kTileCo || co >= p.c_out) return;
      const float cols = static_cast<float>(min(cw::kTileCols, wo - tc.c0));
      float n = 0.0f;
      float2 m = make_float2(0.0f, 0.0f);
#pragma unroll
      for (int group = 0; group < 2; ++group) {
        const float n_b = static_cast<float>(min(max(ho - tc.r0 - kRows * group, 0), kRows)) * cols;
        m = merge_moments(n, m, n_b,
                          make_float2(red[(group * cw::kTileCo + co_l) * 2],
                                      red[(group * cw::kTileCo + co_l) * 2 + 1]));
        n += n_b;
      }
      stats[(int64_t{tc.n} * p.c_out + co) * slots + tc.slot] = m;
    }
  }

 private:
  __device__ __forceinline__ static void accumulate(float d, float& cnt, float& s, float& q) {
    cnt += 1.0f;
    s += d;
    q = fmaf(d, d, q);
  }
};
static_assert(cw::kRedFloats >= 2 * 2 * cw::kTileCo, "WgmmaStore: (mean, M2) per warpgroup");

// ---- host side ----

// A conv graph node's sizes, checked to fit the kernel's int arithmetic.
struct ConvGeometry {
  int n = 0, c_in = 0, h = 0, w = 0, c_out = 0, kh = 0, kw = 0, ho = 0, wo = 0;
  int sh = 1, sw = 1, ph = 0, pw = 0, dh = 1, dw = 1;
  int k() const { return c_in * kh * kw; }
  int k_pad() const { return (k() + kBK - 1) / kBK * kBK; }
  int hw_out() const { return ho * wo; }
  bool padded() const { return ph > 0 || pw > 0; }  // else every tap of a pixel is in range
  int pix_tiles() const { return (hw_out() + kBN - 1) / kBN; }
  int co_tiles() const { return (c_out + kBM - 1) / kBM; }
  // The flat tile's grid (flat_fma.cuh): tiles over all n * Ho Wo pixels, and channel tiles.
  int64_t flat_pix_tiles(flat::FlatTile s) const {
    return (int64_t{n} * hw_out() + flat::flat_tile_pixels(s) - 1) / flat::flat_tile_pixels(s);
  }
  int flat_co_tiles(flat::FlatTile s) const {
    return (c_out + flat::flat_tile_channels(s) - 1) / flat::flat_tile_channels(s);
  }
};

// (tap_off, then (dh, dw) pairs) for k < K_pad, as ConvArgs describes.
inline std::vector<int> build_tap_table(const ConvGeometry& g) {
  const int k_pad = g.k_pad();
  std::vector<int> t(3 * static_cast<size_t>(k_pad), 0);
  for (int k = 0; k < g.k(); ++k) {
    const int ci = k / (g.kh * g.kw), kh = k / g.kw % g.kh, kw = k % g.kw;
    t[k] = (ci * g.h + kh * g.dh) * g.w + kw * g.dw;
    t[k_pad + 2 * k] = kh * g.dh;
    t[k_pad + 2 * k + 1] = kw * g.dw;
  }
  return t;
}

inline Status read_conv_geometry(const ProblemInstance& p, const std::string& node,
                                 ConvGeometry& g) {
  const GraphNode* nd = p.spec().find_node(node);
  if (nd == nullptr || nd->op != "conv" || nd->inputs.size() < 2)
    return Status::invalid_argument("conv2d_tf32x3: no conv node '" + node + "'");
  const Shape& xs = p.shape_of(nd->inputs[0]);  // (N, C_in, H, W)
  const Shape& ws = p.shape_of(nd->inputs[1]);  // (C_out, C_in, KH, KW)
  const Shape& ys = p.shape_of(nd->output);     // (N, C_out, Ho, Wo)
  const auto ints_or = [&](const char* attr, int64_t fill) {
    return p.has_attr(node, attr) ? p.ints(node, attr) : std::vector<int64_t>(2, fill);
  };
  const std::vector<int64_t> st = p.ints(node, "stride"), pad = ints_or("padding", 0),
                             dil = ints_or("dilation", 1);
  const int64_t groups = p.has_attr(node, "groups") ? p.int_attr(node, "groups") : 1;
  if (xs.size() != 4 || ws.size() != 4 || ys.size() != 4 || st.size() != 2 || pad.size() != 2 ||
      dil.size() != 2 || groups != 1 || ws[1] != xs[1] || ys[1] != ws[0] || ys[0] != xs[0])
    return Status::failed_precondition("conv2d_tf32x3: needs a 2-D conv with groups 1");
  constexpr int64_t kIntMax = 0x7fffffff;
  const int64_t k = ws[1] * ws[2] * ws[3], hw_out = ys[2] * ys[3];
  const int64_t tiles = ys[0] * ((hw_out + kBN - 1) / kBN) * ((ys[1] + kBM - 1) / kBM);
  if (xs[1] * xs[2] * xs[3] > kIntMax || k > kIntMax / 4 || hw_out > kIntMax - kBN ||
      ys[1] > kIntMax - kBM || tiles > kIntMax)
    return Status::failed_precondition("conv2d_tf32x3: a size exceeds the int range");
  for (int a = 0; a < 2; ++a)  // the unpadded kernel relies on every tap of a pixel being in range
    if (st[a] < 1 || dil[a] < 1 || pad[a] < 0 ||
        ys[2 + a] != (xs[2 + a] + 2 * pad[a] - dil[a] * (ws[2 + a] - 1) - 1) / st[a] + 1)
      return Status::failed_precondition("conv2d_tf32x3: unexpected output size");
  const auto i = [](int64_t v) { return static_cast<int>(v); };
  g = {i(xs[0]), i(xs[1]), i(xs[2]), i(xs[3]),  i(ws[0]),  i(ws[2]),  i(ws[3]), i(ys[2]),
       i(ys[3]), i(st[0]), i(st[1]), i(pad[0]), i(pad[1]), i(dil[0]), i(dil[1])};
  return Status::ok();
}

// The layer's sizes, tap table (taps: build_tap_table's, on the device) and tile counts as the
// kernels read them (the flat tile's when flat is not kNone); the tensors' pointers and vec_y are
// the caller's.
inline ConvArgs conv_args(const ConvGeometry& g, const int* taps, flat::FlatTile flat) {
  ConvArgs a{};
  const int k_pad = g.k_pad();
  a.tap_off = taps, a.tap_hw = reinterpret_cast<const int2*>(taps + k_pad);
  a.k_pad = k_pad, a.table_ints = g.padded() ? 3 * k_pad : k_pad;
  a.table_in_smem = a.table_ints * 4 <= kMaxSmemTableBytes;
  a.x_image = int64_t{g.c_in} * g.h * g.w;
  a.n = g.n, a.c_out = g.c_out, a.k = g.k(), a.h = g.h, a.w_in = g.w, a.wo = g.wo;
  a.hw_out = g.hw_out();
  a.sh = g.sh, a.sw = g.sw, a.ph = g.ph, a.pw = g.pw;
  a.co_tiles = g.co_tiles(), a.pix_tiles = g.pix_tiles();
  if (flat != flat::FlatTile::kNone)  // flat_tile_of keeps the pixel count in int range
    a.pix_tiles = static_cast<int>(g.flat_pix_tiles(flat)), a.co_tiles = g.flat_co_tiles(flat);
  return a;
}

// Where a kStats epilogue's statistics go: stats[n][co][slot] = (mean, M2) of tile `slot`'s
// pixels, the tiles a grid of tile_rows x tile_cols pixels over the ho x wo plane, row-major
// (tiles_w per row). The mma.sync and narrow kernels: one row of Ho*Wo pixels in kBN-pixel tiles;
// the wgmma kernel: 4 x 128 tiles.
struct StatsTiles {
  int slots = 0, tiles_w = 0, tile_rows = 0, tile_cols = 0, ho = 0, wo = 0;
  // Pixels of tile `slot` inside the plane.
  __host__ __device__ int count(int slot) const {
    const int rows = ho - slot / tiles_w * tile_rows, cols = wo - slot % tiles_w * tile_cols;
    return (rows < tile_rows ? rows : tile_rows) * (cols < tile_cols ? cols : tile_cols);
  }
};

// The few-channel kernel's channels a thread (2, 4 or 8; 0: it does not run), its weights' copy
// within a block's shared memory:
//  - C_out up to kFewMaxChannels (the tile's 128-channel rows then at least 87% padding) over at
//    least kFewMinPixels output pixels in all (below, the thread-a-pixel kernels leave the
//    machine idle and long K goes to the split kernel's warp a pixel). H100, session 40 (`kb
//    bench --dims`, gated, custom ms, main's pack then this one): L2_001 N 29, C_in 55, C_out 2,
//    79 x 51 0.296 -> 0.039 (reference 0.144), N 56, C_in 14, C_out 2, 25 x 77 0.069 -> 0.014;
//    N 16, C_in 51, C_out 13, 31 x 93 0.061 -> 0.048; L2_017 N 115, C_in 54, C_out 12, 125 x 3
//    0.063 -> 0.048, N 8, C_in 30, C_out 16, 90 x 70 0.087 -> 0.041; L2_031 N 125, C_in 59,
//    C_out 2, 101 x 103 1.103 -> 0.329.
//  - C_out up to kFewMaxPlaneChannels on planes of one pixel tile (Ho Wo <= kBN; thin images,
//    where the tile's grid is one CTA an image), groups of 8 channels while the threads
//    (pixels x groups) number at least 2 kFewMinPixels. The same A/B: L2_017 N 53, C_in 62,
//    C_out 63, 77 x 3 (75 pixels an image: 53 CTAs of the tile) 0.074 -> 0.050 (reference
//    0.041), N 30, C_in 20, C_out 63, 77 x 3 0.029 -> 0.025, N 128, C_in 8, C_out 24, 9 x 9
//    0.023 -> 0.021; L2_001 N 64, C_in 64, C_out 64, 10 x 10 0.056 -> 0.039; L2_031 N 40,
//    C_in 16, C_out 40, 12 x 12 0.019 -> 0.013. Since session 50 the flat tile takes these
//    layers first, up to its multiply-add bound (flat_tile_of).
constexpr int kFewMinPixels = 8192;
constexpr int kFewMaxPlaneChannels = 64;
inline int few_channels_group(const ConvGeometry& g) {
  const int co = g.c_out <= 2 ? 2 : g.c_out <= 4 ? 4 : 8;
  if (int64_t{4} * g.k() * co > kFewWeightsMaxBytes) return 0;
  const int64_t pixels = int64_t{g.n} * g.hw_out();
  if (g.c_out <= kFewMaxChannels) return pixels >= kFewMinPixels ? co : 0;
  const int64_t threads = pixels * ((g.c_out + co - 1) / co);
  const bool thin = g.c_out <= kFewMaxPlaneChannels && g.hw_out() <= kBN;
  return thin && threads >= 2 * kFewMinPixels ? co : 0;
}

// The flat tile (flat_fma.cuh): layers of planes up to kFlatMaxPlane pixels, up to
// kFlatMaxChannels output channels and up to kFlatMaxMacs multiply-adds, whose grid holds at
// least a quarter as many CTAs as the GPU has SMs (fewer walk a long K alone: the narrow kernel's
// warps split it), but not the layers the few-channel kernel takes at 2 or 4 channels a thread
// (measured faster there; elsewhere 4 or fewer channels run on the tile with most rows padding,
// L2_031 N 12, C_in 47, C_out 2, 87 x 5 at 1.48x the reference, call 4's seed-11 sweep); 64 x 32
// tiles past 32 channels, else 32 x 64. (N Ho Wo must fit the kernel's int: flat_tile_of checks
// it.)
// Session 50 (H100, `kb bench --dims D --time-cap 0.2 --trials 2 --seed 7`, custom ms, before ->
// flat, the reference in brackets; .device/s50/c2.sh, c3.sh):
//  - thin and small planes: L2_017 N 53, C_in 62, C_out 63, 77 x 3 0.048 -> 0.032 [0.040]; N 6,
//    C_in 30, C_out 46, 83 x 5 0.042 -> 0.021 [0.027]; N 24, C_in 27, C_out 14, 13 x 11 0.036 ->
//    0.019 [0.024]; N 70, C_in 54, C_out 12, 125 x 3 0.044 -> 0.036 [0.038]; L2_001 N 64, C_in
//    64, C_out 64, 10 x 10 0.039 -> 0.027 [0.036]; N 100, C_in 32, C_out 48, 15 x 15 0.055 ->
//    0.038 [0.052]; N 8, C_in 30, C_out 16, 22 x 22 0.033 -> 0.015 [0.024]; L2_031 N 40, C_in
//    16, C_out 40, 12 x 12 0.013 -> 0.011 [0.024]; N 8, C_in 16, C_out 64, 24 x 24 0.021 ->
//    0.012 [0.024];
//  - 65-128 channels: L2_017 N 53, C_in 62, C_out 100, 77 x 3 0.075 -> 0.042 [0.044]; L2_001 N
//    16, C_in 32, C_out 96, 12 x 12 0.032 -> 0.017 [0.025]; N 40, C_in 20, C_out 80, 7 x 7 0.023
//    -> 0.013 [0.021]; L2_031 N 64, C_in 64, C_out 128, 9 x 9 0.057 -> 0.038 [0.046];
//  - few channels: L2_017 N 90, C_in 30, C_out 8, 12 x 12 0.030 -> 0.024 [0.028] (the
//    few-channel kernel's 8 a thread), but L2_001 N 200, C_in 14, C_out 2, 12 x 12 0.012 -> 0.014
//    and L2_031 N 100, C_in 20, C_out 4, 15 x 15 0.016 -> 0.019 (its 2 and 4 a thread);
//  - large layers, where the tensor tile is as fast or faster: L2_017 N 20, C_in 100, C_out 60,
//    20 x 25 (447 M multiply-adds) 0.092 -> 0.061; N 128, C_in 64, C_out 48, 13 x 13 (428 M)
//    0.064 both; L2_001 N 32, C_in 64, C_out 64, 24 x 24 (571 M) 0.056 -> 0.060; N 128, C_in 64,
//    C_out 64, 18 x 18 (1.2 G) 0.094 -> 0.108; L2_031 N 17, C_in 64, C_out 128, 22 x 22 (501 M)
//    0.056 -> 0.059; hence kFlatMaxMacs between 447 and 501 M. (L2_031 N 64, C_in 128, C_out 64, 16
//    x 16, 925 M: 0.103
//    -> 0.091, reference 0.073: both paths miss there.)
constexpr int kFlatMaxPlane = 512;
constexpr int kFlatMaxChannels = 128;
constexpr int64_t kFlatMaxMacs = int64_t{448} << 20;
// Past those bounds the flat tile where it would outrun the 3xTF32 tile by a model of both: at
// equal channel fill the tile runs kTileOverFlatRate times the flat tile's rate, its rate scaled
// by how full its channel tiles (128 rows) are and, on grids under one CTA an SM, by the share of
// SMs they occupy; the flat tile's by how full its channel tiles (64 or 32) are. So 17-32
// channels take the flat tile (their tensor tiles a quarter full), 33-128 the tensor tile unless
// its grid is small. Up to 128 channels, N Ho Wo in int range, and not the few-channel kernel's
// layers (any group); the wgmma kernel's layers (wgmma_geometry, loaded or not) by the wgmma
// kernel's model instead (kWgmmaOverFlatRate, below). Not compared with the
// narrow kernel, which small layers past 512 pixels could otherwise take (narrow_is_faster):
// unmeasured. Session 51 (H100, `kb bench --dims D --time-cap
// 0.2 --trials 2 --seed 7`, custom ms, the tile's path -> the flat tile forced, the reference in
// brackets; /work/.device/6 c5.log):
//  - 17-32 channels: L2_017 N 88, C_in 49, C_out 18, 83 x 49 (seed 11's miss,
//    2.7 G multiply-adds) 0.786 -> 0.424 [0.548];
//  - 33-64 channels (the tile's rows half full), the tile kept: L2_017 N 64, C_in 43, C_out 59, 93
//  x 67 0.953 ->
//    0.909 [0.935]; L2_031 N 126, C_in 63, C_out 60, 101 x 13 0.453 -> 0.406 [0.456]; L2_017 N 16,
//    C_in 60, C_out 46, 127 x 77 0.402 -> 0.445 [0.436];
//  - equal fill: L2_031 N 32, C_in 64, C_out 100, 40 x 40 0.139 -> 0.275 [0.283];
//  - small grids: L2_001 N 1, C_in 64, C_out 64, 60 x 60 (27 CTAs of the tile) 0.056 -> 0.027
//    [0.035]; N 2, C_in 32, C_out 40, 40 x 60 (36) 0.030 -> 0.021 [0.026]; L2_031 N 12, C_in
//    24, C_out 30, 50 x 50 0.040 -> 0.028 [0.041]; but (session 50) L2_031 N 17, C_in 64, C_out
//    128, 22 x 22 (68 CTAs, full channel tiles) 0.056 -> 0.059 and L2_001 N 128, C_in 64,
//    C_out 64, 18 x 18 (half full) 0.094 -> 0.108;
//  - the few-channel kernel's 8 a thread kept: L2_001 N 16, C_in 51, C_out 13, 31 x 93 0.048 ->
//    0.059 [0.385]; L2_017 N 8, C_in 30, C_out 16, 90 x 70 0.041 -> 0.058 [0.062].
constexpr double kTileOverFlatRate = 2.2;

// The wgmma kernel's layers (conv3x3_wgmma.cuh): 3x3, stride 1, dilation 1, the same padding on
// both axes, from Conv3x3Wgmma::kMinWidth output columns (the crossover measured on L2_010).
inline bool wgmma_geometry(const ConvGeometry& g) {
  return g.kh == 3 && g.kw == 3 && g.sh == 1 && g.sw == 1 && g.dh == 1 && g.dw == 1 &&
         g.ph == g.pw && g.wo >= cw::Conv3x3Wgmma::kMinWidth;
}

// The wgmma kernel's layers past the flat tile's small-plane bounds are weighed the same way: at
// equal fill the wgmma kernel runs kWgmmaOverFlatRate times the flat tile's rate, its rate scaled
// by how full its 64-channel x tile_rows x 128-column tiles are (4 rows, 2 in the promoted form:
// L2_001) and, on grids under one CTA an SM, by the share of SMs they occupy. The ratio from the
// two kernels' rates per tile slot: the flat tile 12.4 G multiply-adds a ms on full grids (L2_031 N
// 32, C_in 64, C_out 100, 40 x 40, 0.275 ms, H100, session 51), the wgmma kernel ~48 (L2_031's full
// preset, 3.19 ms, H200, session 20): ~3.9. Why: at batch 1 the wgmma grid is a handful of CTAs
// that each walk C_in / 8 stages alone. Sweep seed 54 (H100): L2_017 N 1, C_in 51, C_out 109, 15 x
// 97 (13 x 95 outputs: 2 channel tiles x 4 row tiles = 8 CTAs on 132 SMs, 7 stages each, the tiles
// 51% full) 0.0605 ms against the reference's 0.0448; the flat tile's 78 CTAs there were
// predicted at ~0.02 ms, conv and normalize, and measured 0.027. Layers on full wgmma grids keep it
// unless its tiles are under a quarter full (1-row planes). Measured (H100, session 54,
// `kb bench ID --dims ...`, /work/.device/6; main -> this rule, x the reference): L2_017 there
// 0.74 -> 1.66, N 2 0.80 -> 1.34, N 4 0.94 -> 1.22, N 1 at 63 x 97 0.96 -> 1.25, N 2, 13 -> 70,
// 9 x 131 0.78 -> 1.82, N 112, 124 -> 115, 3 x 121 (1-row planes) 0.75 -> 0.83; L2_031 at N 1,
// N 4, N 2 13 -> 70 and N 112: 0.67 -> 1.68, 0.89 -> 1.20, 0.72 -> 2.15, 0.78 -> 0.87.
// L2_001's promoted 2-row tiles are half full on 1-row planes: weighed as 4-row tiles its N 112
// layer went 1.12 -> 0.85 on the flat tile; its own rows keep it on the wgmma kernel.
constexpr double kWgmmaOverFlatRate = 4.0;
inline double wgmma_rate(const ConvGeometry& g, int sms, int rows) {
  const int co_tiles = (g.c_out + cw::kTileCo - 1) / cw::kTileCo;
  const int tiles_h = (g.ho + rows - 1) / rows,
            tiles_w = (g.wo + cw::kTileCols - 1) / cw::kTileCols;
  const double fill = double(g.c_out) / (co_tiles * cw::kTileCo) * g.ho / (tiles_h * rows) * g.wo /
                      (double(tiles_w) * cw::kTileCols);
  const double tiles = double(g.n) * co_tiles * tiles_h * tiles_w;
  return kWgmmaOverFlatRate * fill * std::min(1.0, tiles / sms);
}

// wgmma_tile_rows: the rows of the wgmma kernel's tiles for the caller's epilogue
// (cw::Geometry<Epi::kPromotedSums>::kTileRows).
inline flat::FlatTile flat_tile_of(const ConvGeometry& g, int sms,
                                   int wgmma_tile_rows = cw::Geometry<false>::kTileRows) {
  const int64_t pixels = int64_t{g.n} * g.hw_out();
  if (g.c_out > kFlatMaxChannels || pixels > 0x7fffffff - 64) return flat::FlatTile::kNone;
  const int64_t macs = pixels * g.c_out * g.k();
  const int few_co = few_channels_group(g);
  if (few_co == 2 || few_co == 4) return flat::FlatTile::kNone;
  const flat::FlatTile tile = g.c_out > 32 ? flat::FlatTile::k64x32 : flat::FlatTile::k32x64;
  const int64_t ctas = g.flat_pix_tiles(tile) * g.flat_co_tiles(tile);
  if (4 * ctas < sms) return flat::FlatTile::kNone;
  if (g.hw_out() <= kFlatMaxPlane && macs <= kFlatMaxMacs) return tile;
  if (few_co > 0) return flat::FlatTile::kNone;
  const double flat_rate =
      double(g.c_out) / (double(g.flat_co_tiles(tile)) * flat::flat_tile_channels(tile));
  if (wgmma_geometry(g))
    return flat_rate >= wgmma_rate(g, sms, wgmma_tile_rows) ? tile : flat::FlatTile::kNone;
  const int64_t tile_ctas = int64_t{g.n} * g.pix_tiles() * g.co_tiles();
  const double tile_rate = kTileOverFlatRate * g.c_out / (double(g.co_tiles()) * kBM) *
                           std::min(1.0, double(tile_ctas) / sms);
  return flat_rate >= tile_rate ? tile : flat::FlatTile::kNone;
}

// The conv of one graph node: geometry and tap table (setup), launches (run).
// Owns the tap table (device memory); not copyable.
class Conv2dTf32x3 {
 public:
  Conv2dTf32x3() = default;
  Conv2dTf32x3(const Conv2dTf32x3&) = delete;
  Conv2dTf32x3& operator=(const Conv2dTf32x3&) = delete;
  ~Conv2dTf32x3() { KB_CUDA_WARN(cudaFree(taps_)); }

  const ConvGeometry& geometry() const { return g_; }

  // Reads node `node` (op conv, groups 1), uploads the tap table, raises Epi's kernels' shared
  // memory limit. May synchronize.
  template <class Epi>
  Status setup(const ProblemInstance& p, const std::string& node) {
    KB_TRY(read_conv_geometry(p, node, g_));
    KB_ASSIGN_OR_RETURN(const int sms, cuda::sm_count());
    flat_ = flat_tile_of(g_, sms, cw::Geometry<Epi::kPromotedSums>::kTileRows);
    if (flat_ != flat::FlatTile::kNone) {
      few_co_ = 0, narrow_ = wgmma_ = false;
      return upload_taps();
    }
    few_co_ = few_channels_group(g_);
    if (few_co_ > 0) {
      narrow_ = wgmma_ = false;
      return Status::ok();
    }
    narrow_ = narrow_is_faster(g_, sms);
    bool loaded = false;
    KB_CUDA_TRY(tf32x3::wgmma::loaded_here(&loaded));
    wgmma_ = loaded && !narrow_ && wgmma_geometry(g_);
    if (wgmma_) return setup_wgmma<Epi>();
    KB_TRY(upload_taps());
    for (auto kernel :
         {&conv2d_tf32x3_kernel<true, false, Epi>, &conv2d_tf32x3_kernel<false, false, Epi>,
          &conv2d_tf32x3_kernel<true, true, Epi>, &conv2d_tf32x3_kernel<false, true, Epi>}) {
      KB_CUDA_TRY(
          cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kMaxSmemBytes));
      KB_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
                                       cudaSharedmemCarveoutMaxShared));
    }
    return Status::ok();
  }

  // The statistics layout of the kernel setup() chose (kStats epilogues).
  // None (0 slots) on the flat tile: the caller forms its statistics from y.
  StatsTiles stats_tiles() const {
    if (flat_ != flat::FlatTile::kNone) return {};
    if (wgmma_)
      return {wgmma_plan_.args().tiles_h * wgmma_plan_.args().tiles_w,
              wgmma_plan_.args().tiles_w,
              wgmma_plan_.tile_rows(),
              cw::kTileCols,
              g_.ho,
              g_.wo};
    return {g_.pix_tiles(), g_.pix_tiles(), 1, kBN, 1, g_.hw_out()};
  }

  // y = epi(conv(x, w)) on `stream`; stats: (N, C_out, stats_tiles().slots) float2 when
  // Epi::kStats.
  template <class Epi>
  Status run(const float* x, const float* w, float* y, float2* stats, const Epi& epi,
             cudaStream_t stream) const {
    if (wgmma_) {
      constexpr bool kPromoted = Epi::kPromotedSums;
      return wgmma_plan_.run<WgmmaStore<Epi, kPromoted>, kPromoted>(
          x, w, {epi, y, stats, g_.ho, g_.wo, stats_tiles().slots}, stream);
    }
    ConvArgs a = conv_args(g_, taps_, flat_);
    a.x = x, a.w = w, a.y = y, a.stats = stats;
    a.vec_y = g_.hw_out() % 4 == 0 && aligned16(y);
    const bool padded = g_.padded();
    const int smem_bytes = kSmemBytes + (a.table_in_smem ? a.table_ints * 4 : 0);
    const bool vec_w = g_.k() % 4 == 0 && aligned16(w);
    if (flat_ != flat::FlatTile::kNone) {
      KB_CUDA_TRY(flat::launch_flat(a, flat_, padded, epi, stream));
      return Status::ok();
    }
    if (few_co_ > 0) {
      const dim3 grid(static_cast<unsigned>(g_.n * a.pix_tiles),
                      static_cast<unsigned>((g_.c_out + few_co_ - 1) / few_co_));
      const size_t smem = size_t{4} * g_.k() * few_co_;
      if (few_co_ == 2)
        conv2d_few_channels_kernel<2, Epi>
            <<<grid, kNarrowThreads, smem, stream>>>(a, g_.kh, g_.kw, g_.dh, g_.dw, epi);
      else if (few_co_ == 4)
        conv2d_few_channels_kernel<4, Epi>
            <<<grid, kNarrowThreads, smem, stream>>>(a, g_.kh, g_.kw, g_.dh, g_.dw, epi);
      else
        conv2d_few_channels_kernel<8, Epi>
            <<<grid, kNarrowThreads, smem, stream>>>(a, g_.kh, g_.kw, g_.dh, g_.dw, epi);
      KB_CUDA_TRY(cudaGetLastError());
      return Status::ok();
    }
    if (narrow_) {
      const unsigned blocks = static_cast<unsigned>(int64_t{g_.n} * a.pix_tiles * g_.c_out);
      const int taps_bytes = narrow_taps_bytes(g_.k());
      if (g_.k() >= kNarrowSplitK && taps_bytes <= kNarrowTapsMaxSmem)
        conv2d_narrow_kernel<true, true, Epi><<<blocks, kNarrowSplitThreads, taps_bytes, stream>>>(
            a, g_.kh, g_.kw, g_.dh, g_.dw, epi);
      else if (g_.k() >= kNarrowSplitK)
        conv2d_narrow_kernel<true, false, Epi>
            <<<blocks, kNarrowSplitThreads, 0, stream>>>(a, g_.kh, g_.kw, g_.dh, g_.dw, epi);
      else
        conv2d_narrow_kernel<false, false, Epi>
            <<<blocks, kNarrowThreads, 0, stream>>>(a, g_.kh, g_.kw, g_.dh, g_.dw, epi);
      KB_CUDA_TRY(cudaGetLastError());
      return Status::ok();
    }
    const unsigned grid = static_cast<unsigned>(g_.n * a.pix_tiles * a.co_tiles);
    if (vec_w && !padded)
      conv2d_tf32x3_kernel<true, false, Epi><<<grid, kThreads, smem_bytes, stream>>>(a, epi);
    else if (!padded)
      conv2d_tf32x3_kernel<false, false, Epi><<<grid, kThreads, smem_bytes, stream>>>(a, epi);
    else if (vec_w)
      conv2d_tf32x3_kernel<true, true, Epi><<<grid, kThreads, smem_bytes, stream>>>(a, epi);
    else
      conv2d_tf32x3_kernel<false, true, Epi><<<grid, kThreads, smem_bytes, stream>>>(a, epi);
    KB_CUDA_TRY(cudaGetLastError());
    return Status::ok();
  }

 private:
  static bool aligned16(const void* ptr) { return reinterpret_cast<uintptr_t>(ptr) % 16 == 0; }
  Status upload_taps() {
    const std::vector<int> table = build_tap_table(g_);
    KB_CUDA_TRY(cudaFree(taps_));
    taps_ = nullptr;
    KB_CUDA_TRY(cudaMalloc(&taps_, table.size() * sizeof(int)));
    KB_CUDA_TRY(
        cudaMemcpy(taps_, table.data(), table.size() * sizeof(int), cudaMemcpyHostToDevice));
    return Status::ok();
  }

  // Layers conv2d_narrow_kernel runs, and how. Measured on the H200 (session 9; thread per
  // pixel, warp per pixel and the tile at 64 sweep shapes of L2_001 / L2_017 / L2_031):
  //  - a thread per pixel won where K <= 36 (N 3, C_in 2, C_out 43, 7 x 95: 7.2 against 11.6 us
  //    on the tile) and lost where K >= 108 (N 89, C_in 47, C_out 3, 3 x 7: 59.9 against 49.6);
  //  - a warp per pixel won where K is long and the planes tiny (that shape: 5 pixels) and lost
  //    with more pixels (N 2, C_in 23, C_out 2, 729 pixels: 63 against 32 us on the tile; session
  //    10: N 1, C_in 37, C_out 7, 231 pixels: 84.5 us against ~40 on the tile and 52 for the
  //    reference; N 9, C_in 19, C_out 1, 343 pixels: 57 against ~29 and 35): each warp walks its
  //    block's pixels one after another, and a few blocks cannot fill the machine;
  //  - the tile won from ~10 M multiply-adds with C_out > 16 (N 61, C_in 12, C_out 35: 17.7
  //    against 39.6 us) and by 10-17x at the large shapes.
  // Long K over planes above kNarrowSplitMaxPixels stays on the tile, unless the tile's grid is
  // under 1 / kNarrowSplitGridShare of the multiprocessors (its few CTAs walk K alone) and the
  // split kernel's blocks (one per image, pixel tile and channel, 16 warps walking 8 pixels each)
  // are at most kNarrowSplitBlocksPerSm a multiprocessor. Session 36 (H200, `kb bench --dims`,
  // main's pack and this one alternating, custom us): the tile's 12-CTA grids ran 0.72-0.75x the
  // reference in the seed-77 sweep (H100); with the split kernel N 3, C_in 31, C_out 4, 35 x 15
  // 33 -> 28 (L2_031 too), N 2, C_in 23, C_out 2, 29 x 29 26 -> 24, N 1, C_in 37, C_out 7, 17 x
  // 17 40 -> 30, N 1, C_in 64, C_out 128, 13 x 13 62 -> 45, N 1, C_in 256, C_out 64, 9 x 9 207 ->
  // 87 (14-256 blocks); but L2_017's N 6, C_in 30, C_out 46, 83 x 5 (552 blocks) 41 -> 67 and N
  // 24, C_in 27, C_out 14, 13 x 11 (336 blocks) 35 -> 49: past ~2 blocks an SM the warps' serial
  // pixels cost more than the tile's K walk. Session 37 (H100, the same A/B): with the taps in
  // shared memory (narrow_taps) the split layers above ran 28 -> 17, 29 -> 18, 87 -> 32 us and the
  // long_k preset's 17 -> 11; with 8 blocks an SM allowed, the 552-block layer still lost (40 ->
  // 46) and the 336-block one tied (35 -> 34), so the bound stays at 2. Session 38 (H100): the
  // thread-a-pixel form with its 3 x 3 window unrolled ran L2_001's 8 x 3 -> 16, 64 x 64 24 ->
  // 13 us and L2_031's 16 x 3 -> 8, 95 x 61 33 -> 17 us; the K < 64 bound was set before that and
  // has not been measured again.
  static constexpr int kNarrowSplitK = 64;
  static constexpr int kNarrowSplitMaxPixels = 64;  // 8 pixels per warp at most
  static constexpr int kNarrowSplitGridShare = 4;   // a grid under sms / 4 CTAs
  static constexpr int kNarrowSplitBlocksPerSm = 2;
  static constexpr int64_t kNarrowSplitMaxMacs = int64_t{32} << 20;
  static bool narrow_is_faster(const ConvGeometry& g, int sms) {
    const int64_t macs = int64_t{g.n} * g.c_out * g.hw_out() * g.k();
    const bool small =
        macs <= (int64_t{4} << 20) || (g.c_out <= 16 && macs <= (int64_t{128} << 20));
    const int64_t tile_ctas = int64_t{g.n} * g.pix_tiles() * g.co_tiles();
    const int64_t split_blocks = int64_t{g.n} * g.pix_tiles() * g.c_out;
    const bool lone_tiles = kNarrowSplitGridShare * tile_ctas < sms &&
                            split_blocks <= int64_t{kNarrowSplitBlocksPerSm} * sms &&
                            macs <= kNarrowSplitMaxMacs;
    return (small && (g.k() < kNarrowSplitK || g.hw_out() <= kNarrowSplitMaxPixels)) ||
           (g.k() >= kNarrowSplitK && lone_tiles);
  }

  template <class Epi>
  Status setup_wgmma() {
    constexpr bool kPromoted = Epi::kPromotedSums;
    return wgmma_plan_.setup<WgmmaStore<Epi, kPromoted>, kPromoted>(
        {g_.n, g_.c_in, g_.c_out, g_.h, g_.w, g_.ph, g_.ho, g_.wo, /*transposed_flipped=*/false});
  }

  ConvGeometry g_;
  flat::FlatTile flat_ = flat::FlatTile::kNone;  // the flat tile runs (flat_tile_of)
  int few_co_ = 0;       // conv2d_few_channels_kernel runs with this kCo (few_channels_group)
  bool narrow_ = false;  // conv2d_narrow_kernel runs
  int* taps_ = nullptr;  // tap_off (K_pad ints), then tap_hw (K_pad int2)
  bool wgmma_ = false;   // conv3x3_wgmma.cuh's kernel runs (takes_wgmma, sm_90a code loaded)
  cw::Conv3x3Wgmma wgmma_plan_;  // its plan (setup_wgmma)
};

}  // namespace kb::custom::conv2d_tf32x3
