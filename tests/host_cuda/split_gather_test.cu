// kernels/cores/conv_transpose_gather/split_gather.cuh, the split gather (gather_split_kernel:
// one output an element, its lanes splitting the output's flattened (tap, channel) pairs), run on
// the host: each output decoded by decode_block, every lane's share summed by gather_channels'
// flat walk and the lanes' sums added in the kernel's shuffle order, against the golden model's
// transposed convolution (kernels/cpu/ops.h). The data are small integers, so every fp32 sum is
// exact whatever its order and must equal the golden double sum. Then the lanes' shares (all-ones
// data: a lane's sum is its pair count), the landings behind the rule, and the rule at the layers
// it was cut for.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "kernels/cores/conv_transpose_gather/split_gather.cuh"
#include "tests/host_cuda/transposed_layer.h"

namespace kb::custom::gather {
namespace {

using namespace host_test;  // transposed_layer.h: Layer, geometry, name, golden, ...

// Each lane's sum of one element of gather_split_kernel with `lanes` lanes (gather_channels'
// flat walk from channel r, step lanes).
std::vector<float> lane_sums(const ConvTransposeGeometry& g, const GatherDividers& dv,
                             const ChannelBlock& b, const std::vector<float>& x,
                             const std::vector<float>& w, int lanes) {
  std::vector<float> v(static_cast<size_t>(lanes));
  for (int r = 0; r < lanes; ++r) {
    float sum[1][1];
    gather_channels<1, 1, true>(x.data(), w.data(), g, dv, b.n, b.group, b.co_local, b.co_count,
                                b.o, r, lanes, sum);
    v[static_cast<size_t>(r)] = sum[0][0];
  }
  return v;
}

// Every output as gather_split_kernel computes it: the lanes' sums added as the kernel's
// __shfl_xor_sync steps add them (offsets lanes / 2, ..., 1, every lane at once), lane 0's
// stored; an output written twice or never is a NaN.
std::vector<double> split_gathered(const ConvTransposeGeometry& g, const std::vector<float>& x,
                                   const std::vector<float>& w, int lanes) {
  const GatherDividers dv(g);
  const GenericLayout layout(g, 1, 1);
  std::vector<double> y(static_cast<size_t>(g.output_numel()), 0.0);
  std::vector<int> writes(y.size(), 0);
  for (int64_t e = 0; e < layout.elements; ++e) {
    const ChannelBlock b = decode_block<1, 1>(e, g, layout);
    std::vector<float> v = lane_sums(g, dv, b, x, w, lanes);
    for (int off = lanes / 2; off > 0; off /= 2) {
      const std::vector<float> before = v;
      for (int r = 0; r < lanes; ++r)
        v[static_cast<size_t>(r)] += before[static_cast<size_t>(r ^ off)];
    }
    const auto at = static_cast<size_t>(b.output_index(g, 0));
    y[at] = v[0];
    ++writes[at];
  }
  for (size_t i = 0; i < y.size(); ++i)
    if (writes[i] != 1) y[i] = std::numeric_limits<double>::quiet_NaN();
  return y;
}

// Layers of 1 to 40 input channels per group: fewer than the lanes, more, and not a multiple.
constexpr int64_t kMaxInPerGroup = 40, kMaxOutPerGroup = 3;

TEST(SplitGather, EveryOutputIsTheGoldenTransposedConvolution) {
  std::mt19937 rng(41);
  int layers = 0;
  for (int rank = 1; rank <= 3; ++rank) {
    for (int i = 0; i < 60; ++i, ++layers) {
      const Layer l = random_layer(rng, rank, kMaxInPerGroup, kMaxOutPerGroup);
      const ConvTransposeGeometry g = geometry(l);
      const auto [x, w] = small_integer_tensors(l, rng);
      const std::vector<double> want = golden(l, x, w);
      ASSERT_EQ(static_cast<int64_t>(want.size()), g.output_numel()) << name(l);
      for (int lanes = kSplitMinLanes; lanes <= kWarp; lanes *= 2) {
        const std::vector<double> got = split_gathered(g, x, w, lanes);
        for (size_t e = 0; e < want.size(); ++e)
          ASSERT_EQ(got[e], want[e]) << name(l) << " lanes " << lanes << " output " << e;
      }
    }
  }
  EXPECT_EQ(layers, 180);
}

// The flat walk deals an output's pairs out evenly: on all-ones data a lane's sum is its pair
// count, and the lanes' counts add up to the output's pairs (the golden sum) and differ by at
// most one, however the channels divide among the lanes.
TEST(SplitGather, LanesShareEachOutputsPairsEvenly) {
  std::mt19937 rng(73);
  for (int i = 0; i < 60; ++i) {
    const Layer l = random_layer(rng, 1 + i % 3, kMaxInPerGroup, kMaxOutPerGroup);
    const ConvTransposeGeometry g = geometry(l);
    const auto [x, w] = layer_tensors(l, [] { return 1.f; });
    const std::vector<double> pairs = golden(l, x, w);
    const GatherDividers dv(g);
    const GenericLayout layout(g, 1, 1);
    for (int lanes = kSplitMinLanes; lanes <= kWarp; lanes *= 2) {
      for (int64_t e = 0; e < layout.elements; ++e) {
        const ChannelBlock b = decode_block<1, 1>(e, g, layout);
        const std::vector<float> v = lane_sums(g, dv, b, x, w, lanes);
        const auto [least, most] = std::minmax_element(v.begin(), v.end());
        double total = 0;
        for (float c : v) total += c;
        ASSERT_EQ(total, pairs[static_cast<size_t>(b.output_index(g, 0))])
            << name(l) << " lanes " << lanes << " element " << e;
        ASSERT_LE(*most - *least, 1.f) << name(l) << " lanes " << lanes << " element " << e;
      }
    }
  }
}

// axis_landings counts what axis_taps lists: summed over an axis's outputs, the taps that land,
// at every axis geometry of for_each_axis_geometry's range, output paddings included.
TEST(SplitGather, AxisLandingsAreTheTapsLandingOnEveryOutput) {
  int axes = 0;
  host_test::for_each_axis_geometry(true, [&](const ConvTransposeGeometry& g, int op) {
    const GatherDividers dv(g);
    int64_t want = 0;
    for (int o = 0; o < g.out[2]; ++o) want += axis_taps(o, 2, g, dv).count;
    ASSERT_EQ(axis_landings(g, 2), want) << host_test::axis_name(g, op);
    ++axes;
  });
  EXPECT_GT(axes, 10000);
}

// A 3-D layer of k 3 on every axis (N, C_in, C_out, D, H, W as the problems' dims).
ConvTransposeGeometry layer3d(int64_t n, int64_t c_in, int64_t c_out, int64_t d, int64_t h,
                              int64_t w, int64_t stride, int64_t padding) {
  Layer l;
  l.batch = n, l.c_in = c_in, l.c_out = c_out;
  const int64_t in[kSpatial] = {d, h, w};
  for (int a = 0; a < kSpatial; ++a) {
    l.in[a] = in[a], l.kernel[a] = 3, l.stride[a] = stride, l.padding[a] = padding;
  }
  return geometry(l);
}

// The layers the rule was cut for (the shape sweep's misses): L1_070 N 1, 45 -> 1, 3 x 79 x 11
// (stride 1, 5,265 outputs of ~602 pairs) takes 16 lanes per output (32 would pass kBusyThreads),
// the `split_warp` preset's N 1, 64 -> 1, 3 x 40 x 11 (2,730 outputs) a warp; L1_073 N 4, 29 -> 10,
// 5 x 7 x 5 (stride 2, padding 1: 42,120 outputs of 29 x 13 x 19 x 13 / 1,053 pairs) would take 4
// lanes, under kSplitMinLanes: measured a wash there.
TEST(SplitGather, RuleTakesFewOutputsOfLongSums) {
  const ConvTransposeGeometry l1070 = layer3d(1, 45, 1, 3, 79, 11, 1, 0);
  EXPECT_NEAR(mean_sum_length(l1070), 45.0 * 9 * 237 * 33 / (5 * 81 * 13), 1e-9);
  EXPECT_EQ(split_reduction_lanes(l1070), 16);
  EXPECT_EQ(split_reduction_lanes(layer3d(1, 64, 1, 3, 40, 11, 1, 0)), 32);
  const ConvTransposeGeometry l1073 = layer3d(4, 29, 10, 5, 7, 5, 2, 1);
  EXPECT_NEAR(mean_sum_length(l1073), 29.0 * 13 * 19 * 13 / (9 * 13 * 9), 1e-9);
  EXPECT_EQ(split_reduction_lanes(l1073), 0);  // 4 lanes would do: under kSplitMinLanes
}

// Layers whose generic grid fills the GPU, or whose sums are short, keep the generic elements:
// L1_070 and L1_073 at their full presets, L1_070's `eight_out` (N 1, 20 -> 8, 4 x 6 x 300: the
// generic's 4 x 2 elements x 8 lanes, 115,968 threads), and a layer of 2 input channels (at most
// 54 pairs an output).
TEST(SplitGather, RuleLeavesFullGridsAndShortSums) {
  EXPECT_EQ(split_reduction_lanes(layer3d(8, 48, 24, 96, 96, 96, 1, 0)), 0);
  EXPECT_EQ(split_reduction_lanes(layer3d(4, 32, 32, 32, 64, 128, 2, 1)), 0);
  EXPECT_EQ(split_reduction_lanes(layer3d(1, 20, 8, 4, 6, 300, 1, 0)), 0);
  EXPECT_EQ(split_reduction_lanes(layer3d(1, 2, 1, 3, 9, 11, 1, 0)), 0);
}

}  // namespace
}  // namespace kb::custom::gather
