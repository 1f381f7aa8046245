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
#include "tests/host_cuda/transposed_layer.h"

namespace kb::custom::ct3d {
namespace {

using namespace host_test;  // transposed_layer.h: Layer, geometry, name, golden, ...

// A layer of three axes (no groups, no output padding).
Layer layer(int64_t batch, int64_t c_in, int64_t c_out, const int64_t (&in)[3],
            const int64_t (&kernel)[3], const int64_t (&stride)[3], const int64_t (&padding)[3],
            const int64_t (&dilation)[3]) {
  Layer l;
  l.batch = batch, l.c_in = c_in, l.c_out = c_out;
  for (int a = 0; a < 3; ++a) {
    l.in[a] = in[a], l.kernel[a] = kernel[a], l.stride[a] = stride[a];
    l.padding[a] = padding[a], l.dilation[a] = dilation[a];
  }
  return l;
}

// L1_070's and L1_073's layers at small sizes, and axes that differ in stride, dilation, padding
// and kernel (a 1-D or 2-D layer is one with unit leading axes).
std::vector<Layer> layers() {
  return {
      layer(2, 3, 5, {4, 5, 6}, {3, 3, 3}, {1, 1, 1}, {0, 0, 0}, {1, 1, 1}),    // L1_070's form
      layer(1, 32, 32, {3, 4, 5}, {3, 3, 3}, {2, 2, 2}, {1, 1, 1}, {1, 1, 1}),  // L1_073's form
      layer(2, 9, 17, {5, 3, 7}, {3, 2, 3}, {2, 1, 2}, {1, 0, 2}, {1, 1, 2}),
      layer(1, 4, 3, {6, 6, 9}, {2, 3, 1}, {2, 2, 1}, {0, 2, 0}, {2, 1, 1}),
      layer(3, 8, 40, {1, 1, 13}, {1, 1, 3}, {1, 1, 2}, {0, 0, 1}, {1, 1, 1}),
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
