// kernels/cores/conv_transpose3d_tf32x3/patch_plan3d.cuh (L1_070's patch GEMM), run on the host:
// the plan's tiles, patch offsets and weight split against what the kernel assumes of them, over
// transposed-conv geometries of stride 1-2, dilation 1-2, kernel 1-3 per axis.
//   - tile_of: every (class, channel group, sample, box) exactly once, and each class's boxes
//     cover every q of every axis exactly once;
//   - the patch: for every class, tap and box pixel, the patch position the kernel reads
//     (pixel_position + tap_off) holds the input q - j of that tap on every axis, and a pixel past
//     the box reads inside the patch plane;
//   - weight_source: every weight of w appears exactly once as a big and once as a small part
//     (each kernel tap lands in one class), everything else of the buffer is a zero.
#include <gtest/gtest.h>

#include <cstdint>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "kernels/cores/conv_transpose3d_tf32x3/patch_plan3d.cuh"

namespace kb::custom::ct3d {
namespace {

struct Layer {
  int64_t batch, c_in, c_out;
  int64_t in[3], kernel[3], stride[3], padding[3], dilation[3];
};

gather::ConvTransposeGeometry geometry(const Layer& l) {
  gather::ConvTransposeGeometry g;
  g.rank = 3, g.batch = l.batch, g.in_channels = l.c_in, g.out_channels = l.c_out;
  for (int a = 0; a < 3; ++a) {
    g.in[a] = l.in[a], g.kernel[a] = l.kernel[a], g.stride[a] = l.stride[a];
    g.padding[a] = l.padding[a], g.dilation[a] = l.dilation[a];
    g.out[a] =
        (l.in[a] - 1) * l.stride[a] - 2 * l.padding[a] + l.dilation[a] * (l.kernel[a] - 1) + 1;
  }
  return g;
}

std::string name(const Layer& l) {
  std::string s =
      "N" + std::to_string(l.batch) + " " + std::to_string(l.c_in) + "->" + std::to_string(l.c_out);
  for (int a = 0; a < 3; ++a)
    s += " [in " + std::to_string(l.in[a]) + " k" + std::to_string(l.kernel[a]) + " s" +
         std::to_string(l.stride[a]) + " p" + std::to_string(l.padding[a]) + " d" +
         std::to_string(l.dilation[a]) + "]";
  return s;
}

// L1_070's and L1_073's layers at small sizes, and axes that differ in stride, dilation, padding
// and kernel (a 1-D or 2-D layer is one with unit leading axes).
std::vector<Layer> layers() {
  return {
      {2, 3, 5, {4, 5, 6}, {3, 3, 3}, {1, 1, 1}, {0, 0, 0}, {1, 1, 1}},    // L1_070's form
      {1, 32, 32, {3, 4, 5}, {3, 3, 3}, {2, 2, 2}, {1, 1, 1}, {1, 1, 1}},  // L1_073's form
      {2, 9, 17, {5, 3, 7}, {3, 2, 3}, {2, 1, 2}, {1, 0, 2}, {1, 1, 2}},
      {1, 4, 3, {6, 6, 9}, {2, 3, 1}, {2, 2, 1}, {0, 2, 0}, {2, 1, 1}},
      {3, 8, 40, {1, 1, 13}, {1, 1, 3}, {1, 1, 2}, {0, 0, 1}, {1, 1, 1}},
  };
}

TEST(Ct3dPatchPlan, EveryTileOnceAndEachClassCoversEveryQ) {
  for (const Layer& l : layers()) {
    for (int n_tiles : {3, 4}) {
      Result<Plan> r = plan_patch_gemm(geometry(l), n_tiles);
      ASSERT_TRUE(r.is_ok()) << name(l) << ": " << r.status().message();
      const Plan& p = r.value();
      std::set<std::tuple<int, int, int, int, int, int>> seen;
      // covered[(cls, ng, n)][q per axis] counts, flattened
      std::vector<int> covered(static_cast<size_t>(p.classes) * p.n_groups * p.batch *
                                   p.ax[0].q_count * p.ax[1].q_count * p.ax[2].q_count,
                               0);
      for (int t = 0; t < p.tiles_total; ++t) {
        const Tile tile = tile_of(p, t);
        ASSERT_TRUE(
            seen.insert({tile.cls, tile.ng, tile.n, tile.q0[0], tile.q0[1], tile.q0[2]}).second)
            << name(l) << " tile " << t << " repeats";
        ASSERT_LT(tile.cls, p.classes);
        ASSERT_LT(tile.ng, p.n_groups);
        ASSERT_LT(tile.n, p.batch);
        for (int m = 0; m < p.box_count; ++m) {
          const uint32_t c = pixel_coord(p, m);
          int64_t at = (int64_t{tile.cls} * p.n_groups + tile.ng) * p.batch + tile.n;
          bool inside = true;
          for (int a = 0; a < kAxes; ++a) {
            const int q = tile.q0[a] + coord_of(c, a) - p.ax[a].q_lo;
            inside = inside && q < p.ax[a].q_count;
            at = at * p.ax[a].q_count + q;
          }
          if (inside) ++covered[static_cast<size_t>(at)];
        }
      }
      for (size_t i = 0; i < covered.size(); ++i)
        ASSERT_EQ(covered[i], 1) << name(l) << " kNT " << n_tiles << " (class, group, n, q) #" << i;
    }
  }
}

TEST(Ct3dPatchPlan, EveryTapReadsItsInputFromThePatch) {
  for (const Layer& l : layers()) {
    Result<Plan> r = plan_patch_gemm(geometry(l), 4);
    ASSERT_TRUE(r.is_ok()) << name(l) << ": " << r.status().message();
    const Plan& p = r.value();
    ASSERT_LE(p.patch_count, p.plane_quads) << name(l);
    for (int cls = 0; cls < p.classes; ++cls)
      for (int ti = 0; ti < p.class_taps(cls); ++ti) {
        int i[kAxes];
        p.tap_of(cls, ti, i);
        for (int m = 0; m < kTileRows; ++m) {
          const int pos = pixel_position(p, m) + p.tap_off[cls][ti];
          if (m >= p.box_count) {  // computed, not stored: any position inside the plane
            ASSERT_LT(pos, p.plane_quads) << name(l) << " class " << cls << " tap " << ti;
            continue;
          }
          ASSERT_LT(pos, p.patch_count) << name(l);
          const uint32_t box = pixel_coord(p, m), patch = patch_coord(p, pos);
          for (int a = 0; a < kAxes; ++a) {
            // patch coordinate = box coordinate + J - 1 - j: the input q - j, the patch starting
            // at q0 - (J - 1)
            const int j = p.ax[a].j[p.phase(cls, a)][i[a]];
            ASSERT_EQ(coord_of(patch, a), coord_of(box, a) + p.ax[a].span - 1 - j)
                << name(l) << " class " << cls << " tap " << ti << " pixel " << m << " axis " << a;
          }
        }
      }
  }
}

TEST(Ct3dPatchPlan, EveryWeightSplitOnceIntoItsBigAndSmallParts) {
  for (const Layer& l : layers()) {
    Result<Plan> r = plan_patch_gemm(geometry(l), 3);
    ASSERT_TRUE(r.is_ok()) << name(l) << ": " << r.status().message();
    const Plan& p = r.value();
    const int64_t weights = l.c_in * l.c_out * l.kernel[0] * l.kernel[1] * l.kernel[2];
    std::vector<int> parts[2] = {std::vector<int>(weights, 0), std::vector<int>(weights, 0)};
    int64_t zeros = 0;
    for (int64_t f = 0; f < p.w_floats; ++f) {
      const WeightSource s = weight_source(p, f);
      ASSERT_TRUE(s.part == 0 || s.part == 1);
      if (s.index < 0) {
        ++zeros;
        continue;
      }
      ASSERT_LT(s.index, weights) << name(l) << " float " << f;
      ++parts[s.part][static_cast<size_t>(s.index)];
    }
    for (int part = 0; part < 2; ++part)
      for (int64_t e = 0; e < weights; ++e)
        ASSERT_EQ(parts[part][static_cast<size_t>(e)], 1)
            << name(l) << " weight " << e << (part == 0 ? " big" : " small");
    EXPECT_EQ(zeros, p.w_floats - 2 * weights) << name(l);
  }
}

}  // namespace
}  // namespace kb::custom::ct3d
