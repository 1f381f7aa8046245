// kernels/cores/conv2d_tf32x3/flat_fma.cuh's flat tile, run on the host: the kernel's copies
// (a_copy, b_copy, flat_origin, gather_source over build_tap_table's table), its stage layout
// (a_index, b_index), its threads' outputs (out_tx, out_ty) and its epilogue's walk over images,
// emulated stage by stage for every CTA of random layers (strides, padding, dilation, pixel tiles
// that straddle images, channel counts no tile divides) at every tile shape, against a direct
// convolution in double.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "kernels/cores/conv2d_tf32x3/conv2d_core.cuh"
#include "tests/host_cuda/conv2d_geometry.h"

namespace kb::custom::conv2d_tf32x3::flat {
namespace {

// y (N, C_out, Ho*Wo) by the flat tile's data flow, in float (the kernel's FMA chains).
template <int kCo, int kPix>
std::vector<float> emulate(const ConvGeometry& g, const std::vector<float>& x,
                           const std::vector<float>& w, std::vector<int>& coverage) {
  using T = Tile<kCo, kPix>;
  const FlatTile shape = kCo == 64 ? FlatTile::k64x32 : FlatTile::k32x64;
  static_assert((kCo == 64 && kPix == 32) || (kCo == 32 && kPix == 64), "launch_flat's shapes");
  const std::vector<int> table = build_tap_table(g);
  ConvArgs p = conv_args(g, table.data(), shape);
  const bool padded = g.padded();
  const int2* taps_hw = reinterpret_cast<const int2*>(table.data() + p.k_pad);
  std::vector<float> y(static_cast<size_t>(g.n) * g.c_out * g.hw_out(), NAN);
  coverage.assign(y.size(), 0);
  const int k_tiles = (p.k + kK - 1) / kK;
  for (int cta = 0; cta < p.pix_tiles * p.co_tiles; ++cta) {
    const int co0 = cta % p.co_tiles * kCo, q0 = cta / p.co_tiles * kPix;
    std::vector<float> acc(size_t{T::kThreads} * kPer * kPer, 0.0f);
    for (int kt = 0; kt < k_tiles; ++kt) {
      std::vector<float> stage(T::kStageFloats, NAN);  // every slot read must be copied
      const int k0 = kt * kK;
      for (int t = 0; t < T::kThreads; ++t) {
        for (int i = 0; i < T::kCopiesA; ++i) {
          const Slot s = a_copy<kCo, kPix>(t, i);
          const bool ok = k0 + s.k < p.k && co0 + s.col < p.c_out;
          stage[a_index<kCo, kPix>(s.k, s.col)] =
              ok ? w[static_cast<size_t>(co0 + s.col) * p.k + k0 + s.k] : 0.0f;
        }
        const PixelOrigin o = flat_origin(p, q0 + b_copy<kCo, kPix>(t, 0).col);
        for (int i = 0; i < T::kCopiesB; ++i) {
          const Slot s = b_copy<kCo, kPix>(t, i);
          const int k = k0 + s.k;
          EXPECT_LT(k, p.k_pad);
          const int2 hw = padded ? taps_hw[k] : make_int2(0, 0);
          const GatherSource src =
              padded ? gather_source<true>(o, k, p.k, table[k], hw.x, hw.y, p.h, p.w_in)
                     : gather_source<false>(o, k, p.k, table[k], hw.x, hw.y, p.h, p.w_in);
          float v = 0.0f;
          if (src.ok) {
            const int64_t at = o.x_off + src.rel;
            EXPECT_GE(at, 0);
            EXPECT_LT(at, static_cast<int64_t>(x.size()));
            v = x[static_cast<size_t>(at)];
          }
          stage[b_index<kCo, kPix>(s.k, s.col)] = v;
        }
      }
      for (int t = 0; t < T::kThreads; ++t)
        for (int kk = 0; kk < kK; ++kk)
          for (int i = 0; i < kPer; ++i)
            for (int j = 0; j < kPer; ++j) {
              float& c = acc[(size_t{static_cast<unsigned>(t)} * kPer + i) * kPer + j];
              c = std::fma(stage[a_index<kCo, kPix>(kk, kPer * out_ty<kCo, kPix>(t) + i)],
                           stage[b_index<kCo, kPix>(kk, kPer * out_tx<kCo, kPix>(t) + j)], c);
            }
    }
    for (int t = 0; t < T::kThreads; ++t) {  // the kernel's epilogue walk
      const int q_first = q0 + kPer * out_tx<kCo, kPix>(t);
      int img = q_first / p.hw_out, pixel = q_first - img * p.hw_out;
      for (int j = 0; j < kPer && q_first + j < p.n * p.hw_out; ++j) {
        for (int i = 0; i < kPer; ++i) {
          const int co = co0 + kPer * out_ty<kCo, kPix>(t) + i;
          if (co >= p.c_out) continue;
          const size_t at = (static_cast<size_t>(img) * p.c_out + co) * p.hw_out + pixel;
          y[at] = acc[(size_t{static_cast<unsigned>(t)} * kPer + i) * kPer + j];
          ++coverage[at];
        }
        if (++pixel == p.hw_out) pixel = 0, ++img;
      }
    }
  }
  return y;
}

double direct(const ConvGeometry& g, const std::vector<float>& x, const std::vector<float>& w,
              int n, int co, int oh, int ow) {
  double s = 0.0;
  for (int ci = 0; ci < g.c_in; ++ci)
    for (int a = 0; a < g.kh; ++a)
      for (int b = 0; b < g.kw; ++b) {
        const int ih = oh * g.sh - g.ph + a * g.dh, iw = ow * g.sw - g.pw + b * g.dw;
        if (ih < 0 || ih >= g.h || iw < 0 || iw >= g.w) continue;
        s += double{w[((static_cast<size_t>(co) * g.c_in + ci) * g.kh + a) * g.kw + b]} *
             x[((static_cast<size_t>(n) * g.c_in + ci) * g.h + ih) * g.w + iw];
      }
  return s;
}

template <int kCo, int kPix>
void check_layers(uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (int trial = 0; trial < 24; ++trial) {
    ConvGeometry g;
    g.n = 1 + rng() % 7, g.c_in = 1 + rng() % 9, g.c_out = 1 + rng() % 70;
    g.kh = 1 + rng() % 3, g.kw = 1 + rng() % 3, g.sh = 1 + rng() % 2, g.sw = 1 + rng() % 2;
    g.dh = 1 + rng() % 2, g.dw = 1 + rng() % 2, g.ph = trial % 2 ? rng() % 2 : 0;
    g.pw = trial % 2 ? rng() % 3 : 0;
    g.h = g.dh * (g.kh - 1) + 1 + rng() % 9, g.w = g.dw * (g.kw - 1) + 1 + rng() % 9;
    g.ho = (g.h + 2 * g.ph - g.dh * (g.kh - 1) - 1) / g.sh + 1;
    g.wo = (g.w + 2 * g.pw - g.dw * (g.kw - 1) - 1) / g.sw + 1;
    SCOPED_TRACE(testing::Message()
                 << kCo << " x " << kPix << ": N " << g.n << ", " << g.c_in << " -> " << g.c_out
                 << ", " << g.h << " x " << g.w << ", k " << g.kh << " x " << g.kw << ", s " << g.sh
                 << " x " << g.sw << ", p " << g.ph << " x " << g.pw << ", d " << g.dh << " x "
                 << g.dw);
    std::vector<float> x(static_cast<size_t>(g.n) * g.c_in * g.h * g.w);
    std::vector<float> w(static_cast<size_t>(g.c_out) * g.k());
    for (float& v : x) v = u(rng);
    for (float& v : w) v = u(rng);
    std::vector<int> coverage;
    const std::vector<float> y = emulate<kCo, kPix>(g, x, w, coverage);
    for (int n = 0; n < g.n; ++n)
      for (int co = 0; co < g.c_out; ++co)
        for (int pix = 0; pix < g.hw_out(); ++pix) {
          const size_t at = (static_cast<size_t>(n) * g.c_out + co) * g.hw_out() + pix;
          ASSERT_EQ(coverage[at], 1) << "output " << n << ", " << co << ", " << pix;
          ASSERT_NEAR(y[at], direct(g, x, w, n, co, pix / g.wo, pix % g.wo), 1e-5 * g.k());
        }
  }
}

TEST(Conv2dFlatTile, EveryOutputOnceAsTheDirectConv64x32) {
  check_layers<64, 32>(2);
}
TEST(Conv2dFlatTile, EveryOutputOnceAsTheDirectConv32x64) {
  check_layers<32, 64>(3);
}

// Each stage slot is written by exactly one copy of one thread, and every thread's outputs are
// distinct: the copy grids tile the stage.
template <int kCo, int kPix>
void check_grid() {
  using T = Tile<kCo, kPix>;
  std::vector<int> a(kK * kCo, 0), b(kK * kPix, 0), out(kCo * kPix, 0);
  for (int t = 0; t < T::kThreads; ++t) {
    for (int i = 0; i < T::kCopiesA; ++i) {
      const Slot s = a_copy<kCo, kPix>(t, i);
      ++a[s.k * kCo + s.col];
    }
    for (int i = 0; i < T::kCopiesB; ++i) {
      const Slot s = b_copy<kCo, kPix>(t, i);
      ++b[s.k * kPix + s.col];
    }
    for (int i = 0; i < kPer; ++i)
      for (int j = 0; j < kPer; ++j)
        ++out[(kPer * out_ty<kCo, kPix>(t) + i) * kPix + kPer * out_tx<kCo, kPix>(t) + j];
  }
  for (int v : a) EXPECT_EQ(v, 1);
  for (int v : b) EXPECT_EQ(v, 1);
  for (int v : out) EXPECT_EQ(v, 1);
  EXPECT_LE(T::kStageBytes + kMaxSmemTableBytes, 48 * 1024) << "no opt-in shared memory";
}

TEST(Conv2dFlatTile, CopyGridsTileTheStages) {
  check_grid<64, 32>();
  check_grid<32, 64>();
}

// The rule (flat_tile_of) at an H100's 132 SMs: the layers measured in session 50 and the presets
// that exercise the tile in the GPU tests.
TEST(Conv2dFlatTile, TheRuleTakesSmallPlanesOnFullGrids) {
  constexpr int kSms = 132;
  EXPECT_EQ(flat_tile_of(conv3x3(53, 62, 63, 77, 3), kSms), FlatTile::k64x32);  // L2_017's miss
  EXPECT_EQ(flat_tile_of(conv3x3(6, 30, 46, 83, 5), kSms), FlatTile::k64x32);
  EXPECT_EQ(flat_tile_of(conv3x3(70, 54, 12, 125, 3), kSms), FlatTile::k32x64);
  EXPECT_EQ(flat_tile_of(conv3x3(40, 13, 37, 11, 14), kSms), FlatTile::k64x32);  // presets `flat`
  EXPECT_EQ(flat_tile_of(conv3x3(30, 9, 19, 14, 9), kSms), FlatTile::k32x64);
  EXPECT_EQ(flat_tile_of(conv3x3(30, 20, 63, 77, 3), kSms), FlatTile::k64x32);  // flat_thin
  // Up to 128 channels (two channel tiles), the sweeps' misses of seeds 5 and 2026.
  EXPECT_EQ(flat_tile_of(conv3x3(53, 62, 100, 77, 3), kSms), FlatTile::k64x32);
  EXPECT_EQ(flat_tile_of(conv3x3(82, 61, 119, 5, 5), kSms), FlatTile::k64x32);
  EXPECT_EQ(flat_tile_of(conv3x3(4, 49, 109, 25, 13), kSms), FlatTile::k64x32);
  EXPECT_EQ(flat_tile_of(conv3x3(84, 53, 97, 9, 9), kSms), FlatTile::k64x32);
  EXPECT_EQ(flat_tile_of(conv3x3(98, 51, 6, 15, 9), kSms), FlatTile::k32x64);  // not few's 8
  EXPECT_EQ(flat_tile_of(conv3x3(90, 30, 8, 12, 12), kSms), FlatTile::k32x64);
  // The few-channel kernel keeps 2 and 4 channels a thread; below its 8,192 pixels the tile.
  EXPECT_EQ(flat_tile_of(conv3x3(12, 47, 2, 87, 5), kSms), FlatTile::k32x64);
  EXPECT_EQ(flat_tile_of(conv3x3(200, 14, 2, 12, 12), kSms), FlatTile::kNone);
  EXPECT_EQ(flat_tile_of(conv3x3(100, 20, 4, 15, 15), kSms), FlatTile::kNone);
  // Past 448 M multiply-adds the tensor tile at 33-128 channels on grids of one CTA an SM or more
  // (L2_031 N 17, C_in 64, C_out 128, 22 x 22: 501 M, 68 CTAs at full channel tiles; L2_001 N
  // 128, C_in 64, C_out 64, 18 x 18; L2_017 N 20, C_in 100, C_out 60, 20 x 25: 447 M is the flat
  // tile's); past 128 channels.
  EXPECT_EQ(flat_tile_of(conv3x3(17, 64, 128, 22, 22), kSms), FlatTile::kNone);
  EXPECT_EQ(flat_tile_of(conv3x3(128, 64, 64, 18, 18), kSms), FlatTile::kNone);
  EXPECT_EQ(flat_tile_of(conv3x3(20, 100, 60, 20, 25), kSms), FlatTile::k64x32);
  EXPECT_EQ(flat_tile_of(conv3x3(64, 16, 129, 9, 9), kSms), FlatTile::kNone);
  // Grids under a quarter of the SMs (long K walked by few CTAs): the narrow kernel's.
  EXPECT_EQ(flat_tile_of(conv3x3(1, 400, 4, 7, 7), kSms), FlatTile::kNone);    // deep_taps
  EXPECT_EQ(flat_tile_of(conv3x3(2, 32, 48, 17, 15), kSms), FlatTile::kNone);  // small: 13 CTAs
  EXPECT_EQ(flat_tile_of(conv3x3(3, 31, 4, 35, 15), kSms), FlatTile::kNone);   // 21 CTAs
}

// Past those bounds (session 51's layers; kTileOverFlatRate's model): 17-32 channels, where the
// tensor tile's 128-channel rows are a quarter full, and grids of a fraction of the SMs; not the
// few-channel kernel's 8 a thread, 33-128 channels on full grids, the wgmma kernel's full grids,
// or pixel counts past int.
TEST(Conv2dFlatTile, PastSmallPlanesTheRuleWeighsTheTensorTilesFill) {
  constexpr int kSms = 132;
  EXPECT_EQ(flat_tile_of(conv3x3(88, 49, 18, 83, 49), kSms), FlatTile::k32x64);  // seed 11's miss
  EXPECT_EQ(flat_tile_of(conv3x3(1, 64, 64, 60, 60), kSms), FlatTile::k64x32);   // 27 tile CTAs
  EXPECT_EQ(flat_tile_of(conv3x3(2, 32, 40, 40, 60), kSms), FlatTile::k64x32);
  EXPECT_EQ(flat_tile_of(conv3x3(12, 24, 30, 50, 50), kSms), FlatTile::k32x64);
  EXPECT_EQ(flat_tile_of(conv3x3(64, 43, 59, 93, 67), kSms), FlatTile::kNone);  // half full
  EXPECT_EQ(flat_tile_of(conv3x3(126, 63, 60, 101, 13), kSms), FlatTile::kNone);
  EXPECT_EQ(flat_tile_of(conv3x3(16, 60, 46, 127, 77), kSms), FlatTile::kNone);
  EXPECT_EQ(flat_tile_of(conv3x3(32, 64, 100, 40, 40), kSms), FlatTile::kNone);  // equal fill
  EXPECT_EQ(flat_tile_of(conv3x3(16, 51, 13, 31, 93), kSms), FlatTile::kNone);   // few's 8
  EXPECT_EQ(flat_tile_of(conv3x3(8, 30, 16, 90, 70), kSms), FlatTile::kNone);
  EXPECT_EQ(flat_tile_of(conv3x3(7, 40, 12, 125, 13), kSms), FlatTile::kNone);   // few_stats_wide
  EXPECT_EQ(flat_tile_of(conv3x3(4, 30, 20, 100, 100), kSms), FlatTile::kNone);  // wgmma's (below)
  EXPECT_EQ(flat_tile_of(conv3x3(4, 30, 20, 100, 70), kSms), FlatTile::k32x64);
  EXPECT_EQ(flat_tile_of(conv3x3(600000, 3, 20, 66, 66), kSms), FlatTile::kNone);   // > int
  EXPECT_EQ(flat_tile_of(conv3x3(500000, 3, 20, 66, 66), kSms), FlatTile::k32x64);  // in int
  EXPECT_EQ(flat_tile_of(conv3x3(6, 21, 19, 47, 61), kSms), FlatTile::k32x64);  // flat_wide_plane
  EXPECT_EQ(flat_tile_of(conv3x3(1, 33, 50, 40, 45), kSms), FlatTile::k64x32);  // flat_small_grid
}

// The wgmma kernel's layers (kWgmmaOverFlatRate's model): the flat tile where the wgmma grid is a
// few CTAs (batch 1 or 2 on wide images) or its tiles mostly padding (1-row planes); the wgmma
// kernel on full grids.
TEST(Conv2dFlatTile, OnWideImagesTheRuleWeighsTheWgmmaGrid) {
  constexpr int kSms = 132;
  EXPECT_EQ(flat_tile_of(conv3x3(1, 51, 109, 15, 97), kSms), FlatTile::k64x32);  // seed 54's miss
  EXPECT_EQ(flat_tile_of(conv3x3(2, 13, 70, 9, 131), kSms), FlatTile::k64x32);   // 16 CTAs
  EXPECT_EQ(flat_tile_of(conv3x3(112, 124, 115, 3, 121), kSms), FlatTile::k64x32);  // 1 row
  EXPECT_EQ(flat_tile_of(conv3x3(16, 13, 70, 9, 131), kSms), FlatTile::kNone);      // `robust`
  EXPECT_EQ(flat_tile_of(conv3x3(1, 64, 128, 128, 128), kSms), FlatTile::kNone);    // 64 full tiles
  EXPECT_EQ(flat_tile_of(conv3x3(4, 30, 20, 100, 100), kSms), FlatTile::kNone);
  EXPECT_EQ(flat_tile_of(conv3x3(128, 64, 128, 128, 128), kSms), FlatTile::kNone);  // full preset
  // L2_001's promoted 2-row tiles: half full on 1-row planes (the wgmma kernel stays there), a
  // handful of CTAs at batch 1 as before.
  constexpr int kPromotedRows = 2;
  EXPECT_EQ(flat_tile_of(conv3x3(112, 124, 115, 3, 121), kSms, kPromotedRows), FlatTile::kNone);
  EXPECT_EQ(flat_tile_of(conv3x3(1, 51, 109, 15, 97), kSms, kPromotedRows), FlatTile::k64x32);
  EXPECT_EQ(flat_tile_of(conv3x3(4, 51, 109, 15, 97), kSms, kPromotedRows), FlatTile::kNone);
  EXPECT_EQ(flat_tile_of(conv3x3(2, 13, 70, 9, 131), kSms, kPromotedRows), FlatTile::k64x32);
  EXPECT_EQ(flat_tile_of(conv3x3(16, 13, 70, 9, 131), kSms, kPromotedRows), FlatTile::kNone);
}

}  // namespace
}  // namespace kb::custom::conv2d_tf32x3::flat
